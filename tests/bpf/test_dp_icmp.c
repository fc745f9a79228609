// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ICMP (bpf/chlb_icmp.h): errors about a flow go to its backend, Packet Too
 * Big / Fragmentation Needed are answered, and an ICMP error never writes or
 * refreshes an entry.
 * Runs in a private network namespace; the harness is dp_suite.h.
 */
#include "dp_suite.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_icmp_errors),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_icmp_writes_no_state),
		cmocka_unit_test(test_icmp_keeps_stale_entries),
	};

	return dp_suite_run("dp_icmp", tests, sizeof(tests) / sizeof(tests[0]));
}
