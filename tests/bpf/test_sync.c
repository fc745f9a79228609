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
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_full_ring),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_apply),
	};

	if (fx_netns())
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
