// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Entry sync's data-plane side (bpf/chlb_sync.h, user/lib/dp/dp_sync.c),
 * through BPF_PROG_TEST_RUN in a private network namespace:
 *  - with sync on, a handshake ACK emits exactly one record (the conns key,
 *    the entry's slot and generation), established packets none, the
 *    client's FIN one ENDED record, a reused 5-tuple's SYN one record;
 *  - a full ring drops records and counts each (sync_drop);
 *  - with sync off nothing is emitted;
 *  - chlb_dp_sync_apply(): a peer's entry is inserted with its filter bits
 *    (the program then follows it), a valid entry of a live connection is
 *    kept, an ENDED record marks it ended, an ended one is rewritten.
 *  - held flows (chlb_dp_sync_hold/unhold, CHLB_CONN_F_HELD): every packet
 *    of a held flow - ACK, SYN, FIN, RST, UDP, an ICMP error quoting it -
 *    is dropped and counted (held) and writes nothing (entry, SYN stamp,
 *    record); once the real entry is applied over it the flow goes to
 *    that backend; unhold deletes a placeholder but never a real entry;
 *    hold leaves a live connection's valid entry alone; a placeholder
 *    older than CHLB_CONN_HELD_MAX_NS is decided afresh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "dp_fixture.h"

#define NBE    4
#define FIRST  1 /* backend slots 1..4 */
#define FX_FIN 0x01

struct fx {
	struct chlb_dp *dp;
	struct ring_buffer *rb;
	struct chlb_table t;
	struct chlb_sync_rec rec[256];
	int nrec;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct fx *x = ctx;

	assert_int_equal(size, sizeof(struct chlb_sync_rec));
	if (x->nrec < 256)
		memcpy(&x->rec[x->nrec], data, size);
	x->nrec++;
	return 0;
}

/* A data plane with backends 1..4 behind 10.0.0.1:80/tcp (maglev, l2dsr). */
static void fx_open(struct fx *x, __u32 ring_bytes)
{
	struct chlb_dp_opts o = { .conn_max = 4096, .sync_ring_bytes = ring_bytes };
	__u32 slots[NBE], i;
	struct chlb_backend be;
	char err[256];

	memset(x, 0, sizeof(*x));
	if (chlb_dp_open(&o, &x->dp, err, sizeof(err)))
		fail_msg("chlb_dp_open: %s", err);
	assert_int_equal(chlb_dp_sync_enabled(x->dp), ring_bytes != 0);
	for (i = 0; i < NBE; i++) {
		slots[i] = FIRST + i;
		fx_backend(&be, FIRST + i, CHLB_AF_INET, 7);
		assert_int_equal(chlb_dp_set_backend(x->dp, FIRST + i, &be), 0);
	}
	assert_int_equal(fx_table(x->dp, CHLB_SLOTS_PER_SERVICE, CHLB_ALGO_MAGLEV, slots, NBE,
				  CHLB_AF_INET, &x->t),
			 0);
	assert_int_equal(fx_service(x->dp, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, 1,
				    CHLB_FWD_L2DSR, 0, CHLB_SLOTS_PER_SERVICE),
			 0);
	x->rb = ring_buffer__new(chlb_dp_sync_ring_fd(x->dp), on_record, x, NULL);
	assert_non_null(x->rb);
}

static void fx_close(struct fx *x)
{
	ring_buffer__free(x->rb);
	chlb_table_free(&x->t);
	chlb_dp_close(x->dp);
}

static struct fx_pkt flow_n(int n)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.7",
			    .dst = "10.0.0.1",
			    .sport = (__u16)(20000 + n),
			    .dport = 80 };
	return s;
}

/* One packet of s with these TCP flags through the XDP program: sent back out (l2dsr). */
static void send_pkt(struct fx *x, struct fx_pkt *s, __u8 flags)
{
	__u8 in[256], out[512];
	__u32 olen = sizeof(out), verdict = 0;

	s->flags = flags;
	assert_int_equal(
	    chlb_dp_test_run(x->dp, CHLB_PROG_XDP, in, fx_build(in, s), out, &olen, &verdict), 0);
	assert_int_equal(verdict, 3 /* XDP_TX */);
}

/* Records emitted since the last call. */
static int drain(struct fx *x)
{
	x->nrec = 0;
	assert_true(ring_buffer__consume(x->rb) >= 0);
	return x->nrec;
}

static __u64 reason(struct fx *x, enum chlb_reason r)
{
	struct chlb_global_stats g;

	assert_int_equal(chlb_dp_read_global(x->dp, &g), 0);
	return g.reason[r];
}

static void test_records(void **state)
{
	struct fx_pkt s = flow_n(1);
	struct chlb_flow f;
	struct chlb_conn c;
	struct fx x;
	__u32 want;

	(void)state;
	fx_open(&x, 64 * 1024);
	fx_flow(&f, &s);
	assert_int_equal(chlb_table_decide(&x.t, chlb_flow_crc(&f, 0), &want), 0);

	send_pkt(&x, &s, FX_SYN);
	assert_int_equal(drain(&x), 0); /* a SYN writes no entry: no record */
	send_pkt(&x, &s, FX_ACK);
	assert_int_equal(drain(&x), 1);
	assert_memory_equal(&x.rec[0].flow, &f, sizeof(f));
	assert_int_equal(x.rec[0].backend, want);
	assert_int_equal(x.rec[0].gen, 7);
	assert_int_equal(x.rec[0].flags, 0);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, want);

	send_pkt(&x, &s, FX_ACK);
	send_pkt(&x, &s, FX_ACK);
	assert_int_equal(drain(&x), 0); /* established: nothing */

	send_pkt(&x, &s, FX_FIN | FX_ACK);
	assert_int_equal(drain(&x), 1);
	assert_memory_equal(&x.rec[0].flow, &f, sizeof(f));
	assert_int_equal(x.rec[0].backend, want);
	assert_int_equal(x.rec[0].flags, CHLB_CONN_F_ENDED);
	send_pkt(&x, &s, FX_ACK); /* the close's last ACK: already ended, nothing */
	assert_int_equal(drain(&x), 0);

	send_pkt(&x, &s, FX_SYN); /* the 5-tuple reused: the entry rewritten, a record */
	assert_int_equal(drain(&x), 1);
	assert_int_equal(x.rec[0].flags, 0);
	assert_int_equal(x.rec[0].backend, want);
	assert_int_equal(reason(&x, CHLB_R_SYNC_DROP), 0);
	fx_close(&x);
}

/* A ring of one page holds ~73 records: the rest of 200 handshakes are dropped and counted. */
static void test_full_ring(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	struct fx x;
	int i, got;

	(void)state;
	fx_open(&x, (__u32)page);
	for (i = 0; i < 200; i++) {
		struct fx_pkt s = flow_n(100 + i);

		send_pkt(&x, &s, FX_SYN);
		send_pkt(&x, &s, FX_ACK);
	}
	got = drain(&x);
	assert_true(got > 0 && got < 200);
	assert_int_equal(reason(&x, CHLB_R_CT_INSERT), 200);
	assert_int_equal(reason(&x, CHLB_R_SYNC_DROP), 200 - got);
	fx_close(&x);
}

static void test_off(void **state)
{
	struct fx_pkt s = flow_n(2);
	struct chlb_conn c;
	struct chlb_flow f;
	struct fx x;

	(void)state;
	fx_open(&x, 0);
	fx_flow(&f, &s);
	send_pkt(&x, &s, FX_SYN);
	send_pkt(&x, &s, FX_ACK);
	send_pkt(&x, &s, FX_FIN | FX_ACK);
	send_pkt(&x, &s, FX_SYN);
	send_pkt(&x, &s, FX_ACK);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0); /* entries as always */
	assert_int_equal(drain(&x), 0);
	assert_int_equal(reason(&x, CHLB_R_SYNC_DROP), 0);
	fx_close(&x);
}

/* A flow whose decision here is not `slot`: a synced entry must be what moves it. */
static struct fx_pkt flow_not_deciding(struct fx *x, __u32 slot)
{
	struct fx_pkt s;
	struct chlb_flow f;
	__u32 d;

	for (int n = 1000;; n++) {
		s = flow_n(n);
		fx_flow(&f, &s);
		assert_int_equal(chlb_table_decide(&x->t, chlb_flow_crc(&f, 0), &d), 0);
		if (d != slot)
			return s;
	}
}

static void test_apply(void **state)
{
	struct fx x;
	struct fx_pkt s;
	struct chlb_flow f;
	struct chlb_conn c;
	__u64 hits;
	__u8 in[256], out[512];
	__u32 olen = sizeof(out), verdict;

	(void)state;
	fx_open(&x, 64 * 1024);
	s = flow_not_deciding(&x, FIRST + 2);
	fx_flow(&f, &s);

	/* a peer's entry for a connection this host never saw: inserted, bits set */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 2, 7, 0, 1), CHLB_SYNC_APPLIED);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, FIRST + 2);
	assert_int_equal(c.gen, 7);
	hits = reason(&x, CHLB_R_CT_HIT);
	s.flags = FX_ACK;
	assert_int_equal(
	    chlb_dp_test_run(x.dp, CHLB_PROG_XDP, in, fx_build(in, &s), out, &olen, &verdict), 0);
	assert_int_equal(verdict, 3);
	assert_int_equal(reason(&x, CHLB_R_CT_HIT), hits + 1); /* the filter let it find it */
	assert_int_equal(out[5], FIRST + 2);		       /* dmac 02:be:0:0:0:<slot> */
	assert_int_equal(drain(&x), 0); /* an applied entry is not sent on: no echo */

	/* a live connection's valid entry is kept */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 1, 7, 0, 2), CHLB_SYNC_KEPT);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, FIRST + 2);
	/* an ENDED record marks it ended, backend unchanged */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 1, 7, CHLB_CONN_F_ENDED, 3),
			 CHLB_SYNC_APPLIED);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, FIRST + 2);
	assert_int_equal(c.flags, CHLB_CONN_F_ENDED);
	/* an ended entry is rewritten by the 5-tuple's next connection */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 1, 7, 0, 4), CHLB_SYNC_APPLIED);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, FIRST + 1);
	assert_int_equal(c.flags, 0);
	/* a stale entry (wrong generation) is rewritten too */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 1, 6, 0, 5), CHLB_SYNC_KEPT);
	c.gen = 6;
	assert_int_equal(bpf_map_update_elem(chlb_dp_map_fd(x.dp, CHLB_MAP_CONNS), &f, &c, 0), 0);
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 3, 7, 0, 6), CHLB_SYNC_APPLIED);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, FIRST + 3);
	assert_int_equal(c.gen, 7);
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, CHLB_MAX_BACKENDS, 7, 0, 7), -EINVAL);
	fx_close(&x);
}

/* ---- held flows ---- */

#define XDP_DROP_V 1
#define XDP_TX_V   3
#define FX_RST	   0x04

/* The data plane's clock (CLOCK_MONOTONIC_COARSE, bpf_ktime_get_coarse_ns). */
static __u64 coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* The verdict for one frame; out[] gets what the program sent. */
static __u32 run_frame(struct fx *x, __u8 *in, int len, __u8 *out)
{
	__u32 olen = 512, verdict = 0;

	assert_int_equal(chlb_dp_test_run(x->dp, CHLB_PROG_XDP, in, len, out, &olen, &verdict), 0);
	return verdict;
}

static __u32 run_pkt(struct fx *x, struct fx_pkt *s, __u8 flags, __u8 *out)
{
	__u8 in[256];

	s->flags = flags;
	return run_frame(x, in, fx_build(in, s), out);
}

/* An ICMP "fragmentation needed" from a router, quoting the VIP's reply to the client (IPv4). */
static int icmp_err_v4(__u8 *b, const struct fx_pkt *flow)
{
	struct fx_pkt reply = *flow;
	__u8 inner[256];
	int hl, ilen;

	reply.src = flow->dst;
	reply.dst = flow->src;
	reply.sport = flow->dport;
	reply.dport = flow->sport;
	reply.flags = FX_ACK;
	ilen = fx_build(inner, &reply) - 14;
	hl = fx_icmp4_outer(b, flow->dst, ilen);
	b[hl] = 3; /* destination unreachable, fragmentation needed, MTU 1400 */
	b[hl + 1] = 4;
	b[hl + 6] = 0x05;
	b[hl + 7] = 0x78;
	memcpy(b + hl + 8, inner + 14, ilen);
	return hl + 8 + ilen;
}

/* What a packet could write for flow f: its entry (or none), its filter words and stamps. */
struct trace {
	int have;
	struct chlb_conn c;
	__u64 bank[2];
	__u32 syn[4];
};

static void trace_of(struct fx *x, const struct chlb_flow *f, struct trace *t)
{
	const struct chlb_conn_filter *cf = chlb_dp_filter_mem(x->dp);
	__u32 w = chlb_filter_word(chlb_conn_fkey(f));

	memset(t, 0, sizeof(*t));
	t->have = !chlb_dp_conn_lookup(x->dp, f, &t->c);
	assert_non_null(cf);
	t->bank[0] = cf->bank[0][w];
	t->bank[1] = cf->bank[1][w];
	memcpy(t->syn, &cf->syn[w * 4], sizeof(t->syn));
}

/* Nothing changed since t, and no record was emitted. */
static void assert_untouched(struct fx *x, const struct chlb_flow *f, const struct trace *t)
{
	struct trace now;

	trace_of(x, f, &now);
	assert_int_equal(now.have, t->have);
	assert_memory_equal(&now.c, &t->c, sizeof(now.c));
	assert_memory_equal(now.bank, t->bank, sizeof(now.bank));
	assert_memory_equal(now.syn, t->syn, sizeof(now.syn));
	assert_int_equal(drain(x), 0);
}

static void assert_held(struct fx *x, const struct chlb_flow *f, __u64 at)
{
	struct chlb_conn c;

	assert_int_equal(chlb_dp_conn_lookup(x->dp, f, &c), 0);
	assert_int_equal(c.backend, CHLB_CONN_HELD_SLOT);
	assert_int_equal(c.flags, CHLB_CONN_F_HELD);
	assert_int_equal(c.gen, 0);
	assert_int_equal(c.last_ns, at);
}

/*
 * A held TCP flow: its ACK, a SYN (retransmitted or spoofed), FIN and RST
 * and an ICMP error quoting it are all dropped, counted as held and write
 * nothing. The peer's entry applied over it: the next ACK goes to that
 * backend, which this host's table would not pick.
 */
static void test_held_tcp_dropped_until_applied(void **state)
{
	__u8 in[256], out[512];
	__u64 held, now = coarse_now();
	struct fx_pkt s;
	struct chlb_flow f;
	struct trace t;
	struct fx x;

	(void)state;
	fx_open(&x, 64 * 1024);
	s = flow_not_deciding(&x, FIRST + 2);
	fx_flow(&f, &s);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, now), 0);
	assert_held(&x, &f, now);
	trace_of(&x, &f, &t);
	held = reason(&x, CHLB_R_HELD);

	assert_int_equal(run_pkt(&x, &s, FX_ACK, out), XDP_DROP_V);
	assert_int_equal(reason(&x, CHLB_R_HELD), held + 1);
	assert_untouched(&x, &f, &t);
	assert_int_equal(run_pkt(&x, &s, FX_SYN, out), XDP_DROP_V);
	assert_int_equal(reason(&x, CHLB_R_HELD), held + 2);
	assert_untouched(&x, &f, &t); /* no SYN stamp either */
	assert_int_equal(run_pkt(&x, &s, FX_FIN | FX_ACK, out), XDP_DROP_V);
	assert_int_equal(run_pkt(&x, &s, FX_RST, out), XDP_DROP_V);
	assert_int_equal(run_frame(&x, in, icmp_err_v4(in, &s), out), XDP_DROP_V);
	assert_int_equal(reason(&x, CHLB_R_HELD), held + 5);
	assert_untouched(&x, &f, &t);
	/* dropped as held, nothing else: not stale, not a new flow, not forwarded */
	assert_int_equal(reason(&x, CHLB_R_CT_STALE), 0);
	assert_int_equal(reason(&x, CHLB_R_SYN_REUSE), 0);
	assert_int_equal(reason(&x, CHLB_R_NO_BACKEND), 0);
	assert_int_equal(reason(&x, CHLB_R_FORWARDED), 0);

	/* the backend arrived: the entry applied over the placeholder, the flow follows it */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 2, 7, 0, now), CHLB_SYNC_APPLIED);
	assert_int_equal(run_pkt(&x, &s, FX_ACK, out), XDP_TX_V);
	assert_int_equal(out[5], FIRST + 2); /* dmac 02:be:0:0:0:<slot> */
	assert_int_equal(reason(&x, CHLB_R_HELD), held + 5);
	assert_int_equal(reason(&x, CHLB_R_CT_HIT), 1);
	fx_close(&x);
}

/* UDP: held like TCP (no SYN, every datagram dropped until the entry comes). */
static void test_held_udp_dropped_until_applied(void **state)
{
	__u8 out[512];
	__u64 now = coarse_now();
	struct fx_pkt s = flow_n(3);
	struct chlb_flow f;
	struct trace t;
	struct fx x;

	(void)state;
	fx_open(&x, 64 * 1024);
	assert_int_equal(fx_service(x.dp, CHLB_AF_INET, "10.0.0.1", 53, IPPROTO_UDP, 2,
				    CHLB_FWD_L2DSR, 0, CHLB_SLOTS_PER_SERVICE),
			 0);
	s.proto = IPPROTO_UDP;
	s.dport = 53;
	fx_flow(&f, &s);
	assert_int_equal(run_pkt(&x, &s, 0, out), XDP_TX_V); /* decided here as any UDP flow */
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, now), 0);
	trace_of(&x, &f, &t);
	assert_int_equal(run_pkt(&x, &s, 0, out), XDP_DROP_V);
	assert_int_equal(run_pkt(&x, &s, 0, out), XDP_DROP_V);
	assert_int_equal(reason(&x, CHLB_R_HELD), 2);
	assert_untouched(&x, &f, &t);
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST + 3, 7, 0, now), CHLB_SYNC_APPLIED);
	assert_int_equal(run_pkt(&x, &s, 0, out), XDP_TX_V);
	assert_int_equal(out[5], FIRST + 3);
	fx_close(&x);
}

/*
 * hold over what is there: a live connection's valid entry is the
 * connection's (1, unchanged); an ended or stale one is what the peer's
 * entry would rewrite (held). unhold deletes a placeholder, never a real
 * entry.
 */
static void test_hold_unhold_never_a_real_entry(void **state)
{
	__u64 now = coarse_now();
	struct fx_pkt s = flow_n(4);
	struct chlb_conn c, real;
	struct chlb_flow f;
	__u8 out[512];
	struct fx x;

	(void)state;
	fx_open(&x, 64 * 1024);
	fx_flow(&f, &s);
	/* nothing to unhold */
	assert_int_equal(chlb_dp_sync_unhold(x.dp, &f), 0);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), -ENOENT);

	/* a connection this host saw: its entry stays */
	assert_int_equal(run_pkt(&x, &s, FX_SYN, out), XDP_TX_V);
	assert_int_equal(run_pkt(&x, &s, FX_ACK, out), XDP_TX_V);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &real), 0);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, now), 1);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_memory_equal(&c, &real, sizeof(c));
	assert_int_equal(chlb_dp_sync_unhold(x.dp, &f), 0); /* never a real entry */
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_memory_equal(&c, &real, sizeof(c));

	/* ended: the peer's entry would rewrite it, so it is held */
	assert_int_equal(run_pkt(&x, &s, FX_FIN | FX_ACK, out), XDP_TX_V);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, now), 0);
	assert_held(&x, &f, now);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, now + 1), 0); /* again: renewed */
	assert_held(&x, &f, now + 1);
	assert_int_equal(chlb_dp_sync_unhold(x.dp, &f), 0);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), -ENOENT);
	/* the wait over: the flow decided as any entry-less flow */
	assert_int_equal(run_pkt(&x, &s, FX_ACK, out), XDP_TX_V);
	assert_int_equal(reason(&x, CHLB_R_HELD), 0);

	/* stale (its slot's generation moved on): held */
	real.gen = 6;
	assert_int_equal(
	    bpf_map_update_elem(chlb_dp_map_fd(x.dp, CHLB_MAP_CONNS), &f, &real, BPF_ANY), 0);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, now), 0);
	assert_held(&x, &f, now);
	/* an entry applied since: unhold leaves it */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST, 7, 0, now), CHLB_SYNC_APPLIED);
	assert_int_equal(chlb_dp_sync_unhold(x.dp, &f), 0);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, FIRST);
	assert_int_equal(c.flags, 0);
	/* a peer's entry cannot carry the held flag */
	assert_int_equal(chlb_dp_sync_apply(x.dp, &f, FIRST, 7, CHLB_CONN_F_HELD, now), -EINVAL);
	fx_close(&x);
}

/*
 * A placeholder left by a chlbd that died while it waited: past
 * CHLB_CONN_HELD_MAX_NS the program decides the flow afresh (a SYN and a
 * non-SYN alike), rewrites the entry and drops nothing.
 */
static void test_held_placeholder_expires(void **state)
{
	__u64 old = coarse_now() - CHLB_CONN_HELD_MAX_NS - 1000000000ull;
	struct fx_pkt s = flow_n(5), s2 = flow_n(6);
	struct chlb_flow f, f2;
	struct chlb_conn c;
	__u8 out[512];
	__u32 want;
	struct fx x;

	(void)state;
	fx_open(&x, 64 * 1024);
	fx_flow(&f, &s);
	fx_flow(&f2, &s2);
	assert_int_equal(chlb_table_decide(&x.t, chlb_flow_crc(&f, 0), &want), 0);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f, old), 0);
	assert_int_equal(chlb_dp_sync_hold(x.dp, &f2, old), 0);
	assert_int_equal(run_pkt(&x, &s, FX_ACK, out), XDP_TX_V);
	assert_int_equal(out[5], want);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f, &c), 0);
	assert_int_equal(c.backend, want);
	assert_int_equal(c.flags, 0); /* nothing says the connection broke */
	assert_int_equal(run_pkt(&x, &s2, FX_SYN, out), XDP_TX_V);
	assert_int_equal(chlb_dp_conn_lookup(x.dp, &f2, &c), 0);
	assert_true(c.backend >= FIRST && c.backend < FIRST + NBE);
	assert_int_equal(reason(&x, CHLB_R_HELD), 0);
	fx_close(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_full_ring),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_held_tcp_dropped_until_applied),
		cmocka_unit_test(test_held_udp_dropped_until_applied),
		cmocka_unit_test(test_hold_unhold_never_a_real_entry),
		cmocka_unit_test(test_held_placeholder_expires),
	};

	if (fx_netns())
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
