// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stickiness (bpf/chlb_stick.h): entries, the view's tables, idle timeouts,
 * the insert budget, a service without backends; the counters reset last.
 * Runs in a private network namespace; the harness is dp_suite.h.
 */
#include <bpf/bpf.h>

#include "dp_suite.h"

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
 * entry with a packet after the budget refills; once it is spent, a flow
 * the tables agree about is counted with them (they are not compared); a
 * handshake (its SYN seen) writes its entry whatever the budget.
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
	struct fx_pkt flows[20], h, g;
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
	/* spent, the tables are not compared: a flow they agree about is counted too, no entry */
	g = h;
	for (g.sport++; decide(&x.t1, &g) != decide(&x.t2, &g); g.sport++)
		;
	stats_mark();
	assert_int_equal(send_flow(&g, FX_ACK), decide(&x.t1, &g));
	stats_delta(CHLB_R_CT_NO_BUDGET, 2); /* XDP and TC */
	assert_int_not_equal(entry_of(&g, &c), 0);
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

/* stats --reset: every counter to zero but ct_insert (evictions = inserts - entries) */
static void test_reset_counters(void **state)
{
	struct chlb_global_stats g;
	struct chlb_counters c;
	__u64 ins;

	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	ins = g.reason[CHLB_R_CT_INSERT];
	assert_true(ins > 0 && g.reason[CHLB_R_FORWARDED] > 0 && g.reason[CHLB_R_NO_BACKEND] > 0);
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

/* Are s's filter bits all set in bank b? */
static bool filter_has(const struct chlb_conn_filter *cf, __u32 b, const struct fx_pkt *s)
{
	struct chlb_flow f;
	__u32 fk;

	fx_flow(&f, s);
	fk = chlb_conn_fkey(&f);
	return (cf->bank[b][chlb_filter_word(fk)] & chlb_filter_mask(fk)) == chlb_filter_mask(fk);
}

/*
 * The connection filter's banks (include/chlb_maps.h): the handshake ACK
 * sets its bits in the bank readers test and, only while chlbd rebuilds
 * the other (CHLB_FILTER_REBUILDING, as the rebuild sets it before its
 * grace period), in that one too; a rebuild finds every entry and clears
 * the flag with its flip.
 */
static void test_filter_banks(void **state)
{
	const struct chlb_conn_filter *cf = chlb_dp_filter_mem(dp);
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_FILTER_BANK);
	__u32 slots[] = { 50, 51, 52, 53 }, zero = 0, cur, v;
	struct fx_pkt a = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "203.0.113.61",
			    .dst = "10.0.0.7",
			    .sport = 6161,
			    .dport = 80 },
		      b = a;
	struct chlb_table t = { 0 };
	struct chlb_conn c;

	(void)state;
	assert_non_null(cf);
	b.sport = 6262;
	assert_int_equal(
	    fx_table(dp, tslot_of(SVC_STICK, 0), CHLB_ALGO_MAGLEV, slots, 4, CHLB_AF_INET, &t), 0);
	set_view(SVC_STICK, "10.0.0.7", 1, (const __u32[]){ 0 });
	assert_int_equal(chlb_dp_filter_rebuild(dp), 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &zero, &cur), 0);
	assert_int_equal(cur & CHLB_FILTER_REBUILDING, 0);

	/* outside a rebuild: the bank readers test, not the other */
	assert_int_equal(send_flow(&a, FX_SYN), decide(&t, &a));
	assert_int_equal(send_flow(&a, FX_ACK), decide(&t, &a));
	assert_int_equal(entry_of(&a, &c), 0);
	assert_true(filter_has(cf, cur, &a));
	assert_false(filter_has(cf, !cur, &a));

	/* while the other bank is rebuilt: both */
	v = cur | CHLB_FILTER_REBUILDING;
	assert_int_equal(bpf_map_update_elem(fd, &zero, &v, 0), 0);
	assert_int_equal(send_flow(&b, FX_SYN), decide(&t, &b));
	assert_int_equal(send_flow(&b, FX_ACK), decide(&t, &b));
	assert_int_equal(entry_of(&b, &c), 0);
	assert_true(filter_has(cf, cur, &b));
	assert_true(filter_has(cf, !cur, &b));

	/* the rebuild: the other bank now, the flag cleared, both entries found in it */
	assert_int_equal(chlb_dp_filter_rebuild(dp), 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &zero, &v), 0);
	assert_int_equal(v, !cur);
	assert_true(filter_has(cf, !cur, &a));
	assert_true(filter_has(cf, !cur, &b));
	stats_mark();
	assert_int_equal(send_flow(&a, FX_ACK), decide(&t, &a));
	assert_int_equal(send_flow(&b, FX_ACK), decide(&t, &b));
	stats_delta(CHLB_R_CT_HIT, 4); /* two flows, XDP and TC */
	chlb_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_backend),
		cmocka_unit_test(test_sticky),
		cmocka_unit_test(test_hash_change_keeps_entries),
		cmocka_unit_test(test_udp_idle),
		cmocka_unit_test(test_tcp_idle),
		cmocka_unit_test(test_insert_budget),
		cmocka_unit_test(test_filter_banks),
		cmocka_unit_test(test_reset_counters), /* last: after every other one's traffic */
	};

	return dp_suite_run("dp_stick", tests, sizeof(tests) / sizeof(tests[0]));
}
