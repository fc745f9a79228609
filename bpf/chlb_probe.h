/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Health probes through the data path (`check ... via vip`, docs/design.md,
 * "Probes through the data path"). chlbd's checker connects to VIP:port
 * with SO_MARK = CHLB_PROBE_MARK(slot); the kernel routes the probe by its
 * ordinary route to the VIP, and this TC egress program, on the interface
 * that route leaves by, sends every packet carrying such a mark to backend
 * slot `slot` as the pipeline sends a client's packet to that backend:
 * the same view (forwarding mode, encap source), the same next hop (the
 * cached one, else bpf_fib_lookup) and the same encapsulation, with the
 * outer source derived from the same flow hash. A backend that is up but
 * cannot serve the VIP (no VIP on lo, no decapsulation) then fails its
 * probe. Its replies come back as DSR replies do, VIP -> the LB's own
 * address, and the kernel delivers them to the probe's socket.
 *
 * A locally generated packet may carry CHECKSUM_PARTIAL (the L4 checksum
 * is the pseudo-header sum, to be finished by the device): the MAC rewrite
 * leaves it alone, and bpf_skb_adjust_room() keeps csum_start pointing at
 * the inner L4 header, so whichever device finally sends it (veth: the
 * metadata crosses to the peer) finishes or trusts it - TC, unlike XDP,
 * forwards the skb with its metadata (an XDP frame loses it: tests/lib/topo.sh).
 *
 * Probes are not clients: they are counted in the global reasons
 * (probe_steered, probe_bad_slot, probe_dropped), not in the service's
 * and backend's traffic counters, and never touch the connection table.
 */
#ifndef CHLB_PROBE_H
#define CHLB_PROBE_H

#include "chlb_pipeline.h"

static __always_inline int chlb_probe(struct __sk_buff *skb)
{
	const bool tc = true;
	struct chlb_pkt p = {};
	struct chlb_service *svc;
	struct chlb_backend *be;
	struct chlb_nexthop nh;
	__u32 mark = skb->mark, slot;

	/* everything else the interface sends: one compare */
	if (!CHLB_IS_PROBE_MARK(mark))
		return TC_ACT_OK;
	/*
	 * Consumed here: a device we redirect to may run this program too,
	 * and must not steer (or encapsulate) the packet a second time.
	 */
	skb->mark = 0;
	slot = CHLB_PROBE_MARK_SLOT(mark);
	be = be_live(slot);
	if (!be)
		return drop(skb, tc, CHLB_R_PROBE_BAD_SLOT);
	/* a probe the kernel would route to the VIP itself must not leave */
	if (chlb_parse(skb, tc, &p) != CHLB_R_MAX || p.icmp_err)
		return drop(skb, tc, CHLB_R_PROBE_DROPPED);
	svc = vip_lookup(&p);
	if (!svc)
		return drop(skb, tc, CHLB_R_PROBE_DROPPED);
	if (chlb_nexthop(skb, tc, be, &nh) != CHLB_R_MAX)
		return drop(skb, tc, CHLB_R_PROBE_DROPPED);
	if (svc->fwd == CHLB_FWD_IPIP &&
	    chlb_encap(skb, tc, &p, svc, be, chlb_hash_fin(svc_flow_crc(svc, &p))))
		return drop(skb, tc, CHLB_R_ERROR);
	if (chlb_set_macs(skb, tc, &nh))
		return drop(skb, tc, CHLB_R_ERROR);
	stat_reason(CHLB_R_PROBE_STEERED);
	/* the interface the VIP's route took may be the backend's too */
	if (nh.ifindex == skb->ifindex)
		return TC_ACT_OK;
	return bpf_redirect(nh.ifindex, 0);
}

#endif /* CHLB_PROBE_H */
