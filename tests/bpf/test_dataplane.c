// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data plane's packet suite: every case runs the same input through the
 * XDP and the TC entry point (same maps) with bpf_prog_test_run_opts() and
 * checks the verdict, the output bytes field by field (outer headers incl.
 * the IPv4 checksum; inner bytes untouched) and the reason counters.
 * Runs in a private network namespace.
 */
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

/* ---- cases ---- */

/* IPv4/IPv6 x TCP/UDP x ring/jump/maglev x l2dsr/ipip: SYN (or first) then a later packet. */
static void test_matrix(void **state)
{
	static const __u32 algos[] = { CHLB_ALGO_RING, CHLB_ALGO_JUMP, CHLB_ALGO_MAGLEV };
	static const __u8 fwds[] = { CHLB_FWD_L2DSR, CHLB_FWD_IPIP };
	static const __u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	__u32 a, f, fam, p, id = 20;
	__u8 in[256];

	for (a = 0; a < 3; a++)
		for (f = 0; f < 2; f++)
			for (fam = 0; fam < 2; fam++)
				for (p = 0; p < 2; p++, id++) {
					int v4 = fam == 0, n, s1, s2;
					char vip[64];
					struct fx_pkt s = {
						.family = v4 ? CHLB_AF_INET : CHLB_AF_INET6,
						.proto = protos[p],
						.src = v4 ? "198.51.100.7" : "2001:db8:c::7",
						.dst = vip,
						.sport = 40000 + id,
						.dport = 8080,
						.flags = FX_SYN,
						.payload = 10,
						.tos = 0x2e,
					};
					enum mode m = fwds[f] == CHLB_FWD_L2DSR ? M_L2
						      : v4			? M_IP4
										: M_IP6;

					snprintf(vip, sizeof(vip),
						 v4 ? "10.0.1.%u" : "2001:db8:1::%u", id);
					add_service(id, s.family, vip, 8080, s.proto, algos[a],
						    fwds[f], 0, s.family, v4 ? V4_FIRST : V6_FIRST,
						    NBE);
					stats_mark();
					n = fx_build(in, &s);
					s1 = expect_fwd(in, n, m);
					assert_int_equal(s1, expected_slot(id, &s, 0));
					s.flags = FX_ACK;
					n = fx_build(in, &s);
					s2 = expect_fwd(in, n, m);
					assert_int_equal(s1, s2);
					stats_delta(CHLB_R_FORWARDED, 4);
					/* TCP: the handshake ACK writes the entry (XDP; TC then hits
					 * it); UDP: one table, nothing to disagree about: no state */
					stats_delta(CHLB_R_CT_INSERT, protos[p] == IPPROTO_TCP);
				}
}

static void test_vlan_single_double(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.9",
			    .dst = "10.0.0.1",
			    .sport = 1234,
			    .dport = 80,
			    .flags = FX_SYN,
			    .payload = 5 };
	__u8 in[256];
	int n, want = expected_slot(SVC_TCP4, &s, 0);

	s.vlans = 1;
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP4), want);
	s.vlans = 2;
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP4), want);
	s.family = CHLB_AF_INET6;
	s.src = "2001:db8:c::9";
	s.dst = "2001:db8::1";
	s.dport = 443;
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_TCP6, &s, 0));
	/* three tags: not parsed */
	s.vlans = 3;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PARSE_VLAN);
}

static void test_ipv4_options(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.10",
			    .dst = "10.0.0.1",
			    .sport = 999,
			    .dport = 80,
			    .flags = FX_ACK,
			    .optlen = 12,
			    .payload = 3,
			    .tos = 0xb8 };
	__u8 in[256];
	int n = fx_build(in, &s);

	assert_int_equal(expect_fwd(in, n, M_IP4), expected_slot(SVC_TCP4, &s, 0));
	s.optlen = 40; /* the maximum: ihl 15 */
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP4), expected_slot(SVC_TCP4, &s, 0));
	/* ihl < 5 */
	n = fx_build(in, &s);
	in[14] = 0x44;
	expect_pass(in, n, CHLB_R_PARSE_IP4);
}

static void test_ipv6_ext_headers(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET6,
			    .proto = IPPROTO_TCP,
			    .src = "2001:db8:c::10",
			    .dst = "2001:db8::1",
			    .sport = 999,
			    .dport = 443,
			    .flags = FX_SYN,
			    .exthdrs = 2,
			    .payload = 8 };
	__u8 in[512];
	int n = fx_build(in, &s);

	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_TCP6, &s, 0));
	s.exthdrs = 4; /* as many as we walk */
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_TCP6, &s, 0));
	s.exthdrs = 5; /* one too many */
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PARSE_IP6);
}

static void test_fragments(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.11",
			    .dst = "10.0.0.1",
			    .sport = 5555,
			    .dport = 80,
			    .flags = FX_ACK,
			    .frag = 1,
			    .payload = 16 };
	__u8 in[256];
	int n, s1, s2, s3;

	/* 5-tuple service: every fragment goes to the kernel */
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_FRAGMENT);
	s.frag = 2;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_FRAGMENT);
	s.family = CHLB_AF_INET6;
	s.src = "2001:db8:c::11";
	s.dst = "2001:db8::1";
	s.dport = 443;
	s.frag = 1;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_FRAGMENT);

	/* source-hash wildcard service: fragments of a flow stay together */
	s = (struct fx_pkt){ .family = CHLB_AF_INET,
			     .proto = IPPROTO_UDP,
			     .src = "198.51.100.12",
			     .dst = "10.0.0.2",
			     .sport = 5353,
			     .dport = 53,
			     .frag = 1,
			     .payload = 32 };
	n = fx_build(in, &s);
	s1 = expect_fwd(in, n, M_IP4);
	s.frag = 2;
	n = fx_build(in, &s);
	s2 = expect_fwd(in, n, M_IP4);
	s.frag = 0;
	n = fx_build(in, &s);
	s3 = expect_fwd(in, n, M_IP4);
	assert_int_equal(s1, s2);
	assert_int_equal(s1, s3);
	assert_int_equal(s1, expected_slot(SVC_UDP4WL, &s, CHLB_HASH_SRC));

	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_UDP,
			     .src = "2001:db8:c::12",
			     .dst = "2001:db8::2",
			     .sport = 5353,
			     .dport = 53,
			     .frag = 1,
			     .exthdrs = 1,
			     .payload = 32 };
	n = fx_build(in, &s);
	s1 = expect_fwd(in, n, M_IP6);
	s.frag = 2;
	n = fx_build(in, &s);
	s2 = expect_fwd(in, n, M_IP6);
	assert_int_equal(s1, s2);
	assert_int_equal(s1, expected_slot(SVC_WILD6, &s, CHLB_HASH_SRC));
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
		struct iphdr *ip;

		l2 = fx_l2(b, 0, ETH_P_IP);
		ip = (struct iphdr *)(b + l2);
		memset(ip, 0, 28);
		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = htons(28 + ilen);
		ip->ttl = 64;
		ip->protocol = IPPROTO_ICMP;
		inet_pton(AF_INET, "192.0.2.254", &ip->saddr);
		inet_pton(AF_INET, flow->dst, &ip->daddr);
		ip->check = htons(fx_csum(ip, 20));
		hl = l2 + 20;
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

static void test_icmp_errors(void **state)
{
	static const struct {
		int family;
		__u8 type, code;
	} kinds[] = {
		{ CHLB_AF_INET, 3, 4 },	 /* fragmentation needed */
		{ CHLB_AF_INET, 3, 1 },	 /* host unreachable */
		{ CHLB_AF_INET, 3, 3 },	 /* port unreachable */
		{ CHLB_AF_INET, 11, 0 }, /* time exceeded */
		{ CHLB_AF_INET6, 2, 0 }, /* packet too big */
		{ CHLB_AF_INET6, 1, 4 }, /* destination (port) unreachable */
		{ CHLB_AF_INET6, 3, 0 }, /* time exceeded */
	};
	__u8 in[512];
	unsigned i;
	int n;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		int v4 = kinds[i].family == CHLB_AF_INET;
		struct fx_pkt flow = { .family = kinds[i].family,
				       .proto = IPPROTO_TCP,
				       .src = v4 ? "198.51.100.13" : "2001:db8:c::13",
				       .dst = v4 ? "10.0.0.1" : "2001:db8::1",
				       .sport = 33000 + i,
				       .dport = v4 ? 80 : 443 };
		int want = expected_slot(v4 ? SVC_TCP4 : SVC_TCP6, &flow, 0);

		n = build_icmp_err(in, &flow, kinds[i].type, kinds[i].code, v4 ? 28 : 48);
		stats_mark();
		assert_int_equal(expect_fwd(in, n, v4 ? M_IP4 : M_IP6), want);
		stats_delta(CHLB_R_ICMP_HANDLED, 2);
		/* truncated embedded header */
		n = build_icmp_err(in, &flow, kinds[i].type, kinds[i].code, v4 ? 22 : 42);
		expect_pass(in, n, CHLB_R_PARSE_L4);
	}
	/* echo request to a VIP: the kernel's business */
	{
		struct fx_pkt flow = { .family = CHLB_AF_INET,
				       .proto = IPPROTO_TCP,
				       .src = "198.51.100.13",
				       .dst = "10.0.0.1",
				       .sport = 1,
				       .dport = 80 };

		n = build_icmp_err(in, &flow, 8, 0, 28);
		expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	}
}

static void test_not_vip(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.14",
			    .dst = "10.9.9.9",
			    .sport = 1,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[256];
	int n = fx_build(in, &s);

	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	s.dst = "10.0.0.1"; /* VIP, other port, no wildcard */
	s.dport = 81;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	s.proto = IPPROTO_UDP; /* VIP port, other protocol */
	s.dport = 80;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	s.family = CHLB_AF_INET6;
	s.src = "2001:db8:c::14";
	s.dst = "2001:db8::99";
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	/* ARP */
	n = fx_l2(in, 0, ETH_P_ARP);
	memset(in + n, 0, 28);
	expect_pass(in, n + 28, CHLB_R_PASS_NOT_IP);
}

static void test_port0_wildcard(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.15",
			    .dst = "10.0.0.2",
			    .sport = 4444,
			    .flags = FX_SYN };
	__u8 in[256];
	int n, port, first = -1;

	for (port = 1; port < 65536; port += 8191) {
		s.dport = port;
		n = fx_build(in, &s);
		int got = expect_fwd(in, n, M_IP4);

		assert_int_equal(got, expected_slot(SVC_WILD4, &s, CHLB_HASH_SRC));
		if (first < 0)
			first = got;
		assert_int_equal(got, first); /* source hash: every port, one backend */
	}
}

/* Truncate a frame at every length below its L4 header's end: always passed. */
static void truncate_all(const __u8 *in, int l4end)
{
	__u8 out[2048];
	int len, prog;

	stats_mark();
	for (len = 14; len < l4end; len++)
		for (prog = 0; prog < 2; prog++) {
			__u32 olen = run(prog, in, len, out, W_PASS);

			assert_int_equal(olen, len);
			assert_memory_equal(out, in, len);
		}
	stats_delta(CHLB_R_FORWARDED, 0);
}

static void test_truncation(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.16",
			    .dst = "10.0.0.1",
			    .sport = 1,
			    .dport = 80,
			    .flags = FX_SYN,
			    .vlans = 2,
			    .optlen = 8 };
	struct chlb_global_stats g;
	__u8 in[256];
	int n = fx_build(in, &s);

	truncate_all(in, n); /* eth, 2 tags, IPv4 + options, TCP */
	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	assert_true(g.reason[CHLB_R_PARSE_ETH] - g0.reason[CHLB_R_PARSE_ETH] > 0);
	/* cut inside TCP: the IPv4 total length no longer fits the frame */
	assert_true(g.reason[CHLB_R_PARSE_IP4] - g0.reason[CHLB_R_PARSE_IP4] > 0);
	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_UDP,
			     .src = "2001:db8:c::16",
			     .dst = "2001:db8::2",
			     .sport = 1,
			     .dport = 53,
			     .exthdrs = 2,
			     .vlans = 1 };
	n = fx_build(in, &s);
	truncate_all(in, n); /* eth, tag, IPv6, 2 ext headers, UDP */
	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	assert_true(g.reason[CHLB_R_PARSE_IP6] - g0.reason[CHLB_R_PARSE_IP6] > 0);
	/* a full frame of either shape is forwarded */
	assert_true(expect_fwd(in, n, M_IP6) >= V6_FIRST);
}

/*
 * Headers that lie: a TCP data offset under 5 words, SYN with RST or FIN,
 * an IP length beyond the frame, and an ICMP error addressed to the LB
 * itself rather than to the VIP it quotes. Each is counted by its reason
 * and passed (or dropped) untouched; none reaches a backend or writes state.
 */
static void test_malformed_headers(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.19",
			    .dst = "10.0.0.1",
			    .sport = 4000,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[512], out[512];
	int n, prog;

	n = fx_build(in, &s);
	in[14 + 20 + 12] = 4 << 4; /* data offset 4 words */
	expect_pass(in, n, CHLB_R_PARSE_L4);

	s.flags = FX_SYN | 0x04; /* SYN+RST */
	n = fx_build(in, &s);
	stats_mark();
	for (prog = 0; prog < 2; prog++)
		run(prog, in, n, out, W_DROP);
	stats_delta(CHLB_R_DROP_TCP_FLAGS, 2);
	s.flags = FX_SYN | 0x01; /* SYN+FIN */
	n = fx_build(in, &s);
	stats_mark();
	for (prog = 0; prog < 2; prog++)
		run(prog, in, n, out, W_DROP);
	stats_delta(CHLB_R_DROP_TCP_FLAGS, 2);

	s.flags = FX_ACK;
	n = fx_build(in, &s);
	in[14 + 2] = (__u8)((n - 14 + 1) >> 8); /* total length one byte beyond the frame */
	in[14 + 3] = (__u8)(n - 14 + 1);
	expect_pass(in, n, CHLB_R_PARSE_IP4);
	in[14 + 2] = 0;
	in[14 + 3] = 19; /* shorter than its own header */
	expect_pass(in, n, CHLB_R_PARSE_IP4);

	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::19",
			     .dst = "2001:db8::1",
			     .sport = 4000,
			     .dport = 443,
			     .flags = FX_ACK };
	n = fx_build(in, &s);
	in[14 + 4] = (__u8)((n - 14 - 40 + 1) >> 8); /* payload one byte beyond the frame */
	in[14 + 5] = (__u8)(n - 14 - 40 + 1);
	expect_pass(in, n, CHLB_R_PARSE_IP6);

	/* ICMP errors about a VIP flow, sent to the LB's own address */
	s = (struct fx_pkt){ .family = CHLB_AF_INET,
			     .proto = IPPROTO_TCP,
			     .src = "198.51.100.19",
			     .dst = "10.0.0.1",
			     .sport = 4001,
			     .dport = 80 };
	n = build_icmp_err(in, &s, 3, 4, 28);
	inet_pton(AF_INET, "192.0.2.1", in + 14 + 16);
	expect_pass(in, n, CHLB_R_PASS_ICMP_LOCAL);
	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::19",
			     .dst = "2001:db8::1",
			     .sport = 4001,
			     .dport = 443 };
	n = build_icmp_err(in, &s, 2, 0, 48);
	inet_pton(AF_INET6, "2001:db8:ff::1", in + 14 + 24);
	expect_pass(in, n, CHLB_R_PASS_ICMP_LOCAL);
}

static void test_4in6_and_encap_src(void **state)
{
	static const __u8 src4[4] = { 192, 0, 2, 100 };
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.17",
			    .dst = "10.0.0.3",
			    .sport = 7,
			    .dport = 80,
			    .flags = FX_SYN,
			    .tos = 0x48 };
	__u8 in[256], out[512];
	int n = fx_build(in, &s), prog;

	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_4IN6, &s, 0));
	s.dst = "10.0.0.6";
	n = fx_build(in, &s);
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_TX);

		assert_int_equal(check_fwd(in, n, out, len, M_IP4, src4),
				 expected_slot(SVC_SRC, &s, 0));
	}
}

static void test_no_backend(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.18",
			    .dst = "10.0.0.5",
			    .sport = 7,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[256];
	int n = fx_build(in, &s);

	expect_drop(in, n, CHLB_R_NO_BACKEND);
}

static void test_too_big(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.19",
			    .dst = "10.0.0.4",
			    .sport = 7,
			    .dport = 80,
			    .flags = FX_ACK,
			    .payload = 1000,
			    .df = 1 };
	__u8 in[2048], out[2048];
	int n = fx_build(in, &s), prog;

	stats_mark();
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_TX);
		const __u8 *ip = out + 14, *ic = out + 34;

		assert_int_equal(len, 14 + 20 + 8 + 28);
		assert_memory_equal(out, fx_client_mac, 6);
		assert_memory_equal(out + 6, fx_lb_mac, 6);
		assert_int_equal(ip[0], 0x45);
		assert_int_equal((ip[2] << 8) | ip[3], 56);
		assert_int_equal(ip[9], IPPROTO_ICMP);
		assert_int_equal(fx_csum(ip, 20), 0);
		assert_memory_equal(ip + 12, in + 14 + 16, 4); /* from the VIP */
		assert_memory_equal(ip + 16, in + 14 + 12, 4); /* to the client */
		assert_int_equal(ic[0], 3);
		assert_int_equal(ic[1], 4);
		assert_int_equal((ic[6] << 8) | ic[7], 1000 - 20);
		assert_int_equal(fx_csum(ic, 36), 0);
		assert_memory_equal(ic + 8, in + 14, 28); /* quoted header + 8 */
	}
	stats_delta(CHLB_R_TOO_BIG, 2);
	/* without DF: forwarded as is */
	s.df = 0;
	n = fx_build(in, &s);
	expect_fwd(in, n, M_IP4);
	/* just fits */
	s.df = 1;
	s.payload = 1000 - 20 - 20 - 20;
	n = fx_build(in, &s);
	expect_fwd(in, n, M_IP4);

	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::19",
			     .dst = "2001:db8::4",
			     .sport = 7,
			     .dport = 80,
			     .flags = FX_ACK,
			     .payload = 1300 };
	n = fx_build(in, &s);
	stats_mark();
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_TX);
		const __u8 *ip = out + 14, *ic = out + 54;
		__u8 pseudo[40 + 56];

		assert_int_equal(len, 14 + 40 + 8 + 48);
		assert_memory_equal(out, fx_client_mac, 6);
		assert_int_equal(ip[0] >> 4, 6);
		assert_int_equal((ip[4] << 8) | ip[5], 56);
		assert_int_equal(ip[6], 58);
		assert_memory_equal(ip + 8, in + 14 + 24, 16);
		assert_memory_equal(ip + 24, in + 14 + 8, 16);
		assert_int_equal(ic[0], 2);
		assert_int_equal((ic[4] << 24) | (ic[5] << 16) | (ic[6] << 8) | ic[7], 1280 - 40);
		assert_memory_equal(ic + 8, in + 14, 48);
		memset(pseudo, 0, sizeof(pseudo));
		memcpy(pseudo, ip + 8, 32);
		pseudo[35] = 56;
		pseudo[39] = 58;
		memcpy(pseudo + 40, ic, 56);
		assert_int_equal(fx_csum(pseudo, sizeof(pseudo)), 0);
	}
	stats_delta(CHLB_R_TOO_BIG, 2);
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

/*
 * The stickiness rules of bpf/chlb_stick.h, one packet at a time. Every
 * send runs XDP then TC on the same frame, so each counter moves twice
 * unless the first run changed state (an insert, then a hit).
 */
static void test_sticky(void **state)
{
	struct chlb_table t1 = { 0 }, t2 = { 0 }, t3 = { 0 };
	__u32 s1[] = { 50, 51, 52, 53, 54, 55, 56, 57 }, s2[9], s3[8], i, j;
	const struct fx_pkt base = { .family = CHLB_AF_INET,
				     .proto = IPPROTO_TCP,
				     .src = "198.51.100.20",
				     .dst = "10.0.0.7",
				     .dport = 80 };
	struct fx_pkt f, g, h, u;
	struct chlb_backend be;
	struct chlb_conn c;
	int d1, d2, d3;

	memcpy(s2, s1, sizeof(s1));
	s2[8] = 58;
	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 0), CHLB_ALGO_RING, s1, 8, CHLB_AF_INET, &t1), 0);
	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 1), CHLB_ALGO_RING, s2, 9, CHLB_AF_INET, &t2), 0);
	/* flows whose decision the membership change (add 58) moves */
	f = moved_flow(&base, &t1, &t2);
	g = moved_flow(&f, &t1, &t2);
	h = moved_flow(&g, &t1, &t2);
	d1 = decide(&t1, &f);
	d2 = decide(&t2, &f);

	/* a SYN writes nothing; the handshake ACK writes the entry */
	set_view(SVC_STICK, "10.0.0.7", 1, (const __u32[]){ 0 });
	stats_mark();
	assert_int_equal(send_flow(&f, FX_SYN), d1);
	stats_delta(CHLB_R_CT_INSERT, 0);
	assert_int_equal(entry_of(&f, &c), -ENOENT);
	assert_int_equal(send_flow(&f, FX_ACK), d1);
	stats_delta(CHLB_R_CT_INSERT, 1); /* XDP inserted; TC then hit */
	stats_delta(CHLB_R_CT_HIT, 1);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.backend, d1);
	assert_int_equal(c.gen, 1);
	assert_int_equal(c.flags, 0);

	/* g's SYN is decided by t1; the change lands before its handshake ACK */
	assert_int_equal(send_flow(&g, FX_SYN), decide(&t1, &g));
	set_view(SVC_STICK, "10.0.0.7", 2, (const __u32[]){ 1, 0 });
	stats_mark();
	assert_int_equal(send_flow(&g, FX_ACK), decide(&t1, &g)); /* the SYN's table */
	stats_delta(CHLB_R_CT_INSERT, 1);
	assert_int_equal(send_flow(&f, FX_ACK), d1);
	stats_delta(CHLB_R_CT_HIT, 3);

	/* history gone (the window passed): entries alone keep both */
	set_view(SVC_STICK, "10.0.0.7", 1, (const __u32[]){ 1 });
	stats_mark();
	assert_int_equal(send_flow(&f, FX_ACK | 0x08), d1);
	assert_int_equal(send_flow(&g, FX_ACK), decide(&t1, &g));
	stats_delta(CHLB_R_CT_HIT, 4);
	stats_delta(CHLB_R_CT_INSERT, 0);

	/* a SYN for a connection that has not ended follows its entry (spoof, retransmission) */
	stats_mark();
	assert_int_equal(send_flow(&f, FX_SYN), d1);
	stats_delta(CHLB_R_SYN_KEPT, 2);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.backend, d1);

	/* the client's FIN ends it; its later packets still follow the entry ... */
	assert_int_equal(send_flow(&f, FX_ACK | FX_FIN), d1);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.flags, CHLB_CONN_F_ENDED);
	assert_int_equal(send_flow(&f, FX_ACK), d1);
	/* ... and a SYN on the 5-tuple is a reuse: the current table, entry rewritten */
	stats_mark();
	assert_int_equal(send_flow(&f, FX_SYN), d2);
	stats_delta(CHLB_R_SYN_REUSE, 1); /* XDP rewrote it; TC then follows the new entry */
	stats_delta(CHLB_R_SYN_KEPT, 1);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.backend, d2);
	assert_int_equal(c.flags, 0);
	assert_int_equal(send_flow(&f, FX_ACK), d2);

	/* RST ends a connection too */
	assert_int_equal(send_flow(&g, FX_RST), decide(&t1, &g));
	assert_int_equal(entry_of(&g, &c), 0);
	assert_int_equal(c.flags, CHLB_CONN_F_ENDED);
	assert_int_equal(send_flow(&g, FX_SYN), decide(&t2, &g));

	/* non-SYN packets of a flow whose SYN was not seen: no entry while the tables agree */
	u = base;
	u.sport = 30000;
	stats_mark();
	assert_int_equal(send_flow(&u, FX_ACK), decide(&t2, &u));
	stats_delta(CHLB_R_CT_INSERT, 0);
	assert_int_equal(entry_of(&u, &c), -ENOENT);
	/* ... and with the tables disagreeing, the oldest table and an entry */
	set_view(SVC_STICK, "10.0.0.7", 2, (const __u32[]){ 1, 0 });
	assert_int_equal(send_flow(&h, FX_ACK), decide(&t1, &h));
	assert_int_equal(entry_of(&h, &c), 0);
	assert_int_equal(c.backend, decide(&t1, &h));
	/* a FIN or RST without an entry writes none */
	u = moved_flow(&h, &t1, &t2);
	assert_int_equal(send_flow(&u, FX_ACK | FX_FIN), decide(&t1, &u));
	assert_int_equal(entry_of(&u, &c), -ENOENT);

	/* backend d1 removed and its slot immediately reoccupied (generation 2) */
	assert_int_equal(send_flow(&g, FX_ACK), decide(&t2, &g)); /* g was reused onto t2 */
	h = moved_flow(&h, &t1, &t2);
	while (decide(&t1, &h) != d1)
		h = moved_flow(&h, &t1, &t2);
	assert_int_equal(send_flow(&h, FX_ACK), d1); /* oldest table, entry (disagree) */
	for (i = 0, j = 0; i < 9; i++)
		if (s2[i] != (__u32)d1)
			s3[j++] = s2[i];
	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 2), CHLB_ALGO_RING, s3, 8, CHLB_AF_INET, &t3), 0);
	fx_backend(&be, d1, CHLB_AF_INET, 2);
	assert_int_equal(chlb_dp_set_backend(dp, d1, &be), 0);
	set_view(SVC_STICK, "10.0.0.7", 1, (const __u32[]){ 2 });
	d3 = decide(&t3, &h);
	assert_int_not_equal(d3, d1);
	stats_mark();
	/* never to the new occupant of d1: re-decided from the current table */
	assert_int_equal(send_flow(&h, FX_ACK), d3);
	stats_delta(CHLB_R_CT_STALE, 1);
	assert_int_equal(entry_of(&h, &c), 0);
	assert_int_equal(c.backend, d3);
	/* that connection is broken (d3 resets it): the next SYN is a reuse */
	assert_int_equal(c.flags, CHLB_CONN_F_ENDED);

	/* a dead backend: entry-less flows whose oldest table names it re-decide */
	be.state = CHLB_BE_DEAD;
	assert_int_equal(chlb_dp_set_backend(dp, d1, &be), 0);
	set_view(SVC_STICK, "10.0.0.7", 2, (const __u32[]){ 2, 0 });
	u = base;
	for (u.sport = 20000; decide(&t1, &u) != d1; u.sport++)
		;
	assert_int_equal(send_flow(&u, FX_ACK), decide(&t3, &u));
	chlb_table_free(&t1);
	chlb_table_free(&t2);
	chlb_table_free(&t3);
	fx_backend(&be, d1, CHLB_AF_INET, 1);
	assert_int_equal(chlb_dp_set_backend(dp, d1, &be), 0);
}

/* A live change of the hash fields keeps established connections: the entry key ignores them. */
static void test_hash_change_keeps_entries(void **state)
{
	struct fx_pkt f = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.30",
			    .dst = "10.0.0.7",
			    .dport = 80,
			    .sport = 1234 };
	struct chlb_service svc;
	struct chlb_vip_key key;
	struct chlb_conn c;
	struct chlb_table t = { 0 };
	__u32 s[] = { 50, 51, 52, 53, 54, 55, 56, 57 };
	__u8 a[4];
	int d;

	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 3), CHLB_ALGO_MAGLEV, s, 8, CHLB_AF_INET, &t), 0);
	set_view(SVC_STICK, "10.0.0.7", 1, (const __u32[]){ 3 });
	d = decide(&t, &f);
	assert_int_equal(send_flow(&f, FX_SYN), d);
	assert_int_equal(send_flow(&f, FX_ACK), d);
	assert_int_equal(entry_of(&f, &c), 0);
	inet_pton(AF_INET, "10.0.0.7", a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_get_service(dp, &key, &svc), 0);
	svc.hash_fields = CHLB_HASH_SRC;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	/* find a source port whose new decision differs: the entry must still win */
	for (;; f.sport++) {
		struct chlb_flow fl;
		__u32 slot;

		fx_flow(&fl, &f);
		assert_int_equal(chlb_table_decide(&t, chlb_flow_crc(&fl, CHLB_HASH_SRC), &slot),
				 0);
		if ((int)slot != decide(&t, &f))
			break;
	}
	d = decide(&t, &f);
	svc.hash_fields = 0;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	assert_int_equal(send_flow(&f, FX_SYN), d);
	assert_int_equal(send_flow(&f, FX_ACK), d);
	svc.hash_fields = CHLB_HASH_SRC;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	assert_int_equal(send_flow(&f, FX_ACK), d);
	chlb_table_free(&t);
}

/* ICMP errors quoting made-up flows during a change window write no connection entries. */
static void test_icmp_writes_no_state(void **state)
{
	struct chlb_table t1 = { 0 }, t2 = { 0 };
	__u32 s1[] = { 50, 51, 52, 53, 54, 55, 56, 57 }, s2[9];
	struct fx_pkt f = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.40",
			    .dst = "10.0.0.7",
			    .dport = 80 };
	struct chlb_flow key;
	struct chlb_conn c;
	__u8 in[512];
	int n, moved = 0;

	memcpy(s2, s1, sizeof(s1));
	s2[8] = 58;
	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 4), CHLB_ALGO_RING, s1, 8, CHLB_AF_INET, &t1), 0);
	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 5), CHLB_ALGO_RING, s2, 9, CHLB_AF_INET, &t2), 0);
	set_view(SVC_STICK, "10.0.0.7", 2, (const __u32[]){ 5, 4 });
	stats_mark();
	for (f.sport = 1; f.sport <= 400; f.sport++) {
		moved += decide(&t1, &f) != decide(&t2, &f);
		n = build_icmp_err(in, &f, 3, 4, 28);
		/* the oldest table, as an entry-less flow */
		assert_int_equal(expect_fwd(in, n, M_IP4), decide(&t1, &f));
		fx_flow(&key, &f);
		assert_int_equal(chlb_dp_conn_lookup(dp, &key, &c), -ENOENT);
	}
	assert_true(moved > 0); /* the tables disagree about some: they would have written */
	stats_delta(CHLB_R_CT_INSERT, 0);
	chlb_table_free(&t1);
	chlb_table_free(&t2);
}

/* The data plane's clock (CLOCK_MONOTONIC_COARSE, bpf_ktime_get_coarse_ns). */
static __u64 coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* One ICMP error quoting s through both entry points, to backend want; s's entry unchanged. */
static void icmp_keeps_entry(const struct fx_pkt *s, __u8 type, __u8 code, enum mode m, int want)
{
	struct chlb_conn before, after;
	__u8 in[512];
	int n;

	assert_int_equal(entry_of(s, &before), 0);
	n = build_icmp_err(in, s, type, code, m == M_IP4 ? 28 : 48);
	assert_int_equal(expect_fwd(in, n, m), want);
	assert_int_equal(entry_of(s, &after), 0);
	assert_memory_equal(&after, &before, sizeof(after));
}

/*
 * An ICMP error (fragmentation needed, packet too big) about a flow whose
 * entry is stale - its slot reoccupied, or a held placeholder past
 * CHLB_CONN_HELD_MAX_NS - goes where the current table says and leaves the
 * entry as it was: ICMP errors follow entries and never write one. Both
 * XDP and TC see it stale (the first run wrote nothing), no new flow is
 * counted, and the flow's next ACK still re-decides and rewrites it.
 */
static void test_icmp_keeps_stale_entries(void **state)
{
	__u32 s4[] = { 40, 41, 42, 43 }, s6[] = { 44, 45, 46, 47 }, i;
	struct chlb_table t4 = { 0 }, t6 = { 0 };
	struct fx_pkt f = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.41",
			    .dst = "10.0.0.9",
			    .sport = 4100,
			    .dport = 80 },
		      h = f,
		      v6 = { .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::41",
			     .dst = "2001:db8::9",
			     .sport = 4100,
			     .dport = 80 };
	struct chlb_counters c0, c1;
	struct chlb_backend be;
	struct chlb_flow key;
	struct chlb_conn c;
	int d, d6;

	for (i = 0; i < 4; i++) {
		fx_backend(&be, s6[i], CHLB_AF_INET6, 1);
		assert_int_equal(chlb_dp_set_backend(dp, s6[i], &be), 0);
	}
	assert_int_equal(fx_table(dp, tslot_of(13, 0), CHLB_ALGO_MAGLEV, s4, 4, CHLB_AF_INET, &t4),
			 0);
	assert_int_equal(fx_service(dp, CHLB_AF_INET, "10.0.0.9", 80, IPPROTO_TCP, 13,
				    CHLB_FWD_IPIP, 0, tslot_of(13, 0)),
			 0);
	assert_int_equal(fx_table(dp, tslot_of(14, 0), CHLB_ALGO_MAGLEV, s6, 4, CHLB_AF_INET6, &t6),
			 0);
	assert_int_equal(fx_service(dp, CHLB_AF_INET6, "2001:db8::9", 80, IPPROTO_TCP, 14,
				    CHLB_FWD_IPIP, 0, tslot_of(14, 0)),
			 0);
	d = decide(&t4, &f);
	d6 = decide(&t6, &v6);
	/* connections with entries, then their slots reoccupied (generation 2): stale */
	assert_int_equal(send_flow(&f, FX_SYN), d);
	assert_int_equal(send_flow(&f, FX_ACK), d);
	v6.flags = FX_SYN;
	{
		__u8 in[256];

		assert_int_equal(expect_fwd(in, fx_build(in, &v6), M_IP6), d6);
		v6.flags = FX_ACK;
		assert_int_equal(expect_fwd(in, fx_build(in, &v6), M_IP6), d6);
	}
	assert_int_equal(entry_of(&v6, &c), 0);
	assert_int_equal(c.backend, d6);
	fx_backend(&be, d, CHLB_AF_INET, 2);
	assert_int_equal(chlb_dp_set_backend(dp, d, &be), 0);
	fx_backend(&be, d6, CHLB_AF_INET6, 2);
	assert_int_equal(chlb_dp_set_backend(dp, d6, &be), 0);

	assert_int_equal(chlb_dp_read_service_stats(dp, 13, &c0), 0);
	stats_mark();
	icmp_keeps_entry(&f, 3, 4, M_IP4, d); /* fragmentation needed */
	stats_delta(CHLB_R_CT_STALE, 2);
	stats_delta(CHLB_R_ICMP_HANDLED, 2);
	stats_delta(CHLB_R_CT_HIT, 0);
	assert_int_equal(chlb_dp_read_service_stats(dp, 13, &c1), 0);
	assert_int_equal(c1.new_flows, c0.new_flows);
	assert_int_equal(c1.packets, c0.packets + 2);
	stats_mark();
	icmp_keeps_entry(&v6, 2, 0, M_IP6, d6); /* packet too big */
	stats_delta(CHLB_R_CT_STALE, 2);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.gen, 1);

	/* a placeholder chlbd left past the wait: stale too, and kept as it is */
	h.sport = 4101;
	fx_flow(&key, &h);
	assert_int_equal(
	    chlb_dp_sync_hold(dp, &key, coarse_now() - CHLB_CONN_HELD_MAX_NS - 1000000000ull), 0);
	stats_mark();
	icmp_keeps_entry(&h, 3, 4, M_IP4, decide(&t4, &h));
	stats_delta(CHLB_R_CT_STALE, 2);
	stats_delta(CHLB_R_HELD, 0);
	assert_int_equal(entry_of(&h, &c), 0);
	assert_int_equal(c.backend, CHLB_CONN_HELD_SLOT);
	assert_int_equal(c.flags, CHLB_CONN_F_HELD);

	/* the client's next packet is the one that re-decides and rewrites */
	stats_mark();
	assert_int_equal(send_flow(&f, FX_ACK), d);
	stats_delta(CHLB_R_CT_STALE, 1);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.backend, d);
	assert_int_equal(c.gen, 2);
	assert_int_equal(send_flow(&h, FX_ACK), decide(&t4, &h));
	assert_int_equal(entry_of(&h, &c), 0);
	assert_int_equal(c.backend, decide(&t4, &h));
	assert_int_equal(c.flags, 0);

	fx_backend(&be, d, CHLB_AF_INET, 1);
	assert_int_equal(chlb_dp_set_backend(dp, d, &be), 0);
	chlb_table_free(&t4);
	chlb_table_free(&t6);
}

/*
 * The idle-timeout tests' data plane, loaded with opts: backends 50-56,
 * Maglev tables in slots 6 (50-55) and 7 (50-56), and f's source port set
 * to the first flow the added backend moves. Replaces the shared dp until
 * idle_fixture_close().
 */
struct idle_fixture {
	struct chlb_dp *saved;
	struct chlb_table t1, t2;
};

static void idle_fixture_open(struct idle_fixture *x, const struct chlb_dp_opts *opts,
			      struct fx_pkt *f)
{
	__u32 s1[] = { 50, 51, 52, 53, 54, 55 }, s2[] = { 50, 51, 52, 53, 54, 55, 56 }, i;
	struct chlb_backend be;
	char err[256];

	memset(x, 0, sizeof(*x));
	x->saved = dp;
	assert_int_equal(chlb_dp_open(opts, &dp, err, sizeof(err)), 0);
	for (i = 50; i < 57; i++) {
		fx_backend(&be, i, CHLB_AF_INET, 1);
		assert_int_equal(chlb_dp_set_backend(dp, i, &be), 0);
	}
	assert_int_equal(fx_table(dp, 6, CHLB_ALGO_MAGLEV, s1, 6, CHLB_AF_INET, &x->t1), 0);
	assert_int_equal(fx_table(dp, 7, CHLB_ALGO_MAGLEV, s2, 7, CHLB_AF_INET, &x->t2), 0);
	for (f->sport = 1; decide(&x->t1, f) == decide(&x->t2, f); f->sport++)
		;
}

static void idle_fixture_close(struct idle_fixture *x)
{
	chlb_table_free(&x->t1);
	chlb_table_free(&x->t2);
	chlb_dp_close(dp);
	dp = x->saved;
}

/* UDP entries expire after the idle timeout (a data plane loaded with 100 ms). */
static void test_udp_idle(void **state)
{
	struct chlb_dp_opts o = { .udp_idle_ms = 100, .conn_max = 1024 };
	struct fx_pkt f = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_UDP,
			    .src = "198.51.100.21",
			    .dst = "10.0.0.7",
			    .dport = 80 };
	struct chlb_service svc = { .id = 1, .fwd = CHLB_FWD_IPIP, .ntables = 2 };
	struct idle_fixture x;
	struct chlb_table t1, t2;
	struct chlb_vip_key key;
	__u8 a[4], in[256];
	int n;

	idle_fixture_open(&x, &o, &f);
	t1 = x.t1;
	t2 = x.t2;
	svc.table[0] = 7;
	svc.table[1] = 6;
	inet_pton(AF_INET, "10.0.0.7", a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_UDP);
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	n = fx_build(in, &f);
	assert_int_equal(expect_fwd(in, n, M_IP4), decide(&t1, &f)); /* oldest, entry written */
	svc.ntables = 1;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	assert_int_equal(expect_fwd(in, n, M_IP4), decide(&t1, &f)); /* active: sticks */
	usleep(250 * 1000);
	stats_mark();
	assert_int_equal(expect_fwd(in, n, M_IP4), decide(&t2, &f)); /* idle: re-decided */
	stats_delta(CHLB_R_CT_STALE, 1);
	idle_fixture_close(&x);
}

/*
 * --tcp-timeout-ms (a data plane loaded with 300 ms): an idle connection's
 * entry is re-decided from the current table and marked ended when that
 * moves it (not when it stays on its backend); an active one keeps it.
 */
static void test_tcp_idle(void **state)
{
	struct chlb_dp_opts o = { .tcp_idle_ms = 300, .conn_max = 1024 };
	struct fx_pkt f = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.22",
			    .dst = "10.0.0.7",
			    .dport = 80 };
	struct chlb_service svc = { .id = 1, .fwd = CHLB_FWD_IPIP, .ntables = 1 };
	struct idle_fixture x;
	struct chlb_table t1, t2;
	struct chlb_vip_key key;
	struct chlb_conn c;
	__u8 a[4];

	idle_fixture_open(&x, &o, &f);
	t1 = x.t1;
	t2 = x.t2;
	svc.table[0] = 6;
	inet_pton(AF_INET, "10.0.0.7", a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	assert_int_equal(send_flow(&f, FX_SYN), decide(&t1, &f));
	assert_int_equal(send_flow(&f, FX_ACK), decide(&t1, &f)); /* the entry, with its time */
	assert_int_equal(entry_of(&f, &c), 0);
	assert_true(c.last_ns > 0);
	svc.table[0] = 7; /* a change that moves the flow; no history */
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	assert_int_equal(send_flow(&f, FX_ACK), decide(&t1, &f)); /* not idle: sticks */
	usleep(450 * 1000);
	stats_mark();
	assert_int_equal(send_flow(&f, FX_ACK), decide(&t2, &f)); /* idle: re-decided */
	stats_delta(CHLB_R_CT_STALE, 1);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.flags, CHLB_CONN_F_ENDED);
	/*
	 * Idle, but the current table keeps it on its backend: re-decided onto
	 * the same one, and not ended - the connection goes on (conns, CONNS)
	 */
	f.sport = 4242;
	assert_int_equal(send_flow(&f, FX_SYN), decide(&t2, &f));
	assert_int_equal(send_flow(&f, FX_ACK), decide(&t2, &f));
	usleep(450 * 1000);
	stats_mark();
	assert_int_equal(send_flow(&f, FX_ACK), decide(&t2, &f));
	stats_delta(CHLB_R_CT_STALE, 1);
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.flags, 0);
	/* the same with the client's FIN: that one ends it */
	usleep(450 * 1000);
	assert_int_equal(send_flow(&f, FX_ACK | FX_FIN), decide(&t2, &f));
	assert_int_equal(entry_of(&f, &c), 0);
	assert_int_equal(c.flags, CHLB_CONN_F_ENDED);
	idle_fixture_close(&x);
}

/*
 * The insert budget (a data plane loaded with 1 entry per second per CPU):
 * an ACK flood of flows the view's tables disagree about, none of whose
 * SYN was seen, writes at most the budget's entries, and every packet
 * still goes where the oldest table says; a flow without one gets its
 * entry with a packet after the budget refills; a handshake (its SYN seen)
 * writes its entry whatever the budget.
 */
static void test_insert_budget(void **state)
{
	struct chlb_dp_opts o = { .moved_inserts_per_s = 1, .conn_max = 1024 };
	struct fx_pkt f = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.23",
			    .dst = "10.0.0.7",
			    .dport = 80 };
	struct chlb_service svc = { .id = 1, .fwd = CHLB_FWD_IPIP, .ntables = 2 };
	struct chlb_global_stats a, b;
	struct fx_pkt flows[20], h;
	struct idle_fixture x;
	struct timespec t0, t1;
	struct chlb_vip_key key;
	struct chlb_conn c;
	__u64 ins, skipped, secs;
	int i, with = 0;
	__u8 addr[4];

	idle_fixture_open(&x, &o, &f);
	svc.table[0] = 7; /* {new, old}: an added backend moved some flows */
	svc.table[1] = 6;
	inet_pton(AF_INET, "10.0.0.7", addr);
	chlb_dp_vip_key(&key, CHLB_AF_INET, addr, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
	flows[0] = f;
	for (i = 1; i < 20; i++)
		flows[i] = moved_flow(&flows[i - 1], &x.t1, &x.t2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(chlb_dp_read_global(dp, &a), 0);
	for (i = 0; i < 20; i++) /* each: the oldest table, with or without an entry */
		assert_int_equal(send_flow(&flows[i], FX_ACK), decide(&x.t1, &flows[i]));
	assert_int_equal(chlb_dp_read_global(dp, &b), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < 20; i++) {
		if (entry_of(&flows[i], &c))
			continue;
		assert_int_equal(c.backend, decide(&x.t1, &flows[i]));
		with++;
	}
	ins = b.reason[CHLB_R_CT_INSERT] - a.reason[CHLB_R_CT_INSERT];
	skipped = b.reason[CHLB_R_CT_NO_BUDGET] - a.reason[CHLB_R_CT_NO_BUDGET];
	secs = (__u64)(t1.tv_sec - t0.tv_sec) + 1;
	/*
	 * XDP then TC per send: an insert at XDP makes TC hit, a skip at both
	 * counts twice, and a refill between the two makes TC insert
	 */
	assert_int_equal(ins, (__u64)with);
	assert_true(skipped >= 2 * (20 - ins) && skipped <= 2 * (20 - ins) + ins);
	if (ins < 1 || ins > 1 + secs)
		fail_msg("%llu entries in %llu s at 1 a second", (unsigned long long)ins,
			 (unsigned long long)secs);
	/* a flow left without one tries again with each packet: the budget refilled */
	for (i = 0; !entry_of(&flows[i], &c); i++)
		;
	usleep(1100 * 1000);
	assert_int_equal(send_flow(&flows[i], FX_ACK), decide(&x.t1, &flows[i]));
	assert_int_equal(entry_of(&flows[i], &c), 0);
	assert_int_equal(c.backend, decide(&x.t1, &flows[i]));
	/* the budget spent (the refill above took it), a handshake still writes its entry */
	h = moved_flow(&flows[19], &x.t1, &x.t2);
	assert_int_equal(send_flow(&h, FX_ACK), decide(&x.t1, &h)); /* spends any token left */
	h = moved_flow(&h, &x.t1, &x.t2);
	stats_mark();
	assert_int_equal(send_flow(&h, FX_SYN), decide(&x.t2, &h));
	assert_int_equal(send_flow(&h, FX_ACK), decide(&x.t2, &h));
	stats_delta(CHLB_R_CT_INSERT, 1);
	stats_delta(CHLB_R_CT_NO_BUDGET, 0);
	assert_int_equal(entry_of(&h, &c), 0);
	assert_int_equal(c.backend, decide(&x.t2, &h));
	idle_fixture_close(&x);
}

/*
 * Next hop from the kernel: bpf_fib_lookup without a cached one, and
 * chlb_nh_resolve; a backend without a route: drop_no_route, per backend.
 */
static void test_fib_and_nexthop(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.22",
			    .dst = "10.0.0.8",
			    .sport = 7,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[256], out[512], mac[6] = { 0x02, 0, 0, 0, 0, 0x78 }, a[4];
	struct chlb_table t = { 0 };
	struct chlb_counters b0, b1, s0, s1;
	struct chlb_backend be;
	struct chlb_nh nh;
	__u32 slot = 60;
	int n, prog, ifindex;

	assert_int_equal(
	    system("ip link add chlbfib0 type veth peer name chlbfib1 && "
		   "ip addr add 192.0.2.1/24 dev chlbfib0 && ip link set chlbfib0 up && "
		   "ip link set chlbfib1 up && "
		   "ip neigh add 192.0.2.78 lladdr 02:00:00:00:00:78 dev chlbfib0 "
		   "nud permanent && echo 1 > /proc/sys/net/ipv4/ip_forward"),
	    0);
	ifindex = if_nametoindex("chlbfib0");
	assert_true(ifindex > 0);

	/* userspace resolver */
	inet_pton(AF_INET, "192.0.2.78", a);
	assert_int_equal(chlb_nh_resolve(AF_INET, a, &nh), 0);
	assert_memory_equal(nh.dmac, mac, 6);
	assert_int_equal(nh.ifindex, ifindex);
	inet_pton(AF_INET, "192.0.2.77", a);
	assert_int_equal(chlb_nh_resolve(AF_INET, a, &nh), -EAGAIN);
	inet_pton(AF_INET, "203.0.113.1", a);
	assert_int_equal(chlb_nh_resolve(AF_INET, a, &nh), -ENETUNREACH);

	/* data plane: no cached next hop, neighbour known -> redirect to the veth */
	memset(&be, 0, sizeof(be));
	be.family = CHLB_AF_INET;
	be.state = CHLB_BE_LIVE;
	be.gen = 1;
	inet_pton(AF_INET, "192.0.2.78", be.addr);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	assert_int_equal(
	    fx_table(dp, tslot_of(12, 0), CHLB_ALGO_MAGLEV, &slot, 1, CHLB_AF_INET, &t), 0);
	assert_int_equal(fx_service(dp, CHLB_AF_INET, "10.0.0.8", 80, IPPROTO_TCP, 12,
				    CHLB_FWD_L2DSR, 0, tslot_of(12, 0)),
			 0);
	n = fx_build(in, &s);
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_REDIRECT);

		assert_int_equal(len, n);
		assert_memory_equal(out, mac, 6);
		assert_memory_equal(out + 12, in + 12, n - 12);
	}
	/* neighbour unknown: passed so the kernel resolves it */
	inet_pton(AF_INET, "192.0.2.79", be.addr);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	expect_pass(in, n, CHLB_R_PASS_NO_NEIGH);
	/* no route to the backend: dropped, counted by name, for the service and the slot */
	inet_pton(AF_INET, "203.0.113.1", be.addr);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	assert_int_equal(chlb_dp_read_backend_stats(dp, slot, &b0), 0);
	assert_int_equal(chlb_dp_read_service_stats(dp, 12, &s0), 0);
	expect_drop(in, n, CHLB_R_NO_ROUTE);
	stats_delta(CHLB_R_ERROR, 0);
	stats_delta(CHLB_R_FORWARDED, 0);
	assert_int_equal(chlb_dp_read_backend_stats(dp, slot, &b1), 0);
	assert_int_equal(chlb_dp_read_service_stats(dp, 12, &s1), 0);
	assert_int_equal(b1.no_route - b0.no_route, 2); /* XDP and TC */
	assert_int_equal(s1.no_route - s0.no_route, 2);
	assert_int_equal(b1.packets, b0.packets);
	assert_int_equal(s1.packets, s0.packets);
	chlb_table_free(&t);
}

/* stats --reset: every counter to zero but ct_insert (evictions = inserts - entries) */
static void test_reset_counters(void **state)
{
	struct chlb_global_stats g;
	struct chlb_counters c;
	__u64 ins;

	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	ins = g.reason[CHLB_R_CT_INSERT];
	assert_true(ins > 0 && g.reason[CHLB_R_FORWARDED] > 0 && g.reason[CHLB_R_NO_ROUTE] > 0);
	assert_int_equal(chlb_dp_reset_counters(dp), 0);
	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	for (int r = 0; r < CHLB_R_MAX; r++)
		if (g.reason[r] != (r == CHLB_R_CT_INSERT ? ins : 0))
			fail_msg("%s: %llu after the reset", chlb_reason_names[r],
				 (unsigned long long)g.reason[r]);
	for (__u32 i = 0; i < CHLB_MAX_SERVICES; i++) {
		assert_int_equal(chlb_dp_read_service_stats(dp, i, &c), 0);
		assert_true(!c.packets && !c.bytes && !c.new_flows && !c.no_route);
	}
	for (__u32 i = 0; i < CHLB_MAX_BACKENDS; i++) {
		assert_int_equal(chlb_dp_read_backend_stats(dp, i, &c), 0);
		assert_true(!c.packets && !c.bytes && !c.new_flows && !c.no_route);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_vlan_single_double),
		cmocka_unit_test(test_ipv4_options),
		cmocka_unit_test(test_ipv6_ext_headers),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_icmp_errors),
		cmocka_unit_test(test_not_vip),
		cmocka_unit_test(test_port0_wildcard),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_malformed_headers),
		cmocka_unit_test(test_4in6_and_encap_src),
		cmocka_unit_test(test_no_backend),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_sticky),
		cmocka_unit_test(test_hash_change_keeps_entries),
		cmocka_unit_test(test_icmp_writes_no_state),
		cmocka_unit_test(test_icmp_keeps_stale_entries),
		cmocka_unit_test(test_udp_idle),
		cmocka_unit_test(test_tcp_idle),
		cmocka_unit_test(test_insert_budget),
		cmocka_unit_test(test_fib_and_nexthop),
		cmocka_unit_test(test_reset_counters), /* last: after every other one's traffic */
	};
	int rc;

	if (setup(NULL))
		return 1;
	setup_services(NULL);
	rc = cmocka_run_group_tests_name("dataplane", tests, NULL, NULL);
	teardown(NULL);
	return rc;
}
