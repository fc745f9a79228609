/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Too big for the tunnel: turn the packet, in place, into the ICMP error
 * the client needs for path-MTU discovery - IPv4 "fragmentation needed"
 * (type 3 code 4) or ICMPv6 "packet too big" - carrying the reduced MTU,
 * from the VIP to the client, out of the interface it came in on.
 * The error quotes the original IP header + 8 bytes (IPv4, RFC 792) or the
 * first 48 bytes (IPv6: its header + 8, enough for the client's stack to
 * find the route and the socket).
 */
#ifndef CHLB_ICMP_H
#define CHLB_ICMP_H

#include "chlb_encap.h"

#define CHLB_ICMP4_QUOTE_MAX 68 /* 60-byte header with options + 8 */
#define CHLB_ICMP6_QUOTE     48

static __always_inline int icmp_swap_macs(void *ctx, bool tc)
{
	void *data = ctx_data(ctx, tc), *end = ctx_data_end(ctx, tc);
	struct ethhdr *eth = data;
	__u8 tmp[6];

	if ((void *)(eth + 1) > end)
		return -1;
	__builtin_memcpy(tmp, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, tmp, 6);
	return 0;
}

static __always_inline int chlb_icmp4_too_big(void *ctx, bool tc, const struct chlb_pkt *p,
					      __u32 mtu)
{
	__u8 quote[CHLB_ICMP4_QUOTE_MAX] = {};
	__u32 keep = (p->l4off - p->l2len + 8) & 0x7f, l2 = p->l2len & 0x1f;
	struct iphdr ip = {
		.version = 4,
		.ihl = 5,
		.ttl = CHLB_OUTER_TTL,
		.protocol = IPPROTO_ICMP,
	};
	struct chlb_icmphdr ih = { .type = ICMP_DEST_UNREACH, .code = ICMP_FRAG_NEEDED };
	void *data, *end;
	__u64 sum;

	if (keep > sizeof(quote) || keep < 28)
		return -1;
	if (ctx_load_bytes(ctx, tc, l2, quote, keep) || ctx_trim(ctx, tc, l2 + keep) ||
	    ctx_push_l3(ctx, tc, l2, sizeof(ip) + sizeof(ih), 0) || icmp_swap_macs(ctx, tc))
		return -1;
	ip.tot_len = bpf_htons(sizeof(ip) + sizeof(ih) + keep);
	__builtin_memcpy(&ip.saddr, p->flow.dst, 4);
	__builtin_memcpy(&ip.daddr, p->flow.src, 4);
	ip.check = csum_fold(csum_words(&ip, sizeof(ip) / 2));
	ih.mtu = bpf_htons(mtu);
	sum =
	    csum_words(&ih, sizeof(ih) / 2) + (__u32)bpf_csum_diff(NULL, 0, (void *)quote, keep, 0);
	ih.checksum = csum_fold(sum);

	data = ctx_data(ctx, tc);
	end = ctx_data_end(ctx, tc);
	if (data + l2 + sizeof(ip) + sizeof(ih) > end)
		return -1;
	copy_words(data + l2, &ip, sizeof(ip));
	copy_words(data + l2 + sizeof(ip), &ih, sizeof(ih));
	return 0;
}

static __always_inline int chlb_icmp6_too_big(void *ctx, bool tc, const struct chlb_pkt *p,
					      __u32 mtu)
{
	__u8 quote[CHLB_ICMP6_QUOTE] = {};
	__u32 l2 = p->l2len & 0x1f, plen = sizeof(struct chlb_icmphdr) + CHLB_ICMP6_QUOTE;
	struct ipv6hdr ip6 = {
		.version = 6,
		.nexthdr = IPPROTO_ICMPV6,
		.hop_limit = CHLB_OUTER_TTL,
	};
	struct chlb_icmphdr ih = { .type = ICMPV6_PKT_TOOBIG };
	void *data, *end;
	__u64 sum;

	if (p->len < l2 + CHLB_ICMP6_QUOTE)
		return -1;
	if (ctx_load_bytes(ctx, tc, l2, quote, sizeof(quote)) ||
	    ctx_trim(ctx, tc, l2 + CHLB_ICMP6_QUOTE) ||
	    ctx_push_l3(ctx, tc, l2, sizeof(ip6) + sizeof(ih), 0) || icmp_swap_macs(ctx, tc))
		return -1;
	ip6.payload_len = bpf_htons(plen);
	__builtin_memcpy(&ip6.saddr, p->flow.dst, 16);
	__builtin_memcpy(&ip6.daddr, p->flow.src, 16);
	ih.unused = bpf_htons(mtu >> 16);
	ih.mtu = bpf_htons(mtu & 0xffff);
	/* pseudo header: addresses, upper-layer length, next header */
	sum = csum_words(&ip6.saddr, 16) + bpf_htons(plen) + bpf_htons(IPPROTO_ICMPV6);
	sum += csum_words(&ih, sizeof(ih) / 2);
	sum += (__u32)bpf_csum_diff(NULL, 0, (void *)quote, sizeof(quote), 0);
	ih.checksum = csum_fold(sum);

	data = ctx_data(ctx, tc);
	end = ctx_data_end(ctx, tc);
	if (data + l2 + sizeof(ip6) + sizeof(ih) > end)
		return -1;
	copy_words(data + l2, &ip6, sizeof(ip6));
	copy_words(data + l2 + sizeof(ip6), &ih, sizeof(ih));
	return 0;
}

static __always_inline int chlb_icmp_too_big(void *ctx, bool tc, const struct chlb_pkt *p,
					     __u32 mtu)
{
	if (p->family == CHLB_AF_INET6)
		return chlb_icmp6_too_big(ctx, tc, p, mtu);
	return chlb_icmp4_too_big(ctx, tc, p, mtu);
}

#endif /* CHLB_ICMP_H */
