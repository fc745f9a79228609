/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Cursor parser: Ethernet + 0..2 VLAN tags, IPv4 (options), IPv6 (bounded
 * extension-header walk, fragment header), TCP/UDP, and ICMP/ICMPv6 errors
 * whose embedded header names a flow (the tuple is reversed so the error
 * follows the flow it is about). Every read is bounds-checked against
 * data_end; a short or malformed header returns its enum chlb_reason.
 */
#ifndef CHLB_PARSE_H
#define CHLB_PARSE_H

#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "chlb_maps.h"
#include "chlb_ctx.h"

#define CHLB_IP6_MAX_EXT 4

/*
 * ICMP/ICMPv6 header as far as we use it (linux/icmp.h drags in libc's
 * socket headers, which do not build for the BPF target).
 */
struct chlb_icmphdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be16 unused;
	__be16 mtu; /* IPv4 frag-needed: next-hop MTU; ICMPv6 too-big: low half of the MTU */
} __attribute__((aligned(4))); /* copied with 4-byte stack reads (copy_words) */

#define ICMP_DEST_UNREACH   3
#define ICMP_FRAG_NEEDED    4
#define ICMP_TIME_EXCEEDED  11
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PKT_TOOBIG   2
#define ICMPV6_TIME_EXCEED  3 /* extension headers walked before giving up */

enum chlb_frag {
	CHLB_FRAG_NONE = 0,
	CHLB_FRAG_FIRST, /* offset 0, more fragments: ports present */
	CHLB_FRAG_LATER, /* offset > 0: no L4 header */
};

/* What the pipeline needs from a packet (flow 4-aligned: copy_words writes it). */
struct chlb_pkt {
	__u32 len;	/* frame length */
	__u32 l2len;	/* 14, 18 or 22 */
	__u32 l4off;	/* first byte after the IP header chain */
	__u8 family;	/* CHLB_AF_INET / CHLB_AF_INET6 (of the frame's L3) */
	__u8 l4proto;	/* frame's L4: TCP, UDP, ICMP, ICMPv6 */
	__u8 tos;	/* IPv4 TOS / IPv6 traffic class */
	__u8 syn;	/* TCP SYN without ACK: a new flow */
	__u8 frag;	/* enum chlb_frag */
	__u8 icmp_err;	/* the flow comes from an ICMP error's embedded header */
	__u8 df;	/* IPv4 don't-fragment */
	__u8 fin_rst;	/* TCP FIN or RST: the client ends the connection */
	__u8 bad_flags; /* TCP SYN with RST or FIN: no real stack sends it */
	__u8 pad[3];
	struct chlb_flow flow; /* client -> VIP, as the connection table keys it */
};

/*
 * Whole-word stores into the flow: the CRC, the VIP key and the conns hash
 * read it a word at a time, and a word load that spans several narrower
 * stores stalls store-to-load forwarding (its cost: docs/performance.md).
 */
static __always_inline void flow_set_ports(struct chlb_flow *f, __u32 ports)
{
	*(chlb_u32_alias *)&f->sport = ports;
}

static __always_inline void flow_set_proto(struct chlb_flow *f, __u8 proto, __u8 family)
{
	*(chlb_u32_alias *)&f->proto = proto | ((__u32)family << 8); /* pad stays zero */
}

/*
 * The ports of the embedded header of an ICMP error at off (TCP/UDP: the
 * first 4 bytes), swapped: that packet went VIP -> client.
 */
static __always_inline int parse_ports_reversed(void *data, void *end, __u32 off,
						struct chlb_flow *f)
{
	__u32 *ports = data + (off & 0xffff);
	__u32 w;

	if ((void *)(ports + 1) > end)
		return -1;
	w = *(chlb_u32_alias *)ports;
	flow_set_ports(f, (w >> 16) | (w << 16));
	return 0;
}

/*
 * ICMP error: the embedded header is the VIP's own packet (VIP -> client).
 * The flow is that packet's tuple reversed: client -> VIP.
 */
static __always_inline int parse_icmp4_inner(void *data, void *end, __u32 off, struct chlb_pkt *p)
{
	struct iphdr *ip = data + (off & 0xffff);
	__u32 ihl;

	if ((void *)(ip + 1) > end)
		return CHLB_R_PARSE_L4;
	ihl = ip->ihl * 4;
	if (ip->version != 4 || ihl < sizeof(*ip) ||
	    (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP))
		return CHLB_R_PASS_NOT_VIP;
	/* an error about the VIP's packet is sent to the VIP; one sent to the LB is the LB's */
	if (*(chlb_u32_alias *)&ip->saddr != *(chlb_u32_alias *)p->flow.dst)
		return CHLB_R_PASS_ICMP_LOCAL;
	copy_words(p->flow.src, &ip->daddr, 4);
	copy_words(p->flow.dst, &ip->saddr, 4);
	flow_set_proto(&p->flow, ip->protocol, CHLB_AF_INET);
	if (parse_ports_reversed(data, end, off + ihl, &p->flow))
		return CHLB_R_PARSE_L4;
	p->icmp_err = 1;
	return CHLB_R_MAX;
}

static __always_inline int parse_icmp6_inner(void *data, void *end, __u32 off, struct chlb_pkt *p)
{
	struct ipv6hdr *ip6 = data + (off & 0xffff);

	if ((void *)(ip6 + 1) > end)
		return CHLB_R_PARSE_L4;
	/* extension headers inside an error are not walked: TCP/UDP directly */
	if (ip6->nexthdr != IPPROTO_TCP && ip6->nexthdr != IPPROTO_UDP)
		return CHLB_R_PASS_NOT_VIP;
	{
		const chlb_u32_alias *a = (const chlb_u32_alias *)&ip6->saddr,
				     *b = (const chlb_u32_alias *)p->flow.dst;

		/* sent to the VIP it quotes, or it is about the LB's own packet */
		if ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]))
			return CHLB_R_PASS_ICMP_LOCAL;
	}
	copy_words(p->flow.src, &ip6->daddr, 16);
	copy_words(p->flow.dst, &ip6->saddr, 16);
	flow_set_proto(&p->flow, ip6->nexthdr, CHLB_AF_INET6);
	if (parse_ports_reversed(data, end, off + sizeof(*ip6), &p->flow))
		return CHLB_R_PARSE_L4;
	p->icmp_err = 1;
	return CHLB_R_MAX;
}

static __always_inline int parse_l4(void *data, void *end, struct chlb_pkt *p)
{
	__u32 off = p->l4off & 0xffff;

	if (p->l4proto == IPPROTO_TCP) {
		struct tcphdr *th = data + off;

		if ((void *)(th + 1) > end || th->doff < 5)
			return CHLB_R_PARSE_L4;
		p->bad_flags = th->syn && (th->rst || th->fin);
		flow_set_ports(&p->flow, *(chlb_u32_alias *)th);
		p->syn = th->syn && !th->ack;
		p->fin_rst = th->fin || th->rst;
		return CHLB_R_MAX;
	}
	if (p->l4proto == IPPROTO_UDP) {
		struct udphdr *uh = data + off;

		if ((void *)(uh + 1) > end)
			return CHLB_R_PARSE_L4;
		flow_set_ports(&p->flow, *(chlb_u32_alias *)uh);
		return CHLB_R_MAX;
	}
	if (p->l4proto == IPPROTO_ICMP && p->family == CHLB_AF_INET) {
		struct chlb_icmphdr *ih = data + off;

		if ((void *)(ih + 1) > end)
			return CHLB_R_PARSE_L4;
		if (ih->type != ICMP_DEST_UNREACH && ih->type != ICMP_TIME_EXCEEDED)
			return CHLB_R_PASS_NOT_VIP;
		return parse_icmp4_inner(data, end, off + sizeof(*ih), p);
	}
	if (p->l4proto == IPPROTO_ICMPV6 && p->family == CHLB_AF_INET6) {
		struct chlb_icmphdr *ih = data + off;

		if ((void *)(ih + 1) > end)
			return CHLB_R_PARSE_L4;
		if (ih->type != ICMPV6_DEST_UNREACH && ih->type != ICMPV6_PKT_TOOBIG &&
		    ih->type != ICMPV6_TIME_EXCEED)
			return CHLB_R_PASS_NOT_VIP;
		return parse_icmp6_inner(data, end, off + sizeof(*ih), p);
	}
	return CHLB_R_PASS_NOT_VIP;
}

static __always_inline int parse_ip4(void *data, void *end, struct chlb_pkt *p)
{
	struct iphdr *ip = data + (p->l2len & 0x1f);
	__u32 ihl, tot;
	__u16 frag;

	if ((void *)(ip + 1) > end)
		return CHLB_R_PARSE_IP4;
	ihl = ip->ihl * 4;
	if (ip->version != 4 || ihl < sizeof(*ip) || (void *)ip + ihl > end)
		return CHLB_R_PARSE_IP4;
	/* the header's length within the frame (shorter: Ethernet padding, fine) */
	tot = bpf_ntohs(ip->tot_len);
	if (tot < ihl || tot > p->len - p->l2len)
		return CHLB_R_PARSE_IP4;
	p->family = CHLB_AF_INET;
	p->l4proto = ip->protocol;
	p->tos = ip->tos;
	copy_words(p->flow.src, &ip->saddr, 4);
	copy_words(p->flow.dst, &ip->daddr, 4);
	flow_set_proto(&p->flow, ip->protocol, CHLB_AF_INET);
	p->l4off = p->l2len + ihl;
	frag = bpf_ntohs(ip->frag_off);
	p->df = !!(frag & 0x4000);
	if (frag & 0x1fff)
		p->frag = CHLB_FRAG_LATER;
	else if (frag & 0x2000)
		p->frag = CHLB_FRAG_FIRST;
	return CHLB_R_MAX;
}

static __always_inline int parse_ip6(void *data, void *end, struct chlb_pkt *p)
{
	struct ipv6hdr *ip6 = data + (p->l2len & 0x1f);
	__u32 off;
	__u8 nh;
	int i;

	if ((void *)(ip6 + 1) > end)
		return CHLB_R_PARSE_IP6;
	if (ip6->version != 6)
		return CHLB_R_PARSE_IP6;
	/* payload beyond the frame: truncated (0, a jumbogram, is not supported) */
	if (!ip6->payload_len || bpf_ntohs(ip6->payload_len) + sizeof(*ip6) > p->len - p->l2len)
		return CHLB_R_PARSE_IP6;
	p->family = CHLB_AF_INET6;
	p->tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
	copy_words(p->flow.src, &ip6->saddr, 16);
	copy_words(p->flow.dst, &ip6->daddr, 16);
	nh = ip6->nexthdr;
	off = p->l2len + sizeof(*ip6);
#pragma unroll
	for (i = 0; i < CHLB_IP6_MAX_EXT; i++) {
		__u8 *eh = data + (off & 0x1fff);

		if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING && nh != IPPROTO_DSTOPTS &&
		    nh != IPPROTO_FRAGMENT && nh != IPPROTO_AH)
			break;
		if ((void *)(eh + 8) > end)
			return CHLB_R_PARSE_IP6;
		if (nh == IPPROTO_FRAGMENT) {
			__u16 fo = bpf_ntohs(*(__be16 *)(eh + 2));

			p->frag = (fo & 0xfff8) ? CHLB_FRAG_LATER
				  : (fo & 1)	? CHLB_FRAG_FIRST
						: CHLB_FRAG_NONE;
			off += 8;
		} else if (nh == IPPROTO_AH) {
			off += ((__u32)eh[1] + 2) * 4;
		} else {
			off += ((__u32)eh[1] + 1) * 8;
		}
		nh = eh[0];
	}
	if (nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING || nh == IPPROTO_DSTOPTS ||
	    nh == IPPROTO_FRAGMENT || nh == IPPROTO_AH)
		return CHLB_R_PARSE_IP6; /* chain longer than we walk */
	p->l4proto = nh;
	flow_set_proto(&p->flow, nh, CHLB_AF_INET6);
	p->l4off = off;
	return CHLB_R_MAX;
}

/*
 * Parse the frame. Returns CHLB_R_MAX when p describes a TCP/UDP flow (or
 * an ICMP error about one, or an IP fragment), else the reason to pass it.
 */
static __always_inline int chlb_parse(void *ctx, bool tc, struct chlb_pkt *p)
{
	void *data = ctx_data(ctx, tc), *end = ctx_data_end(ctx, tc);
	struct ethhdr *eth = data;
	__be16 proto;
	int r;

	/* TC: skb->len, not the linear part (payload of a veth TCP skb is paged) */
	p->len = tc ? ((struct __sk_buff *)ctx)->len : end - data;
	if ((void *)(eth + 1) > end)
		return CHLB_R_PARSE_ETH;
	proto = eth->h_proto;
	p->l2len = sizeof(*eth);
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		__be16 *tag = data + sizeof(*eth);

		if ((void *)(tag + 2) > end)
			return CHLB_R_PARSE_ETH;
		proto = tag[1];
		p->l2len += 4;
		if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
			tag = data + sizeof(*eth) + 4;
			if ((void *)(tag + 2) > end)
				return CHLB_R_PARSE_ETH;
			proto = tag[1];
			p->l2len += 4;
			if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
				return CHLB_R_PARSE_VLAN;
		}
	}
	if (proto == bpf_htons(ETH_P_IP))
		r = parse_ip4(data, end, p);
	else if (proto == bpf_htons(ETH_P_IPV6))
		r = parse_ip6(data, end, p);
	else
		return CHLB_R_PASS_NOT_IP;
	if (r != CHLB_R_MAX)
		return r;
	if (p->frag == CHLB_FRAG_LATER) {
		/* no L4 header: only a source-hash service can place it (pipeline decides) */
		if (p->l4proto != IPPROTO_TCP && p->l4proto != IPPROTO_UDP)
			return CHLB_R_PASS_NOT_VIP;
		return CHLB_R_MAX;
	}
	return parse_l4(data, end, p);
}

#endif /* CHLB_PARSE_H */
