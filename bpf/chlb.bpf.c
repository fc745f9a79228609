// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb data plane: the XDP and TC ingress entry points. Both run the one
 * pipeline in chlb_pipeline.h through the ctx layer in chlb_ctx.h. Beside
 * them, the TC egress program that steers health probes (chlb_probe.h).
 *
 * Oldest kernel expected: 5.18 - bpf_xdp_load_bytes() (5.18, ICMP quote),
 * bpf_ktime_get_coarse_ns() (5.11, UDP idle), BPF_F_INNER_MAP (5.10,
 * inner maps of different sizes), mmapable arrays (5.5), global functions
 * (5.6), bpf_skb_adjust_room() encap flags with the outer-protocol switch
 * for 4in6 (5.9). Developed and tested on 6.18.
 */
#include "chlb_pipeline.h"
#include "chlb_probe.h"

SEC("xdp")
int chlb_xdp(struct xdp_md *ctx)
{
	return chlb_process(ctx, false);
}

SEC("tc")
int chlb_tc(struct __sk_buff *skb)
{
	return chlb_process(skb, true);
}

/* TC egress: health probes marked CHLB_PROBE_MARK(slot) to that backend (chlb_probe.h). */
SEC("tc")
int chlb_probe_steer(struct __sk_buff *skb)
{
	return chlb_probe(skb);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
