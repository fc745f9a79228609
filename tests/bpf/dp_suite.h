/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the data plane's packet suites share (test_dp_parse, test_dp_icmp,
 * test_dp_stick, test_dp_encap; one per bpf/ stage): every case runs the same
 * input through the XDP and the TC entry point (same maps) with
 * bpf_prog_test_run_opts() and checks the verdict, the output bytes field by
 * field (outer headers incl. the IPv4 checksum; inner bytes untouched) and
 * the reason counters. The services every suite starts with, the helpers
 * that send and check packets, and stickiness's (a table's decision, a
 * flow's entry). Included by one .c per suite: each uses a part of it.
 */
#ifndef CHLB_TEST_DP_SUITE_H
#define CHLB_TEST_DP_SUITE_H

#pragma GCC diagnostic ignored "-Wunused-function" /* each suite uses a part */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <cmocka.h>

#include "dp_fixture.h"
#include "dp/nexthop.h"

#define XDP_PASS_RC 2
#define XDP_DROP_RC 1
#define XDP_TX_RC   3
#define XDP_RDR_RC  4
#define TC_OK_RC    0
#define TC_SHOT_RC  2
#define TC_RDR_RC   7

enum want {
	W_PASS,
	W_DROP,
	W_TX,	    /* sent back out of the ingress device */
	W_REDIRECT, /* to another device */
};

enum mode {
	M_L2,  /* MAC rewrite only */
	M_IP4, /* IPv4 outer header */
	M_IP6, /* IPv6 outer header */
};

static struct chlb_dp *dp;
static struct chlb_global_stats g0;

static void stats_mark(void)
{
	assert_int_equal(chlb_dp_read_global(dp, &g0), 0);
}

/* Reason r went up by exactly n since stats_mark(). */
static void stats_delta(enum chlb_reason r, __u64 n)
{
	struct chlb_global_stats g;

	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	if (g.reason[r] - g0.reason[r] != n)
		fail_msg("reason %s: delta %llu, want %llu", chlb_reason_names[r],
			 (unsigned long long)(g.reason[r] - g0.reason[r]), (unsigned long long)n);
}

static const char *const want_names[] = { "pass", "drop", "tx", "redirect" };

static int verdict_ok(int prog, __u32 v, enum want w)
{
	static const __u32 xdp[] = { XDP_PASS_RC, XDP_DROP_RC, XDP_TX_RC, XDP_RDR_RC };
	static const __u32 tc[] = { TC_OK_RC, TC_SHOT_RC, TC_RDR_RC, TC_RDR_RC };

	return v == (prog == CHLB_PROG_XDP ? xdp[w] : tc[w]);
}

/* Run on prog; return the output length. */
static __u32 run(int prog, const __u8 *in, int n, __u8 *out, enum want w)
{
	__u32 len = 2048, v;

	struct chlb_global_stats a, b;
	int r;

	assert_int_equal(chlb_dp_read_global(dp, &a), 0);
	assert_int_equal(chlb_dp_test_run(dp, prog, in, n, out, &len, &v), 0);
	if (!verdict_ok(prog, v, w)) {
		assert_int_equal(chlb_dp_read_global(dp, &b), 0);
		for (r = 0; r < CHLB_R_MAX; r++)
			if (b.reason[r] != a.reason[r])
				fprintf(stderr, "# counted: %s\n", chlb_reason_names[r]);
		for (r = 0; r < n; r++)
			fprintf(stderr, "%02x%s", in[r], r % 16 == 15 ? "\n" : " ");
		fprintf(stderr, "\n");
		fail_msg("%s: verdict %u, want %s", prog ? "tc" : "xdp", v, want_names[w]);
	}
	return len;
}

/* Both entry points pass the frame to the kernel untouched. */
static void expect_pass(const __u8 *in, int n, enum chlb_reason r)
{
	__u8 out[2048];
	int prog;

	stats_mark();
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_PASS);

		assert_int_equal(len, n);
		assert_memory_equal(out, in, n);
	}
	stats_delta(r, 2);
	stats_delta(CHLB_R_FORWARDED, 0);
}

static void expect_drop(const __u8 *in, int n, enum chlb_reason r)
{
	__u8 out[2048];
	int prog;

	stats_mark();
	for (prog = 0; prog < 2; prog++)
		run(prog, in, n, out, W_DROP);
	stats_delta(r, 2);
}

static int l2len_of(const __u8 *in)
{
	int l2 = 14;

	while ((in[l2 - 2] == 0x81 && in[l2 - 1] == 0x00) ||
	       (in[l2 - 2] == 0x88 && in[l2 - 1] == 0xa8))
		l2 += 4;
	return l2;
}

static __u8 inner_tos(const __u8 *l3)
{
	if ((l3[0] >> 4) == 4)
		return l3[1];
	return ((l3[0] & 0xf) << 4) | (l3[1] >> 4);
}

/* Check a forwarded frame field by field; returns the backend slot it went to. */
static int check_fwd(const __u8 *in, int n, const __u8 *out, __u32 olen, enum mode m,
		     const __u8 *encap_src4)
{
	int l2 = l2len_of(in), room = m == M_IP4 ? 20 : m == M_IP6 ? 40 : 0, slot;
	const __u8 *o = out + l2, *inner = in + l2;
	int inner4 = (inner[0] >> 4) == 4;

	assert_int_equal(olen, n + room);
	assert_int_equal(out[0], 0x02);
	assert_int_equal(out[1], 0xbe);
	slot = (out[4] << 8) | out[5];
	assert_memory_equal(out + 6, fx_lb_mac, 6);
	if (l2 > 14)
		assert_memory_equal(out + 12, in + 12, l2 - 14); /* VLAN tags kept */
	if (m == M_L2) {
		assert_memory_equal(out + l2 - 2, in + l2 - 2, n - l2 + 2);
		return slot;
	}
	assert_memory_equal(o + room, inner, n - l2); /* inner bytes untouched */
	if (m == M_IP4) {
		assert_int_equal(out[l2 - 2], 0x08);
		assert_int_equal(out[l2 - 1], 0x00);
		assert_int_equal(o[0], 0x45);
		assert_int_equal(o[1], inner_tos(inner));
		assert_int_equal((o[2] << 8) | o[3], n - l2 + 20);
		assert_int_equal((o[4] << 8) | o[5], 0);      /* id */
		assert_int_equal((o[6] << 8) | o[7], 0x4000); /* DF */
		assert_int_equal(o[8], 64);
		assert_int_equal(o[9], 4); /* IPPROTO_IPIP */
		assert_int_equal(fx_csum(o, 20), 0);
		if (encap_src4)
			assert_memory_equal(o + 12, encap_src4, 4);
		else
			assert_true(o[12] == 172 && o[13] == 16);
		assert_int_equal(fx_slot_of(o + 16, CHLB_AF_INET), slot);
	} else {
		assert_int_equal(out[l2 - 2], 0x86);
		assert_int_equal(out[l2 - 1], 0xdd);
		assert_int_equal(o[0] >> 4, 6);
		assert_int_equal(((o[0] & 0xf) << 4) | (o[1] >> 4), inner_tos(inner));
		assert_int_equal((o[4] << 8) | o[5], n - l2);
		assert_int_equal(o[6], inner4 ? 4 : 41);
		assert_int_equal(o[7], 64);
		assert_memory_equal(o + 8, ((const __u8[]){ 0xfd, 0x63, 0x68, 0x6c, 0x62, 0 }), 6);
		assert_int_equal(fx_slot_of(o + 24, CHLB_AF_INET6), slot);
	}
	return slot;
}

/* Both entry points forward; the same backend; returns its slot. */
static int expect_fwd(const __u8 *in, int n, enum mode m)
{
	__u8 out[2048];
	int prog, slot[2];

	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_TX);

		slot[prog] = check_fwd(in, n, out, len, m, NULL);
	}
	assert_int_equal(slot[0], slot[1]);
	return slot[0];
}

/* ---- set-up: backends and services ---- */
#define V4_FIRST 10 /* slots 10..19: IPv4 backends */
#define V6_FIRST 30 /* slots 30..39: IPv6 backends */
#define NBE	 10

static struct chlb_table tbl[64];

static __u32 tslot_of(__u32 id, __u32 k)
{
	return id * CHLB_SLOTS_PER_SERVICE + k;
}

/* Service id with one table over 10 backends of `befam` from first slot. */
static void add_service(__u32 id, int vfam, const char *vip, __u16 port, __u8 proto, __u32 algo,
			__u8 fwd, __u8 hf, int befam, __u32 first, __u32 nbe)
{
	__u32 slots[16], i;

	for (i = 0; i < nbe; i++)
		slots[i] = first + i;
	chlb_table_free(&tbl[id]);
	assert_int_equal(fx_table(dp, tslot_of(id, 0), algo, slots, nbe, befam, &tbl[id]), 0);
	assert_int_equal(fx_service(dp, vfam, vip, port, proto, id, fwd, hf, tslot_of(id, 0)), 0);
}

static int expected_slot(__u32 id, const struct fx_pkt *s, int hf)
{
	struct chlb_flow f;
	__u32 slot;

	fx_flow(&f, s);
	assert_int_equal(chlb_table_decide(&tbl[id], chlb_flow_crc(&f, hf), &slot), 0);
	return slot;
}

static int setup(void **state)
{
	struct chlb_backend be;
	char err[256];
	__u32 i;

	if (fx_netns())
		return -1;
	if (chlb_dp_open(NULL, &dp, err, sizeof(err))) {
		fprintf(stderr, "chlb_dp_open: %s\n", err);
		return -1;
	}
	for (i = 0; i < 64; i++) {
		fx_backend(&be, i,
			   i >= V6_FIRST && i < V6_FIRST + NBE ? CHLB_AF_INET6 : CHLB_AF_INET, 1);
		if (chlb_dp_set_backend(dp, i, &be))
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	int i;

	for (i = 0; i < 64; i++)
		chlb_table_free(&tbl[i]);
	chlb_dp_close(dp);
	return 0;
}

/* Services used by the single-shape cases below. */
#define SVC_TCP4   1 /* 10.0.0.1:80 tcp ring ipip */
#define SVC_TCP6   2 /* 2001:db8::1:443 tcp jump ipip (6in6) */
#define SVC_WILD4  3 /* 10.0.0.2:* tcp+udp maglev ipip, source hash */
#define SVC_WILD6  4 /* 2001:db8::2:* udp ring ipip, source hash */
#define SVC_4IN6   5 /* 10.0.0.3:80 tcp ring ipip to IPv6 backends */
#define SVC_MTU4   6 /* 10.0.0.4:80 tcp ipip mtu 1000 */
#define SVC_MTU6   7 /* 2001:db8::4:80 tcp ipip mtu 1280 */
#define SVC_EMPTY  8 /* 10.0.0.5:80 tcp, no backend */
#define SVC_SRC	   9 /* 10.0.0.6:80 tcp ipip, configured encap source */
#define SVC_UDP4WL 10

static int setup_services(void **state)
{
	struct chlb_service svc;
	struct chlb_vip_key key;
	__u8 a[16];

	add_service(SVC_TCP4, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, CHLB_ALGO_RING,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET, V4_FIRST, NBE);
	add_service(SVC_TCP6, CHLB_AF_INET6, "2001:db8::1", 443, IPPROTO_TCP, CHLB_ALGO_JUMP,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET6, V6_FIRST, NBE);
	add_service(SVC_WILD4, CHLB_AF_INET, "10.0.0.2", 0, IPPROTO_TCP, CHLB_ALGO_MAGLEV,
		    CHLB_FWD_IPIP, CHLB_HASH_SRC, CHLB_AF_INET, V4_FIRST, NBE);
	add_service(SVC_UDP4WL, CHLB_AF_INET, "10.0.0.2", 0, IPPROTO_UDP, CHLB_ALGO_MAGLEV,
		    CHLB_FWD_IPIP, CHLB_HASH_SRC, CHLB_AF_INET, V4_FIRST, NBE);
	add_service(SVC_WILD6, CHLB_AF_INET6, "2001:db8::2", 0, IPPROTO_UDP, CHLB_ALGO_RING,
		    CHLB_FWD_IPIP, CHLB_HASH_SRC, CHLB_AF_INET6, V6_FIRST, NBE);
	add_service(SVC_4IN6, CHLB_AF_INET, "10.0.0.3", 80, IPPROTO_TCP, CHLB_ALGO_RING,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET6, V6_FIRST, NBE);
	add_service(SVC_MTU4, CHLB_AF_INET, "10.0.0.4", 80, IPPROTO_TCP, CHLB_ALGO_JUMP,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET, V4_FIRST, NBE);
	add_service(SVC_MTU6, CHLB_AF_INET6, "2001:db8::4", 80, IPPROTO_TCP, CHLB_ALGO_JUMP,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET6, V6_FIRST, NBE);
	add_service(SVC_EMPTY, CHLB_AF_INET, "10.0.0.5", 80, IPPROTO_TCP, CHLB_ALGO_MAGLEV,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET, V4_FIRST, 0);
	add_service(SVC_SRC, CHLB_AF_INET, "10.0.0.6", 80, IPPROTO_TCP, CHLB_ALGO_MAGLEV,
		    CHLB_FWD_IPIP, 0, CHLB_AF_INET, V4_FIRST, NBE);

	inet_pton(AF_INET, "10.0.0.4", a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_get_service(dp, &key, &svc), 0);
	svc.mtu = 1000;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	inet_pton(AF_INET6, "2001:db8::4", a);
	chlb_dp_vip_key(&key, CHLB_AF_INET6, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_get_service(dp, &key, &svc), 0);
	svc.mtu = 1280;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	inet_pton(AF_INET, "10.0.0.6", a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_get_service(dp, &key, &svc), 0);
	memcpy(svc.encap_src,
	       ((const __u8[]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 100 }), 16);
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	return 0;
}

/* An ICMP error from a router about the VIP's reply packet to the client. */
static int build_icmp_err(__u8 *b, const struct fx_pkt *flow, __u8 type, __u8 code, int quote)
{
	struct fx_pkt reply = *flow;
	__u8 inner[256];
	int l2, ilen, hl, i;

	reply.src = flow->dst;
	reply.dst = flow->src;
	reply.sport = flow->dport;
	reply.dport = flow->sport;
	reply.flags = FX_ACK;
	reply.payload = 100;
	ilen = fx_build(inner, &reply) - 14;
	if (ilen > quote)
		ilen = quote;
	if (flow->family == CHLB_AF_INET) {
		hl = fx_icmp4_outer(b, flow->dst, ilen);
	} else {
		struct ipv6hdr *ip6;

		l2 = fx_l2(b, 0, ETH_P_IPV6);
		ip6 = (struct ipv6hdr *)(b + l2);
		memset(ip6, 0, 48);
		ip6->version = 6;
		ip6->payload_len = htons(8 + ilen);
		ip6->nexthdr = IPPROTO_ICMPV6;
		ip6->hop_limit = 64;
		inet_pton(AF_INET6, "2001:db8:ff::fe", &ip6->saddr);
		inet_pton(AF_INET6, flow->dst, &ip6->daddr);
		hl = l2 + 40;
	}
	b[hl] = type;
	b[hl + 1] = code;
	b[hl + 6] = 0x05; /* MTU 1400 */
	b[hl + 7] = 0x78;
	for (i = 0; i < ilen; i++)
		b[hl + 8 + i] = inner[14 + i];
	return hl + 8 + ilen;
}

/* ---- stickiness ---- */
#define SVC_STICK 11

static void set_view(__u32 id, const char *vip, __u32 n, const __u32 *ks)
{
	struct chlb_service svc = { .id = id, .fwd = CHLB_FWD_IPIP, .ntables = n };
	struct chlb_vip_key key;
	__u8 a[4];
	__u32 i;

	for (i = 0; i < n; i++)
		svc.table[i] = tslot_of(id, ks[i]);
	inet_pton(AF_INET, vip, a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
}

static int decide(const struct chlb_table *t, const struct fx_pkt *s)
{
	struct chlb_flow f;
	__u32 slot;

	fx_flow(&f, s);
	if (chlb_table_decide(t, chlb_flow_crc(&f, 0), &slot))
		return -1;
	return slot;
}

static int send_flow(struct fx_pkt *s, __u8 flags)
{
	__u8 in[256];

	s->flags = flags;
	return expect_fwd(in, fx_build(in, s), M_IP4);
}

#define FX_FIN 0x01
#define FX_RST 0x04

/* The flow's entry: 0 and its backend slot and flags, or -ENOENT. */
static int entry_of(const struct fx_pkt *s, struct chlb_conn *c)
{
	struct chlb_flow key;

	fx_flow(&key, s);
	return chlb_dp_conn_lookup(dp, &key, c);
}

/* A flow after `from` whose decision differs between t1 and t2. */
static struct fx_pkt moved_flow(const struct fx_pkt *from, const struct chlb_table *t1,
				const struct chlb_table *t2)
{
	struct fx_pkt f = *from;

	for (f.sport++; decide(t1, &f) == decide(t2, &f); f.sport++)
		;
	return f;
}

/* One suite: the shared services set up, the cases run, torn down. */
static int dp_suite_run(const char *name, const struct CMUnitTest *tests, size_t n)
{
	int rc;

	if (setup(NULL))
		return 1;
	setup_services(NULL);
	rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	teardown(NULL);
	return rc;
}

#endif /* CHLB_TEST_DP_SUITE_H */
