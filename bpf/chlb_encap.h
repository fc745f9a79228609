/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Forwarding: next hop (cached per backend by the control plane, or
 * bpf_fib_lookup), L2 DSR (MAC rewrite) and IPIP encapsulation
 * (4in4, 6in6, 4in6).
 *
 * Outer header, set deliberately:
 *   TTL / hop limit 64: a fresh hop budget for the tunnel, as a host would.
 *   TOS / traffic class copied from the inner packet (DSCP and ECN), so QoS
 *     marking and ECN survive the tunnel.
 *   IPv4 DF set: the balancer never fragments; oversized packets are
 *     answered with ICMP (chlb_icmp.h) when the service has an MTU.
 *   IPv4 ID 0 (RFC 6864: atomic datagrams with DF).
 *   Source: the service's encap_src when set (IPv4-mapped for an IPv4
 *     outer header), else derived per flow from the flow hash - 172.16.x.y
 *     for IPv4, fd63:686c:6200::/96 + 32 hash bits for IPv6 - so the
 *     backend's RSS spreads tunnelled flows over its queues (Katran does
 *     the same). The IPv6 flow label carries 20 hash bits for the same
 *     reason. Backends must accept any tunnel source.
 */
#ifndef CHLB_ENCAP_H
#define CHLB_ENCAP_H

#include "chlb_parse.h"
#include "chlb_csum.h"

#define CHLB_SYS_AF_INET  2
#define CHLB_SYS_AF_INET6 10
#define CHLB_OUTER_TTL	  64

struct chlb_nexthop {
	__u8 dmac[6];
	__u8 smac[6];
	__u32 ifindex;
};

/* bpf_fib_lookup() towards the backend: the path without a cached next hop. */
static __always_inline int chlb_fib_nexthop(void *ctx, bool tc, const struct chlb_backend *be,
					    struct chlb_nexthop *nh)
{
	struct bpf_fib_lookup fib = {};
	int rc;

	fib.ifindex = ctx_ifindex(ctx, tc);
	if (be->family == CHLB_AF_INET6) {
		fib.family = CHLB_SYS_AF_INET6;
		__builtin_memcpy(fib.ipv6_dst, be->addr, 16);
	} else {
		fib.family = CHLB_SYS_AF_INET;
		__builtin_memcpy(&fib.ipv4_dst, be->addr, 4);
	}
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return CHLB_R_PASS_NO_NEIGH;
	/* no route, or an unreachable/blackhole/prohibit one, or forwarding off */
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return CHLB_R_NO_ROUTE;
	__builtin_memcpy(nh->dmac, fib.dmac, 6);
	__builtin_memcpy(nh->smac, fib.smac, 6);
	nh->ifindex = fib.ifindex;
	return CHLB_R_MAX;
}

/*
 * Next hop towards the backend. Returns CHLB_R_MAX when resolved, else
 * CHLB_R_PASS_NO_NEIGH (pass: the kernel resolves the neighbour on the way,
 * and the next packet finds it) or CHLB_R_NO_ROUTE (the caller drops: the
 * kernel would route the packet by its VIP, back towards the router or to
 * the host's own stack, never to the backend).
 */
static __always_inline int chlb_nexthop(void *ctx, bool tc, const struct chlb_backend *be,
					struct chlb_nexthop *nh)
{
	if (be->flags & CHLB_BE_F_NH_VALID) {
		copy_words(nh->dmac, be->dmac, 12); /* dmac, smac: adjacent in both */
		nh->ifindex = be->ifindex;
		return CHLB_R_MAX;
	}
	/* the 64-byte request is built only on this path */
	return chlb_fib_nexthop(ctx, tc, be, nh);
}

static __always_inline int chlb_set_macs(void *ctx, bool tc, const struct chlb_nexthop *nh)
{
	void *data = ctx_data(ctx, tc), *end = ctx_data_end(ctx, tc);
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return -1;
	copy_words(eth, nh, 12); /* h_dest, h_source <- dmac, smac */
	return 0;
}

/* Word i of a 4-aligned address in a map value. */
static __always_inline __u32 addr_word(const __u8 *a, __u32 i)
{
	return *(const chlb_u32_alias *)(a + 4 * i);
}

static __always_inline bool addr_v4mapped(const __u8 *a)
{
	return !(addr_word(a, 0) | addr_word(a, 1)) && addr_word(a, 2) == bpf_htonl(0xffff);
}

static __always_inline bool addr_zero(const __u8 *a)
{
	return !(addr_word(a, 0) | addr_word(a, 1) | addr_word(a, 2) | addr_word(a, 3));
}

/* Bytes the encapsulation adds for this backend. */
static __always_inline __u32 chlb_encap_room(const struct chlb_backend *be)
{
	return be->family == CHLB_AF_INET6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
}

/* IPIP-encapsulate p (already parsed) towards be. h: the flow hash. */
static __always_inline int chlb_encap(void *ctx, bool tc, const struct chlb_pkt *p,
				      const struct chlb_service *svc, const struct chlb_backend *be,
				      __u32 h)
{
	bool o6 = be->family == CHLB_AF_INET6;
	__u32 inner_len = p->len - p->l2len, l2 = p->l2len & 0x1f;
	void *data, *end;

	if (!o6 && p->family == CHLB_AF_INET6)
		return -1; /* 6in4 is not offered; the control plane refuses it */
	if (ctx_push_l3(ctx, tc, p->l2len, chlb_encap_room(be),
			o6 ? BPF_F_ADJ_ROOM_ENCAP_L3_IPV6 : BPF_F_ADJ_ROOM_ENCAP_L3_IPV4))
		return -1;
	data = ctx_data(ctx, tc);
	end = ctx_data_end(ctx, tc);
	if (data + l2 + sizeof(struct ipv6hdr) > end)
		return -1;
	/* the last ethertype of the L2 header now announces the outer header */
	if (data + ((l2 - 2) & 0x1f) + 2 > end)
		return -1;
	*(__be16 *)(data + ((l2 - 2) & 0x1f)) = bpf_htons(o6 ? ETH_P_IPV6 : ETH_P_IP);
	/*
	 * The outer header is built as little-endian words in registers and
	 * stored a word at a time: a header struct on the stack, written
	 * field by field and then read back as words for the checksum and the
	 * copy, stalled store forwarding (~10% of the forwarding path).
	 */
	if (!o6) {
		chlb_u32_alias *w = data + l2;
		__u32 w0 = 0x45 | ((__u32)p->tos << 8) | ((__u32)bpf_htons(inner_len + 20) << 16);
		__u32 w1 = (__u32)bpf_htons(0x4000) << 16; /* ID 0, DF */
		__u32 w2 = CHLB_OUTER_TTL | (IPPROTO_IPIP << 8);
		__u32 src = addr_v4mapped(svc->encap_src) ? addr_word(svc->encap_src, 3)
							  : bpf_htonl(0xac100000 | (h & 0xffff));
		__u32 dst = addr_word(be->addr, 0);

		/* the one's-complement sum of words folds to the sum of their halves */
		w2 |= (__u32)csum_fold((__u64)w0 + w1 + w2 + src + dst) << 16;
		w[0] = w0;
		w[1] = w1;
		w[2] = w2;
		w[3] = src;
		w[4] = dst;
	} else {
		chlb_u32_alias *w = data + l2;
		__u32 nexthdr = p->family == CHLB_AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;

		/* version 6, traffic class = inner TOS, flow label = 20 hash bits */
		w[0] = (0x60 | (p->tos >> 4)) | ((((p->tos & 0xf) << 4) | ((h >> 16) & 0xf)) << 8) |
		       (((h >> 8) & 0xff) << 16) | ((h & 0xff) << 24);
		w[1] = (__u32)bpf_htons(inner_len) | (nexthdr << 16) | (CHLB_OUTER_TTL << 24);
		if (!addr_zero(svc->encap_src) && !addr_v4mapped(svc->encap_src)) {
			copy_words(&w[2], svc->encap_src, 16);
		} else {
			w[2] = bpf_htonl(0xfd63686c);
			w[3] = bpf_htonl(0x62000000);
			w[4] = 0;
			w[5] = bpf_htonl(h);
		}
		copy_words(&w[6], be->addr, 16);
	}
	return 0;
}

#endif /* CHLB_ENCAP_H */
