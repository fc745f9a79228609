// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Backend-side decapsulation for chlb's ipip forwarding mode, at TC ingress.
 *
 * chlb's load balancer wraps a client packet in one outer IP header (IPv4 in
 * IPv4, IPv6 in IPv6, IPv4 in IPv6; IPv6 in IPv4 is accepted too) addressed
 * to the backend. A backend normally strips it with the kernel's ipip /
 * ip6_tunnel device; this program does the same job where those modules are
 * missing, and costs one bpf_skb_adjust_room per packet.
 *
 * What is decapsulated: every unfragmented tunnel packet (outer protocol 4 or
 * 41) that arrives on the device this program is attached to, as the kernel's
 * catch-all tunl0 / ip6tnl0 devices would. The inner packet then goes through
 * the normal receive path, so it is delivered only if its destination (the
 * VIP on lo) is local; anything else follows the host's forwarding rules.
 * Attach it only on backend-facing interfaces of hosts that are meant to
 * terminate chlb tunnels. Everything else passes untouched: non-IP, non-tunnel
 * IP, outer fragments, and packets too short to hold both headers.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/* Kernel >= 6.3 flags; the uapi headers on Debian 12 predate them. */
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

#define IP_MF	  0x2000
#define IP_OFFSET 0x1fff

/* Index into decap_stats. */
enum chlb_decap_stat {
	CHLB_DECAP_DONE = 0, /* outer header removed */
	CHLB_DECAP_PASS = 1, /* not a tunnel packet (or unparsable): untouched */
	CHLB_DECAP_FAIL = 2, /* bpf_skb_adjust_room refused: dropped */
	CHLB_DECAP_STAT_MAX
};

/* Per-CPU packet counters, readable with `bpftool map dump name decap_stats`. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CHLB_DECAP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} decap_stats SEC(".maps");

static __always_inline int count(__u32 what, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&decap_stats, &what);

	if (v)
		*v += 1;
	return verdict;
}

/*
 * Strip @outer_len bytes after the Ethernet header. @inner is the inner
 * packet's IP version (4 or 6); when it differs from the outer one the L3
 * protocol changes, which the kernel needs to be told (DECAP_L3 flag) and the
 * Ethernet type rewritten by hand.
 */
static __always_inline int strip(struct __sk_buff *skb, __u32 outer_len, int outer, int inner)
{
	__u64 flags = 0;
	__be16 proto;

	if (inner != outer)
		flags = inner == 4 ? BPF_F_ADJ_ROOM_DECAP_L3_IPV4 : BPF_F_ADJ_ROOM_DECAP_L3_IPV6;
	if (bpf_skb_adjust_room(skb, -(__s32)outer_len, BPF_ADJ_ROOM_MAC, flags))
		return count(CHLB_DECAP_FAIL, TC_ACT_SHOT);
	if (inner != outer) {
		proto = inner == 4 ? bpf_htons(ETH_P_IP) : bpf_htons(ETH_P_IPV6);
		if (bpf_skb_store_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
					sizeof(proto), 0))
			return count(CHLB_DECAP_FAIL, TC_ACT_SHOT);
	}
	return count(CHLB_DECAP_DONE, TC_ACT_OK);
}

/* Inner header version must match what the outer protocol number claims. */
static __always_inline int inner_ok(void *p, void *end, int want)
{
	__u8 *vb = p;

	if ((void *)(vb + 1) > end)
		return 0;
	if ((*vb >> 4) != want)
		return 0;
	if (want == 4)
		return p + sizeof(struct iphdr) <= end;
	return p + sizeof(struct ipv6hdr) <= end;
}

static __always_inline int decap_v4(struct __sk_buff *skb, void *data, void *end)
{
	struct iphdr *ip = data + sizeof(struct ethhdr);
	__u32 hlen;
	int inner;

	if ((void *)(ip + 1) > end)
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	if (ip->protocol == IPPROTO_IPIP)
		inner = 4;
	else if (ip->protocol == IPPROTO_IPV6)
		inner = 6;
	else
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	hlen = ip->ihl * 4;
	if (hlen < sizeof(*ip) || (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	if (!inner_ok((void *)ip + hlen, end, inner))
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	return strip(skb, hlen, 4, inner);
}

static __always_inline int decap_v6(struct __sk_buff *skb, void *data, void *end)
{
	struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
	int inner;

	if ((void *)(ip6 + 1) > end)
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	/* chlb never adds extension headers, so nexthdr is the tunnel protocol. */
	if (ip6->nexthdr == IPPROTO_IPV6)
		inner = 6;
	else if (ip6->nexthdr == IPPROTO_IPIP)
		inner = 4;
	else
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	if (!inner_ok(ip6 + 1, end, inner))
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	return strip(skb, sizeof(*ip6), 6, inner);
}

SEC("tc")
int chlb_decap(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	/* Pull both headers (at most) into the linear area; a failure only means
	 * the bounds checks below see less and the packet passes. */
	__u32 want = sizeof(*eth) + 2 * sizeof(struct ipv6hdr);

	bpf_skb_pull_data(skb, skb->len < want ? skb->len : want);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return count(CHLB_DECAP_PASS, TC_ACT_OK);
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return decap_v4(skb, data, end);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return decap_v6(skb, data, end);
	return count(CHLB_DECAP_PASS, TC_ACT_OK);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
