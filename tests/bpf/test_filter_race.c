// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The connection filter's rebuild races the data plane's inserts, and no
 * entry is ever missing from the bank readers test.
 *
 * The data plane writes an entry's filter bits in the bank readers test, and
 * in the idle one too only while filter_bank carries CHLB_FILTER_REBUILDING
 * (bpf/chlb_stick.h conn_insert; the protocol: user/lib/dp/dp_filter.c). A
 * flow whose bits are missing there is taken for one with no entry: its
 * packets are decided by the table, not by the entry that holds it.
 *
 * CPU 0 runs the real pipeline (bpf/chlb_bench.bpf.c's wrapper, which
 * writes a fresh source into every run) over batches of fresh flows: their
 * SYNs, then their handshake ACKs, each of which inserts an entry - about a
 * million inserts a second. CPU 1 meanwhile rebuilds the filter again and
 * again, and after each rebuild checks every entry in conns against the
 * bank filter_bank names then: an entry visible in conns has its bits there
 * whenever it is read (an insert sets the bits before it writes the entry).
 * A data plane that ignored the flag, or a rebuild that flipped before
 * walking, fails here within a few rebuilds: thousands of inserts land in
 * each one's walk.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "dp_fixture.h"
#include "chlb_bench.skel.h"

#define VIP	"10.0.0.10"
#define TSLOT	0
#define BE_SLOT 1
#define BATCH	4096	   /* flows per SYN run and per ACK run */
#define FLOWS	(1u << 18) /* in all: a quarter of conns, nothing evicted */
#define SRC_OFF (14 + 12)  /* the IPv4 source the wrapper rewrites */
#define FRAME	128	   /* the wrapper's frame length (BENCH_LEN) */

static struct chlb_dp *dp;
static struct chlb_bench_bpf *bs;
static atomic_int writing;

static int setup(void **state)
{
	if (fx_open_private(&dp))
		return -1;
	bs = chlb_bench_bpf__open();
	if (!bs)
		return -1;
	/* the wrapper's program on chlb's own maps */
	for (int i = 0; i < CHLB_MAP_COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(bs->obj, chlb_dp_map_name(i));

		if (!m || bpf_map__reuse_fd(m, chlb_dp_map_fd(dp, i)))
			return -1;
	}
	return chlb_bench_bpf__load(bs);
}

static int teardown(void **state)
{
	chlb_bench_bpf__destroy(bs);
	chlb_dp_close(dp);
	return 0;
}

static void frame(__u8 *b, __u8 flags)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.1",
			    .dst = VIP,
			    .sport = 40000,
			    .dport = 80,
			    .flags = flags };

	memset(b, 0, FRAME);
	fx_build(b, &s);
}

/* BATCH runs of the pipeline over fresh sources from counter value first. */
static int run_batch(const __u8 *pkt, __u32 first)
{
	__u8 in[FRAME], out[512];
	struct bpf_test_run_opts o = { .sz = sizeof(o),
				       .data_in = in,
				       .data_size_in = FRAME,
				       .data_out = out,
				       .data_size_out = sizeof(out),
				       .repeat = BATCH };

	memcpy(in, pkt, FRAME);
	memcpy(bs->bss->bench_pkt, pkt, FRAME);
	bs->bss->bench_counter = first;
	if (bpf_prog_test_run_opts(bpf_program__fd(bs->progs.bench_pipeline), &o))
		return -errno;
	return o.retval == XDP_TX ? 0 : -EPROTO;
}

struct writer {
	__u32 flows;
	int err;
};

/* CPU 0: SYNs, then their handshake ACKs (an insert each), batch after batch. */
static void *writer(void *arg)
{
	struct writer *w = arg;
	__u8 syn[FRAME], ack[FRAME];

	frame(syn, FX_SYN);
	frame(ack, FX_ACK);
	w->err = fx_pin_cpu(0);
	for (__u32 first = 0; !w->err && first < FLOWS; first += BATCH) {
		w->err = run_batch(syn, first);
		if (!w->err)
			w->err = run_batch(ack, first);
		w->flows = first + BATCH;
	}
	atomic_store(&writing, 0);
	return NULL;
}

struct check {
	const struct chlb_conn_filter *f;
	__u32 bank;
	__u64 entries, missing;
};

static int check_entry(const struct chlb_flow *fl, const struct chlb_conn *c, void *ctx)
{
	struct check *k = ctx;
	__u32 fk = chlb_conn_fkey(fl);
	__u64 m = chlb_filter_mask(fk);
	__u64 w = __atomic_load_n(&k->f->bank[k->bank][chlb_filter_word(fk)], __ATOMIC_RELAXED);

	(void)c;
	k->entries++;
	k->missing += (w & m) != m;
	return 0;
}

/* Every entry against the bank readers test now; the flag must be clear. */
static int check_all(struct check *k)
{
	__u32 zero = 0, bank;

	if (bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_FILTER_BANK), &zero, &bank))
		return -errno;
	if (bank & CHLB_FILTER_REBUILDING)
		return -EBUSY; /* a rebuild left its flag behind */
	k->f = chlb_dp_filter_mem(dp);
	k->bank = bank & 1;
	k->entries = 0;
	k->missing = 0;
	return chlb_dp_conns_foreach(dp, check_entry, k);
}

static __u64 reason(enum chlb_reason r)
{
	int ncpu = libbpf_num_possible_cpus();
	struct chlb_global_stats *v = calloc(ncpu, sizeof(*v));
	__u32 zero = 0;
	__u64 x = 0;

	if (v && !bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_GLOBAL_STATS), &zero, v))
		for (int c = 0; c < ncpu; c++)
			x += v[c].reason[r];
	free(v);
	return x;
}

static void test_rebuilds_race_inserts(void **state)
{
	__u32 slots[1] = { BE_SLOT }, rebuilds = 0, during = 0;
	struct chlb_table t = { 0 };
	struct chlb_backend be;
	struct writer w = { 0 };
	struct check k;
	__u64 missing = 0;
	pthread_t th;

	if (libbpf_num_possible_cpus() < 2 || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		fail_msg("needs two online CPUs (the data plane and the rebuild each on its own)");
	fx_backend(&be, BE_SLOT, CHLB_AF_INET, 1);
	assert_int_equal(chlb_dp_set_backend(dp, BE_SLOT, &be), 0);
	assert_int_equal(fx_table(dp, TSLOT, CHLB_ALGO_MAGLEV, slots, 1, CHLB_AF_INET, &t), 0);
	assert_int_equal(fx_service(dp, CHLB_AF_INET, VIP, 80, IPPROTO_TCP, 0, CHLB_FWD_L2DSR,
				    CHLB_HASH_5TUPLE, TSLOT),
			 0);
	bs->bss->bench_src_off = SRC_OFF;
	assert_int_equal(chlb_dp_reset_stats(dp), 0);

	assert_int_equal(fx_pin_cpu(1), 0);
	atomic_store(&writing, 1);
	assert_int_equal(pthread_create(&th, NULL, writer, &w), 0);
	while (atomic_load(&writing)) {
		__u32 before = w.flows;

		assert_int_equal(chlb_dp_filter_rebuild(dp), 0);
		rebuilds++;
		during += w.flows != before; /* inserts ran through this one's walk */
		assert_int_equal(check_all(&k), 0);
		missing += k.missing;
	}
	pthread_join(th, NULL);
	/* once more, everything written, the flag cleared */
	assert_int_equal(chlb_dp_filter_rebuild(dp), 0);
	assert_int_equal(check_all(&k), 0);
	missing += k.missing;
	printf("# %u flows inserted on CPU 0; %u rebuilds on CPU 1, %u with inserts "
	       "running through them; %llu entries at the end; %llu checks of an entry "
	       "found its bits missing\n",
	       w.flows, rebuilds, during, (unsigned long long)k.entries,
	       (unsigned long long)missing);
	assert_int_equal(w.err, 0);
	/* the path: every ACK a handshake ACK that wrote its entry */
	assert_int_equal(reason(CHLB_R_CT_INSERT), FLOWS);
	assert_int_equal(k.entries, FLOWS);
	assert_true(during >= 3);
	assert_int_equal(missing, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rebuilds_race_inserts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
