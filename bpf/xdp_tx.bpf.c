// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XDP_TX, nothing else: the live-traffic bench's ceiling (tests/bench/live.sh).
 * Attached in native mode where chlb would be, it sends every frame back out
 * of the veth it came in on, as chlb does with `fwd l2dsr` to a backend on
 * the same link - the whole cost of a packet through the bench but chlb's own.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_tx(struct xdp_md *ctx)
{
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
