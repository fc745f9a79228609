/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The per-packet pipeline both entry points share: parse, find the VIP,
 * pick and stick, forward, count. Reads like docs/design.md, "Data path,
 * per packet".
 */
#ifndef CHLB_PIPELINE_H
#define CHLB_PIPELINE_H

#include "chlb_stick.h"
#include "chlb_icmp.h"

/*
 * The view of one exact key: a linear probe over vip_index
 * (include/chlb_maps.h), ended by an empty slot; the key is compared with
 * the one stored beside the view.
 */
static __always_inline struct chlb_service *vip_find(const struct chlb_vip_key *key)
{
	const chlb_u32_alias *k = (const chlb_u32_alias *)key;
	__u32 h = chlb_vip_hash(key), i;

	for (i = 0; i < CHLB_VIP_PROBES; i++) {
		__u32 s = (h + i) & (CHLB_VIP_SLOTS - 1), vs;
		__u64 *ix;
		struct chlb_vip_view *v;
		const chlb_u32_alias *w;

		ix = bpf_map_lookup_elem(&vip_index, &s);
		if (!ix)
			return NULL;
		vs = (__u32)READ_ONCE_U64(ix); /* one load: the writer stores it whole */
		if (!vs)
			return NULL;
		if (vs == CHLB_VIP_TOMB)
			continue;
		vs--;
		v = bpf_map_lookup_elem(&views, &vs);
		if (!v)
			continue;
		w = (const chlb_u32_alias *)&v->key;
		if (!((w[0] ^ k[0]) | (w[1] ^ k[1]) | (w[2] ^ k[2]) | (w[3] ^ k[3]) |
		      (w[4] ^ k[4])))
			return &v->svc;
	}
	return NULL;
}

/*
 * Exact {VIP, port, proto}, then the port-0 wildcard. Fragments without
 * ports (and, to stay consistent, all fragments) match only the wildcard.
 */
static __always_inline struct chlb_service *vip_lookup(const struct chlb_pkt *p)
{
	struct chlb_vip_key key;
	chlb_u32_alias *k = (chlb_u32_alias *)&key;
	struct chlb_service *svc;

	/* whole words only: the hash reads the key a word at a time (see flow_set_ports) */
	if (p->family == CHLB_AF_INET) {
		k[0] = 0;
		k[1] = 0;
		k[2] = bpf_htonl(0xffff); /* ::ffff:a.b.c.d */
		copy_words(&k[3], p->flow.dst, 4);
	} else {
		copy_words(k, p->flow.dst, 16);
	}
	if (!p->frag) {
		k[4] = p->flow.dport | ((__u32)p->flow.proto << 16);
		svc = vip_find(&key);
		if (svc)
			return svc;
	}
	k[4] = (__u32)p->flow.proto << 16; /* port 0 */
	return vip_find(&key);
}

/*
 * Is the packet's source in the service's allow-list? One trie lookup keyed
 * by (service id, source): IPv4 sources are the first word of flow.src,
 * the rest zero, and their prefixes' lengths count 32 bits of address.
 */
static __always_inline bool source_allowed(const struct chlb_service *svc, const struct chlb_pkt *p)
{
	struct chlb_allow_key key;
	chlb_u32_alias *k = (chlb_u32_alias *)key.addr;

	key.prefixlen = CHLB_ALLOW_PLEN(p->family == CHLB_AF_INET ? 32 : 128);
	key.svc_id = svc->id;
	copy_words(k, p->flow.src, 16);
	return bpf_map_lookup_elem(&allow, &key) != NULL;
}

/*
 * The flow's CRC as the service hashes it (the VIP's CRC precomputed for
 * IPv6 5-tuples): what picks the backend and derives the encap source.
 */
static __always_inline __u32 svc_flow_crc(const struct chlb_service *svc, const struct chlb_pkt *p)
{
	if (p->family == CHLB_AF_INET6 && svc->hash_fields == CHLB_HASH_5TUPLE)
		return chlb_flow_crc_v6vip(&p->flow, svc->vip_crc);
	return chlb_flow_crc(&p->flow, svc->hash_fields);
}

static __always_inline int pass(void *ctx, bool tc, __u32 reason)
{
	stat_reason(reason);
	return ctx_verdict(ctx, tc, CHLB_PASS);
}

static __always_inline int drop(void *ctx, bool tc, __u32 reason)
{
	stat_reason(reason);
	return ctx_verdict(ctx, tc, CHLB_DROP);
}

/* Oversized for the tunnel: should the client get an ICMP error instead? */
static __always_inline bool too_big(void *ctx, bool tc, const struct chlb_pkt *p,
				    const struct chlb_service *svc, const struct chlb_backend *be)
{
	if (!svc->mtu || p->icmp_err || ctx_gso_size(ctx, tc))
		return false; /* GSO: the kernel segments to gso_size on egress */
	if (p->len - p->l2len + chlb_encap_room(be) <= svc->mtu)
		return false;
	/* IPv4 without DF may be fragmented by the path: forwarded as is */
	return p->family == CHLB_AF_INET6 || p->df;
}

static __always_inline int chlb_process(void *ctx, bool tc)
{
	struct chlb_pkt p = {};
	struct chlb_service *svc;
	struct chlb_backend *be;
	struct chlb_persist_ref pr;
	struct chlb_nexthop nh;
	__u32 slot = 0, new_flow = 0, crc;
	int r;

	r = chlb_parse(ctx, tc, &p);
	if (r != CHLB_R_MAX)
		return pass(ctx, tc, r);
	svc = vip_lookup(&p);
	if (!svc)
		return pass(ctx, tc, p.frag ? CHLB_R_PASS_FRAGMENT : CHLB_R_PASS_NOT_VIP);
	/* before any table or entry work: a flood from outside the list costs the least */
	if ((svc->flags & CHLB_SVC_F_ALLOW) && !source_allowed(svc, &p)) {
		stat_drop_source(svc->id);
		return drop(ctx, tc, CHLB_R_DROP_SOURCE);
	}
	if (p.bad_flags)
		return drop(ctx, tc, CHLB_R_DROP_TCP_FLAGS); /* no backend should see it */
	if (p.frag) {
		/*
		 * 5-tuple services: later fragments carry no ports, so they
		 * cannot be placed; the kernel reassembles (or drops) them.
		 * Source-hash services place every fragment by the source alone.
		 */
		if (svc->hash_fields != CHLB_HASH_SRC)
			return pass(ctx, tc, CHLB_R_PASS_FRAGMENT);
		flow_set_ports(&p.flow, 0);
		p.syn = 0;
	}

	crc = svc_flow_crc(svc, &p);
	/*
	 * A persistent service decides by the client, its encapsulation still
	 * by the flow. Two inlined copies of stickiness: the other services'
	 * one gets pr NULL, a constant, so persistence costs them this branch
	 * alone (one copy with a runtime check cost established packets
	 * 10-14 ns in make bench: spills around the extra state).
	 */
	if (svc->flags & CHLB_SVC_F_PERSIST)
		be = chlb_stick(svc, &p, persist_ref(svc, &p, &pr) ? pr.crc : crc, &slot, &new_flow,
				&pr);
	else
		be = chlb_stick(svc, &p, crc, &slot, &new_flow, NULL);
	if (!be) {
		/* a held flow (chlb_stick counted it), or no usable backend */
		if (slot != CHLB_CONN_HELD_SLOT)
			stat_reason(CHLB_R_NO_BACKEND);
		return ctx_verdict(ctx, tc, CHLB_DROP);
	}
	r = chlb_nexthop(ctx, tc, be, &nh);
	if (r == CHLB_R_NO_ROUTE) {
		/* counted per service and backend too: `stats` names the backend */
		stat_no_route(&svc_stats, svc->id);
		stat_no_route(&be_stats, slot);
		return drop(ctx, tc, r);
	}
	if (r != CHLB_R_MAX)
		return pass(ctx, tc, r);

	if (svc->fwd == CHLB_FWD_IPIP) {
		if (too_big(ctx, tc, &p, svc, be)) {
			if (chlb_icmp_too_big(ctx, tc, &p, svc->mtu - chlb_encap_room(be)))
				return drop(ctx, tc, CHLB_R_ERROR);
			stat_reason(CHLB_R_TOO_BIG);
			return ctx_verdict(ctx, tc, CHLB_TX);
		}
		if (chlb_encap(ctx, tc, &p, svc, be, chlb_hash_fin(crc)))
			return drop(ctx, tc, CHLB_R_ERROR);
	}
	if (chlb_set_macs(ctx, tc, &nh))
		return drop(ctx, tc, CHLB_R_ERROR);

	stat_count(&svc_stats, svc->id, p.len, new_flow);
	stat_count(&be_stats, slot, p.len, new_flow);
	if (p.icmp_err)
		stat_reason(CHLB_R_ICMP_HANDLED);
	stat_reason(CHLB_R_FORWARDED);
	if (nh.ifindex == ctx_ifindex(ctx, tc))
		return ctx_verdict(ctx, tc, CHLB_TX);
	return bpf_redirect(nh.ifindex, 0);
}

#endif /* CHLB_PIPELINE_H */
