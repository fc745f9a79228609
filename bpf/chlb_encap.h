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
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return CHLB_R_ERROR;
	__builtin_memcpy(nh->dmac, fib.dmac, 6);
	__builtin_memcpy(nh->smac, fib.smac, 6);
	nh->ifindex = fib.ifindex;
	return CHLB_R_MAX;
}

/*
 * Next hop towards the backend. Returns CHLB_R_MAX when resolved, else the
 * reason to pass the packet to the kernel (NO_NEIGH: the kernel resolves
 * the neighbour on the way, and the next packet finds it).
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

static __always_inline bool addr_zero(const __u8 *a, __u32 n)
{
	__u32 i, acc = 0;

#pragma unroll
	for (i = 0; i < 16; i++)
		if (i < n)
			acc |= a[i];
	return acc == 0;
}

static __always_inline bool addr_v4mapped(const __u8 *a)
{
	return addr_zero(a, 10) && a[10] == 0xff && a[11] == 0xff;
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
	if (!o6) {
		struct iphdr ip = {
			.version = 4,
			.ihl = 5,
			.tos = p->tos,
			.tot_len = bpf_htons(inner_len + sizeof(ip)),
			.frag_off = bpf_htons(0x4000),
			.ttl = CHLB_OUTER_TTL,
			.protocol = IPPROTO_IPIP,
		};

		if (addr_v4mapped(svc->encap_src))
			__builtin_memcpy(&ip.saddr, svc->encap_src + 12, 4);
		else
			ip.saddr = bpf_htonl(0xac100000 | (h & 0xffff));
		__builtin_memcpy(&ip.daddr, be->addr, 4);
		ip.check = csum_fold(csum_words(&ip, sizeof(ip) / 2));
		copy_words(data + l2, &ip, sizeof(ip));
	} else {
		struct ipv6hdr ip6 = {
			.version = 6,
			.priority = p->tos >> 4,
			.payload_len = bpf_htons(inner_len),
			.nexthdr = p->family == CHLB_AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6,
			.hop_limit = CHLB_OUTER_TTL,
		};

		ip6.flow_lbl[0] = ((p->tos & 0xf) << 4) | ((h >> 16) & 0xf);
		ip6.flow_lbl[1] = h >> 8;
		ip6.flow_lbl[2] = h;
		if (!addr_zero(svc->encap_src, 16) && !addr_v4mapped(svc->encap_src)) {
			__builtin_memcpy(&ip6.saddr, svc->encap_src, 16);
		} else {
			ip6.saddr.in6_u.u6_addr32[0] = bpf_htonl(0xfd63686c);
			ip6.saddr.in6_u.u6_addr32[1] = bpf_htonl(0x62000000);
			ip6.saddr.in6_u.u6_addr32[3] = bpf_htonl(h);
		}
		__builtin_memcpy(&ip6.daddr, be->addr, 16);
		copy_words(data + l2, &ip6, sizeof(ip6));
	}
	return 0;
}

#endif /* CHLB_ENCAP_H */
