// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XDP_PASS, nothing else. Test topologies attach it in native mode to the veth
 * peer that receives frames chlb sends with XDP_TX / XDP_REDIRECT: a veth
 * drops such frames unless its peer runs an XDP program of its own.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
