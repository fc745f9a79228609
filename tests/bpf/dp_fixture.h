/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the data-plane tests and the benchmark: a private network
 * namespace, backends whose address encodes their slot, tables built with
 * the real builders, and a packet builder for every shape the suite needs.
 */
#ifndef CHLB_DP_FIXTURE_H
#define CHLB_DP_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "dp/dp.h"
#include "table/build.h"

#define FX_IFINDEX 1 /* test runs see the loopback device as ingress */

static const __u8 fx_client_mac[6] = { 0x02, 0xc1, 0x00, 0x00, 0x00, 0x01 };
static const __u8 fx_lb_mac[6] = { 0x02, 0x1b, 0x00, 0x00, 0x00, 0x01 };

static inline __u64 fx_rand(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Run in a private network namespace with lo up: nothing of the host is touched. */
static inline int fx_netns(void)
{
	if (unshare(CLONE_NEWNET)) {
		perror("unshare(CLONE_NEWNET)");
		return -1;
	}
	return system("ip link set lo up") == 0 ? 0 : -1;
}

/* A data plane with default options, in a private network namespace; errors printed. */
static inline int fx_open_private(struct chlb_dp **dp)
{
	char err[256];

	if (fx_netns())
		return -1;
	if (chlb_dp_open(NULL, dp, err, sizeof(err))) {
		fprintf(stderr, "chlb_dp_open: %s\n", err);
		return -1;
	}
	return 0;
}

/* Pin the calling thread to one CPU (the race tests: each side on its own). */
static inline int fx_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * A bpffs pin directory unique to this run (/sys/fs/bpf/chlb-test-NAME-PID),
 * removed at exit however the tests end.
 */
static char fx_pins[128];

static inline void fx_pins_cleanup(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fx_pins);
	if (system(cmd))
		fprintf(stderr, "# cleanup of %s failed\n", fx_pins);
}

static inline const char *fx_pin_dir(const char *name)
{
	snprintf(fx_pins, sizeof(fx_pins), "/sys/fs/bpf/chlb-test-%s-%d", name, getpid());
	atexit(fx_pins_cleanup);
	return fx_pins;
}

/* Backend slot s: 10.200.<s/256>.<s%256> or 2001:db8:be::<s>, next hop cached. */
static inline void fx_backend(struct chlb_backend *be, __u32 s, int family, __u32 gen)
{
	memset(be, 0, sizeof(*be));
	be->family = family;
	be->state = CHLB_BE_LIVE;
	be->gen = gen;
	be->flags = CHLB_BE_F_NH_VALID;
	be->ifindex = FX_IFINDEX;
	if (family == CHLB_AF_INET) {
		be->addr[0] = 10;
		be->addr[1] = 200;
		be->addr[2] = s >> 8;
		be->addr[3] = s;
	} else {
		inet_pton(AF_INET6, "2001:db8:be::", be->addr);
		be->addr[14] = s >> 8;
		be->addr[15] = s;
	}
	memcpy(be->dmac, (const __u8[6]){ 0x02, 0xbe, 0, 0, s >> 8, s }, 6);
	memcpy(be->smac, fx_lb_mac, 6);
}

/* The slot encoded in a backend address (outer destination), or -1. */
static inline int fx_slot_of(const __u8 *addr, int family)
{
	if (family == CHLB_AF_INET)
		return addr[0] == 10 && addr[1] == 200 ? (addr[2] << 8) | addr[3] : -1;
	return (addr[14] << 8) | addr[15];
}

static inline void fx_name(char *buf, size_t len, __u32 s, int family)
{
	struct chlb_backend be;

	fx_backend(&be, s, family, 0);
	inet_ntop(family == CHLB_AF_INET ? AF_INET : AF_INET6, be.addr, buf, len);
}

/* Build a table over slots[0..n) and write it into table slot tslot. */
static inline int fx_table(struct chlb_dp *dp, __u32 tslot, __u32 algo, const __u32 *slots, __u32 n,
			   int family, struct chlb_table *out)
{
	struct chlb_table_spec spec = { .algo = algo,
					.table_size = algo == CHLB_ALGO_MAGLEV ? 4099 : 0 };
	struct chlb_table_be *be = calloc(n ? n : 1, sizeof(*be));
	char err[256];
	__u32 i;
	int rc;

	for (i = 0; i < n; i++) {
		be[i].slot = slots[i];
		be[i].weight = 100;
		fx_name(be[i].name, sizeof(be[i].name), slots[i], family);
	}
	rc = chlb_table_build(&spec, be, n, out, err, sizeof(err));
	free(be);
	if (rc) {
		fprintf(stderr, "table build: %s\n", err);
		return rc;
	}
	return chlb_dp_write_table(dp, tslot, out->words, out->nwords);
}

/* ---- packets ---- */
struct fx_pkt {
	int family; /* CHLB_AF_INET / CHLB_AF_INET6 */
	__u8 proto; /* IPPROTO_TCP / IPPROTO_UDP */
	const char *src, *dst;
	__u16 sport, dport;
	__u8 flags;  /* TCP flags: 0x02 SYN, 0x10 ACK */
	int vlans;   /* 0, 1, 2 (3 = malformed) */
	int optlen;  /* IPv4 options bytes (multiple of 4, <= 40) */
	int exthdrs; /* IPv6: destination-options headers before L4 */
	int frag;    /* 0, 1 = first fragment, 2 = later fragment */
	int payload; /* L4 payload bytes */
	__u8 tos;
	int df;
};

#define FX_SYN 0x02
#define FX_ACK 0x10

static inline __u16 fx_csum(const void *buf, int len)
{
	const __u8 *p = buf;
	__u32 sum = 0;
	int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (p[i] << 8) | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* L2: MACs + tags, ending with ethertype `proto`. Returns its length. */
static inline int fx_l2(__u8 *b, int vlans, __u16 proto)
{
	int off = 12, i;

	memcpy(b, fx_lb_mac, 6);
	memcpy(b + 6, fx_client_mac, 6);
	for (i = 0; i < vlans; i++) {
		__u16 tpid = (i == 0 && vlans > 1) ? ETH_P_8021AD : ETH_P_8021Q;

		b[off] = tpid >> 8;
		b[off + 1] = tpid & 0xff;
		b[off + 2] = 0;
		b[off + 3] = 10 + i;
		off += 4;
	}
	b[off] = proto >> 8;
	b[off + 1] = proto & 0xff;
	return off + 2;
}

/*
 * The outer IPv4 header of an ICMP error a router (192.0.2.254) sends to
 * dst about a packet it quotes (ilen bytes follow the 8-byte ICMP header),
 * after an untagged L2 header. Returns the ICMP header's offset.
 */
static inline int fx_icmp4_outer(__u8 *b, const char *dst, int ilen)
{
	int l2 = fx_l2(b, 0, ETH_P_IP);
	struct iphdr *ip = (struct iphdr *)(b + l2);

	memset(ip, 0, 28);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(28 + ilen);
	ip->ttl = 64;
	ip->protocol = IPPROTO_ICMP;
	inet_pton(AF_INET, "192.0.2.254", &ip->saddr);
	inet_pton(AF_INET, dst, &ip->daddr);
	ip->check = htons(fx_csum(ip, 20));
	return l2 + 20;
}

/* L4 header (+ payload) at b; returns its length. */
static inline int fx_l4(__u8 *b, const struct fx_pkt *s)
{
	int i, hl = s->proto == IPPROTO_TCP ? 20 : 8;

	memset(b, 0, hl);
	b[0] = s->sport >> 8;
	b[1] = s->sport;
	b[2] = s->dport >> 8;
	b[3] = s->dport;
	if (s->proto == IPPROTO_TCP) {
		b[12] = 5 << 4;
		b[13] = s->flags;
	} else {
		b[4] = (8 + s->payload) >> 8;
		b[5] = 8 + s->payload;
	}
	for (i = 0; i < s->payload; i++)
		b[hl + i] = (__u8)(0xa0 + i);
	return hl + s->payload;
}

/* Build a frame; returns its length. */
static inline int fx_build(__u8 *b, const struct fx_pkt *s)
{
	int l2, l4len, off, i;

	if (s->family == CHLB_AF_INET) {
		struct iphdr *ip;
		int ihl = 20 + s->optlen;

		l2 = fx_l2(b, s->vlans, ETH_P_IP);
		ip = (struct iphdr *)(b + l2);
		memset(ip, 0, ihl);
		l4len = s->frag == 2 ? 8 + s->payload : 0;
		if (s->frag == 2) {
			for (i = 0; i < l4len; i++)
				b[l2 + ihl + i] = (__u8)(0x55 + i);
		} else {
			l4len = fx_l4(b + l2 + ihl, s);
		}
		ip->version = 4;
		ip->ihl = ihl / 4;
		ip->tos = s->tos;
		ip->tot_len = htons(ihl + l4len);
		ip->id = htons(0x1234);
		ip->frag_off = htons((s->df ? 0x4000 : 0) | (s->frag == 1 ? 0x2000 : 0) |
				     (s->frag == 2 ? 185 : 0));
		ip->ttl = 61;
		ip->protocol = s->proto;
		inet_pton(AF_INET, s->src, &ip->saddr);
		inet_pton(AF_INET, s->dst, &ip->daddr);
		for (i = 0; i < s->optlen; i++)
			b[l2 + 20 + i] = i == s->optlen - 1 ? 0 : 1; /* NOPs, then EOL */
		ip->check = htons(fx_csum(ip, ihl));
		return l2 + ihl + l4len;
	} else {
		struct ipv6hdr *ip6;
		__u8 nh = s->proto;
		int ext = 8 * s->exthdrs + (s->frag ? 8 : 0);

		l2 = fx_l2(b, s->vlans, ETH_P_IPV6);
		ip6 = (struct ipv6hdr *)(b + l2);
		memset(ip6, 0, sizeof(*ip6) + ext);
		off = l2 + 40;
		ip6->version = 6;
		ip6->priority = s->tos >> 4;
		ip6->flow_lbl[0] = (s->tos & 0xf) << 4;
		ip6->hop_limit = 61;
		inet_pton(AF_INET6, s->src, &ip6->saddr);
		inet_pton(AF_INET6, s->dst, &ip6->daddr);
		/* chain: dstopts x exthdrs, then fragment */
		ip6->nexthdr = s->exthdrs ? IPPROTO_DSTOPTS : s->frag ? IPPROTO_FRAGMENT : nh;
		for (i = 0; i < s->exthdrs; i++) {
			b[off] = i + 1 < s->exthdrs ? IPPROTO_DSTOPTS
				 : s->frag	    ? IPPROTO_FRAGMENT
						    : nh;
			b[off + 1] = 0; /* 8 bytes */
			b[off + 2] = 1; /* PadN */
			b[off + 3] = 4;
			off += 8;
		}
		if (s->frag) {
			b[off] = nh;
			b[off + 2] = s->frag == 2 ? 0x05 : 0x00;
			b[off + 3] = s->frag == 2 ? 0xc8 : 0x01; /* offset 185*8 / M flag */
			b[off + 7] = 0x42;
			off += 8;
		}
		if (s->frag == 2) {
			l4len = 8 + s->payload;
			for (i = 0; i < l4len; i++)
				b[off + i] = (__u8)(0x55 + i);
		} else {
			l4len = fx_l4(b + off, s);
		}
		ip6->payload_len = htons(ext + l4len);
		return off + l4len;
	}
}

/* The struct chlb_flow a packet of spec s has (client -> VIP). */
static inline void fx_flow(struct chlb_flow *f, const struct fx_pkt *s)
{
	memset(f, 0, sizeof(*f));
	f->family = s->family;
	f->proto = s->proto;
	inet_pton(s->family == CHLB_AF_INET ? AF_INET : AF_INET6, s->src, f->src);
	inet_pton(s->family == CHLB_AF_INET ? AF_INET : AF_INET6, s->dst, f->dst);
	f->sport = htons(s->sport);
	f->dport = htons(s->dport);
}

/* Add a service view with one table. */
static inline int fx_service(struct chlb_dp *dp, int family, const char *vip, __u16 port,
			     __u8 proto, __u32 id, __u8 fwd, __u8 hash_fields, __u32 tslot)
{
	struct chlb_service svc = {
		.id = id, .fwd = fwd, .hash_fields = hash_fields, .ntables = 1
	};
	struct chlb_vip_key key;
	__u8 a[16];

	inet_pton(family == CHLB_AF_INET ? AF_INET : AF_INET6, vip, a);
	chlb_dp_vip_key(&key, family, a, port, proto);
	svc.table[0] = tslot;
	return chlb_dp_set_service(dp, &key, &svc);
}

#endif /* CHLB_DP_FIXTURE_H */
