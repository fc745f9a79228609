// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Data-plane benchmark: ns per packet through BPF_PROG_TEST_RUN (XDP,
 * repeat=N), pinned to one CPU, all cases in one run, IPIP forwarding.
 * Runs the pipeline inside bpf/chlb_bench.bpf.c, which restores the
 * original frame every run (and for the "fresh flow" cases writes a new
 * source from a counter) - bench_restore_tx does the same and returns
 * XDP_TX: that is the baseline to subtract. The maps are the real data
 * plane's (reused by fd). After every case the reason counters are checked
 * so that each timed run took the intended path.
 *
 * Each case runs in batches (one BPF_PROG_TEST_RUN call each) and reports
 * the fastest batch (the usual micro-benchmark estimator): other processes
 * share this 2-core machine, and a batch they disturb only ever gets slower.
 *
 * Batch length matters for the fresh-source cases. On this VM a BPF map
 * that fits in L2 (1 MiB, one bank of conn_filter's bits) does not stay there from one
 * syscall to the next: the platform_random_read_1mib_* cases show it with
 * a program that does nothing but dependent random reads of a 1 MiB array.
 * A flood is a continuous stream, so the flood cases run FLOOD_BATCH packets
 * per call; the *_short_batches variants keep RUNS / BATCHES and show the
 * cold-cache cost (docs/performance.md).
 *
 * Cases that need state per timed run (first_ack_n1000: a fresh flow whose
 * SYN was sent; ack_flood_cold_history: which flows the view's tables
 * disagree about) run hooks around each timed batch: untimed work before
 * (the same flows' SYNs) and after it (delete the entries it wrote, count
 * what it should have done). Only the timed batches' counters are checked.
 *
 * CHLB_BENCH_BUDGET=N loads the pipeline with an insert budget of N entries
 * per second per CPU for flows whose SYN was not seen (default
 * CHLB_MOVED_INSERTS_PER_S; 16777216: in effect none, as before it).
 *
 * CHLB_BENCH_SYNC=1 loads the pipeline with entry sync on (cfg_sync, a
 * 4 MiB sync_ring): every entry written also costs a ring buffer record;
 * first_ack_n1000 then drains the ring after each batch (untimed) and
 * checks one record per ACK. The A/B: the same case with and without it.
 *
 * Usage: dataplane [OUT.json]   (default build/bench/dataplane.json)
 */
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../bpf/dp_fixture.h"
#include "chlb_bench.skel.h"

#define BENCH_LEN   128
#define RUNS	    1000000 /* per case, in BATCHES batches */
#define BATCHES	    200
#define BATCH	    (RUNS / BATCHES)
#define FLOOD_RUNS  20000000 /* fresh-source floods: as many batches as the others */
#define FLOOD_BATCH 100000
#define NBE	    1000
#define V6_BASE	    2000
#define MIX_FLOWS   256 /* the *_mix256 cases: SYNs cycle through this many sources */

static struct chlb_dp *dp;
static struct chlb_bench_bpf *bs;
static FILE *json;
static int ncases;
static double baseline = 1e9; /* fastest baseline batch seen anywhere in the run */
static int restore_fd, pipe_fd;
static struct case_result {
	const char *name;
	double ns;
	__u32 runs, batch;
	__u32 jump_iters; /* jump cases: the flow's loop iterations */
} res[64];
static __u32 counter_base = 1;
static const char *only;	    /* CHLB_BENCH_ONLY: time just these cases (a,b,...) */
static struct ring_buffer *sync_rb; /* CHLB_BENCH_SYNC: the bench program's sync_ring */
static __u64 sync_records;

static void die(const char *what, int rc)
{
	fprintf(stderr, "dataplane bench: %s: %s (%d)\n", what, strerror(rc < 0 ? -rc : rc), rc);
	exit(1);
}

/* Build a BENCH_LEN-byte frame. */
static void frame(__u8 *b, struct fx_pkt *s)
{
	int hl = s->family == CHLB_AF_INET ? 14 + 20 + 20 : 14 + 40 + 20;

	s->payload = BENCH_LEN - hl;
	if (fx_build(b, s) != BENCH_LEN)
		die("frame size", -EINVAL);
}

#define R(r) (1u << CHLB_R_##r)

/*
 * What a case must do, checked on the timed runs' counters: every reason in
 * path goes up by exactly the number of runs, and every other reason not at
 * all, but those in counted (the insert budget's: ct_insert, ct_no_budget),
 * which together go up by at least hook_count (set by the case's hooks: the
 * flows the view's tables disagree about, each of which inserts or finds
 * the budget spent) and at most the runs (a spent budget counts every
 * entry-less packet: its tables are not compared), ct_insert by at most
 * hook_count; the service's new_flows goes up by the runs or not at all.
 */
struct expect {
	__u32 verdict;
	__u32 svc_id;
	int new_flows;
	__u32 path;
	__u32 counted;
};

/* Untimed work around each timed batch, which runs counters [first, first + n). */
struct hooks {
	void (*before)(__u32 first, __u32 n);
	void (*after)(__u32 first, __u32 n);
};
static const struct hooks *hooks; /* for the next run_case, NULL: none */
static __u64 hook_count;	  /* what the hooks expect of the counted reason */

static void read_stats(struct chlb_global_stats *g, __u32 svc_id, __u64 *new_flows)
{
	struct chlb_counters c = { 0 };

	if (chlb_dp_read_global(dp, g) || chlb_dp_read_service_stats(dp, svc_id, &c))
		die("read stats", -errno);
	*new_flows = c.new_flows;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Is name one of CHLB_BENCH_ONLY's comma-separated names? */
static bool only_names(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = only; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

/* Time one case in batches of `batch` runs; check the counters; record it. */
static double run_case(const char *name, int prog_fd, const __u8 *pkt, __u32 src_off,
		       const struct expect *e, __u32 runs, __u32 batch)
{
	__u8 out[512];
	struct bpf_test_run_opts o = { .sz = sizeof(o),
				       .data_in = pkt,
				       .data_size_in = BENCH_LEN,
				       .data_out = out,
				       .data_size_out = sizeof(out),
				       .repeat = batch };
	struct chlb_global_stats g0, g1, d = { 0 };
	__u64 nf0, nf1, dnf = 0, counted = 0;
	__u32 *batch_ns, nbatches, b, r;
	bool bad = false;
	double ns;

	/* profiling aid: time only the named cases (the others still set up state) */
	if (only && !only_names(name))
		return 0;
	if (only && batch == BATCH && !hooks)
		runs *= 20; /* long enough to sample (floods already are; hooks are slow) */
	nbatches = runs / batch;
	runs = nbatches * batch;
	batch_ns = calloc(nbatches, sizeof(*batch_ns));
	if (!batch_ns)
		die("calloc", -ENOMEM);

	memcpy(bs->bss->bench_pkt, pkt, BENCH_LEN);
	bs->bss->bench_src_off = src_off;
	bs->bss->bench_counter = counter_base;
	hook_count = 0;
	read_stats(&g0, e->svc_id, &nf0);
	/*
	 * Timed batches, each right after a baseline batch; the fastest of
	 * each is the least disturbed by other tenants of the CPU.
	 */
	for (b = 0; b < nbatches; b++) {
		struct bpf_test_run_opts bo = o;
		__u32 first = 0;

		bo.data_size_out = sizeof(out);
		if (prog_fd != restore_fd && bpf_prog_test_run_opts(restore_fd, &bo) == 0 &&
		    bo.duration < baseline)
			baseline = bo.duration;
		if (hooks) {
			/* the baseline used counters too: this batch takes the next unused ones */
			first = counter_base;
			counter_base += batch;
			if (hooks->before)
				hooks->before(first, batch);
			bs->bss->bench_counter = first;
			read_stats(&g0, e->svc_id, &nf0);
		}
		o.data_size_out = sizeof(out);
		if (bpf_prog_test_run_opts(prog_fd, &o))
			die(name, -errno);
		batch_ns[b] = o.duration;
		if (hooks) {
			read_stats(&g1, e->svc_id, &nf1);
			for (r = 0; r < CHLB_R_MAX; r++)
				d.reason[r] += g1.reason[r] - g0.reason[r];
			dnf += nf1 - nf0;
			if (hooks->after)
				hooks->after(first, batch);
		}
	}
	qsort(batch_ns, nbatches, sizeof(batch_ns[0]), cmp_u32);
	if (!hooks) {
		read_stats(&g1, e->svc_id, &nf1);
		for (r = 0; r < CHLB_R_MAX; r++)
			d.reason[r] = g1.reason[r] - g0.reason[r];
		dnf = nf1 - nf0;
		/* the baseline batches took counters too: the next case starts past all of them */
		counter_base = bs->bss->bench_counter;
	}
	if (o.retval != e->verdict) {
		fprintf(stderr, "%s: verdict %u, want %u\n", name, o.retval, e->verdict);
		exit(1);
	}
	for (r = 0; r < CHLB_R_MAX; r++) {
		__u64 want = e->path & (1u << r) ? runs : e->counted & (1u << r) ? hook_count : 0;

		if (e->counted & (1u << r)) {
			counted += d.reason[r];
			continue; /* their sum, below */
		}
		if (d.reason[r] != want) {
			fprintf(stderr,
				"%s: %s went up by %llu, want %llu: not every run took the path\n",
				name, chlb_reason_names[r], (unsigned long long)d.reason[r],
				(unsigned long long)want);
			bad = true;
		}
	}
	if (e->counted &&
	    (counted < hook_count || counted > runs || d.reason[CHLB_R_CT_INSERT] > hook_count)) {
		fprintf(stderr,
			"%s: the counted reasons went up by %llu together (ct_insert %llu), "
			"want %llu to %u (ct_insert at most %llu)\n",
			name, (unsigned long long)counted,
			(unsigned long long)d.reason[CHLB_R_CT_INSERT],
			(unsigned long long)hook_count, runs, (unsigned long long)hook_count);
		bad = true;
	}
	if (dnf != (e->new_flows ? runs : 0)) {
		fprintf(stderr, "%s: new_flows went up by %llu, want %u\n", name,
			(unsigned long long)dnf, e->new_flows ? runs : 0);
		bad = true;
	}
	if (bad) {
		for (r = 0; r < CHLB_R_MAX; r++)
			if (d.reason[r])
				fprintf(stderr, "  %s +%llu\n", chlb_reason_names[r],
					(unsigned long long)d.reason[r]);
		exit(1);
	}
	ns = (double)batch_ns[0];
	free(batch_ns);
	if (prog_fd == restore_fd && ns < baseline)
		baseline = ns;
	if (ncases == (int)(sizeof(res) / sizeof(res[0])))
		die("more cases than res[] holds", -ENOSPC);
	res[ncases].name = name;
	res[ncases].ns = ns;
	res[ncases].runs = runs;
	res[ncases].batch = batch;
	ncases++;
	return ns;
}

/*
 * A fresh-source case twice: as a flood (FLOOD_BATCH packets per call, the
 * number the goals are about) and in short batches (cold caches, see above).
 */
static void run_flood(const char *name, int prog_fd, const __u8 *pkt, __u32 src_off,
		      const struct expect *e)
{
	char *cold;

	run_case(name, prog_fd, pkt, src_off, e, FLOOD_RUNS, FLOOD_BATCH);
	if (asprintf(&cold, "%s_short_batches", name) < 0)
		die("asprintf", -ENOMEM);
	run_case(cold, prog_fd, pkt, src_off, e, RUNS, BATCH); /* res[] keeps the name */
}

/*
 * A new-flow case again with the SYN's source cycling through MIX_FLOWS
 * values: one repeated flow measures that flow's own path (for jump, its
 * own number of loop iterations, predicted perfectly); a mix measures the
 * average flow, caches still hot.
 */
static void run_mix(const char *name, int prog_fd, const __u8 *pkt, __u32 src_off,
		    const struct expect *e)
{
	bs->data->bench_src_mask = MIX_FLOWS - 1;
	run_case(name, prog_fd, pkt, src_off, e, RUNS, BATCH);
	bs->data->bench_src_mask = ~0u;
}

/*
 * Jump's loop iterations for key over n buckets: the reference loop of
 * shared/vectors, counted (and checked against the lookup's own answer).
 */
static __u32 jump_iterations(__u64 key, __u32 n)
{
	__u64 b = 0, j = 0, k = key;
	__u32 it = 0;

	while (j < n) {
		b = j;
		k = k * 2862933555777941757ULL + 1;
		j = ((b + 1) << 31) / ((k >> 33) + 1);
		it++;
	}
	if (b != chlb_jump_bucket(key, n))
		die("jump iteration count: reference and lookup disagree", -EINVAL);
	return it;
}

static __u32 flow_jump_iterations(const struct fx_pkt *s, __u32 n)
{
	struct chlb_flow f;

	fx_flow(&f, s);
	return jump_iterations(chlb_jump_key(chlb_flow_crc(&f, CHLB_HASH_5TUPLE)), n);
}

/*
 * The source port, from 1024 up, of the first flow like s whose jump loop
 * runs the median number of times over all ports 1024-65535 (that median
 * in *median).
 */
static __u16 jump_median_sport(struct fx_pkt s, __u32 n, __u32 *median)
{
	enum {
		FIRST = 1024,
		PORTS = 65536 - FIRST
	};
	static __u8 iters[PORTS]; /* per port: each flow's count is computed once */
	__u32 hist[CHLB_JUMP_MAX_ITERS + 1] = { 0 }, acc = 0, m = 0, p;

	for (p = 0; p < PORTS; p++) {
		__u32 it;

		s.sport = (__u16)(FIRST + p);
		it = flow_jump_iterations(&s, n);
		iters[p] = (__u8)(it < CHLB_JUMP_MAX_ITERS ? it : CHLB_JUMP_MAX_ITERS);
		hist[iters[p]]++;
	}
	while (acc + hist[m] <= PORTS / 2)
		acc += hist[m++];
	for (p = 0; iters[p] != m; p++)
		; /* m is some port's count, so this stops */
	*median = m;
	return (__u16)(FIRST + p);
}

/* The result of the case called name, or NULL when it was not timed (CHLB_BENCH_ONLY). */
static struct case_result *result_of(const char *name)
{
	for (int i = 0; i < ncases; i++)
		if (!strcmp(res[i].name, name))
			return &res[i];
	return NULL;
}

/* A case's net ns in this run, or -1 when it was not timed. */
static double net_of(const char *name)
{
	struct case_result *r = result_of(name);

	return r ? r->ns - baseline : -1;
}

/* Record a jump case's loop iterations with its result. */
static void note_jump_iters(const char *name, __u32 iters)
{
	struct case_result *r = result_of(name);

	if (r)
		r->jump_iters = iters;
}

/* The data plane's goals (docs/performance.md), checked against this run: a report, not a test. */
static void print_goals(void)
{
	static const struct {
		const char *name;
		double max;
	} goals[] = {
		{ "new_flow_ring_n1000", 80 },	    { "new_flow_jump_n1000", 80 },
		{ "new_flow_maglev_n1000", 80 },    { "new_flow_hrw_n1000", 80 },
		{ "new_flow_ipv6_ring_n1000", 80 }, { "established_n1000", 70 },
		{ "established_moved_n1000", 120 }, { "first_ack_n1000", 200 },
		{ "syn_flood_cold", 100 },
	};
	double n1000 = net_of("new_flow_ring_n1000"), n10 = net_of("new_flow_ring_n10");
	double fa = net_of("first_ack_n1000");

	printf("goals (net ns, this run):\n");
	for (size_t i = 0; i < sizeof(goals) / sizeof(goals[0]); i++) {
		double v = net_of(goals[i].name);

		if (v >= 0)
			printf("  %-36s %6.1f <= %5.0f  %s\n", goals[i].name, v, goals[i].max,
			       v <= goals[i].max ? "met" : "MISSED");
	}
	if (n1000 >= 0 && n10 > 0)
		printf("  %-36s %6.2f <= %5.1f  %s\n", "new_flow_ring_n1000 / _n10", n1000 / n10,
		       1.3, n1000 <= 1.3 * n10 ? "met" : "MISSED");
	/*
	 * The kernel's LRU insert alone (the probe's program less a bare
	 * XDP_TX): the part of first_ack_n1000 no data plane using the
	 * kernel's LRU can avoid on this machine.
	 */
	if (result_of("platform_lru_insert_1m") && result_of("baseline_bare_xdp_tx") && fa >= 0) {
		double lru =
		    result_of("platform_lru_insert_1m")->ns - result_of("baseline_bare_xdp_tx")->ns;

		printf("  first_ack_n1000: the kernel's LRU insert alone costs %.1f here "
		       "(platform_lru_insert_1m - baseline_bare_xdp_tx); chlb's own part %.1f\n",
		       lru, fa - lru);
	}
}

static void must(int rc, const char *what)
{
	if (rc)
		die(what, rc);
}

static void backends(__u32 first, __u32 n, int family)
{
	struct chlb_backend be;
	__u32 i;

	for (i = 0; i < n; i++) {
		fx_backend(&be, first + i, family, 1);
		must(chlb_dp_set_backend(dp, first + i, &be), "set backend");
	}
}

static void service(__u32 id, int family, const char *vip, __u32 algo, __u32 first, __u32 n,
		    struct chlb_table *t)
{
	__u32 *slots = calloc(n, sizeof(*slots)), i;

	for (i = 0; i < n; i++)
		slots[i] = first + i;
	must(fx_table(dp, id * CHLB_SLOTS_PER_SERVICE, algo, slots, n, family, t), "table");
	must(fx_service(dp, family, vip, 80, IPPROTO_TCP, id, CHLB_FWD_IPIP, 0,
			id * CHLB_SLOTS_PER_SERVICE),
	     "service");
	free(slots);
}

/*
 * A jump service whose weights cycle 100,149,50,25 (uneven on purpose):
 * w_max / w_mean = 1.84 attempts per new flow on average, each a jump walk.
 */
static void service_uneven(__u32 id, const char *vip, __u32 algo, __u32 first, __u32 n,
			   struct chlb_table *t)
{
	struct chlb_table_spec spec = { .algo = algo };
	struct chlb_table_be *be = calloc(n, sizeof(*be));
	char err[256];
	__u32 i;

	for (i = 0; i < n; i++) {
		be[i].slot = first + i;
		be[i].weight = (const __u32[]){ 100, 149, 50, 25 }[i % 4];
		fx_name(be[i].name, sizeof(be[i].name), first + i, CHLB_AF_INET);
	}
	if (chlb_table_build(&spec, be, n, t, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		die("uneven table", -EINVAL);
	}
	must(chlb_dp_write_table(dp, id * CHLB_SLOTS_PER_SERVICE, t->words, t->nwords), "table");
	must(fx_service(dp, CHLB_AF_INET, vip, 80, IPPROTO_TCP, id, CHLB_FWD_IPIP, 0,
			id * CHLB_SLOTS_PER_SERVICE),
	     "service");
	free(be);
}

static void service_jump_uneven(__u32 id, const char *vip, __u32 first, __u32 n,
				struct chlb_table *t)
{
	service_uneven(id, vip, CHLB_ALGO_JUMP, first, n, t);
}

/* Fill the connection table to capacity with flows nobody will send. */
static void fill_conns(__u32 n)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS);
	const __u32 batch = 65536;
	struct chlb_flow *k = calloc(batch, sizeof(*k));
	struct chlb_conn *v = calloc(batch, sizeof(*v));
	__u32 i, j, cnt;

	for (i = 0; i < n; i += batch) {
		LIBBPF_OPTS(bpf_map_batch_opts, bo);

		for (j = 0; j < batch; j++) {
			__u32 id = i + j;

			k[j].family = CHLB_AF_INET;
			k[j].proto = IPPROTO_TCP;
			k[j].src[0] = 172;
			k[j].src[1] = 31;
			memcpy(k[j].src + 2, &id, 2);
			memcpy(&k[j].sport, (char *)&id + 2, 2);
			k[j].dst[0] = 10;
			k[j].dport = htons(80);
			v[j].backend = 1 + id % NBE;
			v[j].gen = 1;
		}
		cnt = batch;
		if (bpf_map_update_batch(fd, k, v, &cnt, &bo))
			die("fill conns", -errno);
	}
	free(k);
	free(v);
	/* and their conn_filter bits, as the data plane would have set them */
	for (i = 0; i < n; i++) {
		struct chlb_flow f = { .family = CHLB_AF_INET, .proto = IPPROTO_TCP };

		f.src[0] = 172;
		f.src[1] = 31;
		memcpy(f.src + 2, &i, 2);
		memcpy(&f.sport, (char *)&i + 2, 2);
		f.dst[0] = 10;
		f.dport = htons(80);
		if (chlb_dp_filter_add(dp, &f))
			die("fill conn_filter", -ENODEV);
	}
}

/*
 * Send s's SYN and then its handshake ACK, once each and untimed: the ACK
 * writes the flow's conns entry, as for every TCP connection.
 */
static void handshake(struct fx_pkt s)
{
	struct chlb_global_stats g0, g1;
	struct chlb_flow f;
	struct chlb_conn c;
	__u8 b[BENCH_LEN], out[512];
	__u32 len, verdict;
	__u64 nf;

	read_stats(&g0, 0, &nf);
	s.flags = FX_SYN;
	frame(b, &s);
	len = sizeof(out);
	must(chlb_dp_test_run(dp, CHLB_PROG_XDP, b, BENCH_LEN, out, &len, &verdict), "SYN");
	s.flags = FX_ACK;
	frame(b, &s);
	len = sizeof(out);
	must(chlb_dp_test_run(dp, CHLB_PROG_XDP, b, BENCH_LEN, out, &len, &verdict), "ACK");
	read_stats(&g1, 0, &nf);
	fx_flow(&f, &s);
	if (g1.reason[CHLB_R_CT_INSERT] - g0.reason[CHLB_R_CT_INSERT] != 1 ||
	    chlb_dp_conn_lookup(dp, &f, &c))
		die("handshake: the ACK wrote no entry", -ENOENT);
}

/*
 * Clear every SYN stamp of conn_filter, as if no SYN had been seen. The
 * fresh-source SYN cases stamp nearly every slot, and a fresh stamp turns a
 * fresh-source ACK into a handshake ACK (which writes an entry).
 */
static void clear_stamps(void)
{
	struct chlb_conn_filter *f = chlb_dp_filter_mem(dp);

	if (chlb_syn_fresh(0, 1, 1u << 28)) /* whatever the clock reads */
		die("a cleared stamp looks fresh", -EINVAL);
	if (!f)
		die("conn_filter not mapped", -ENODEV);
	memset(f->syn, 0, sizeof(f->syn));
}

/* The flow of the fresh-source frame `spec` for bench counter value k. */
static void counter_flow(struct chlb_flow *f, const struct fx_pkt *spec, __u32 k)
{
	__u32 c = k + 1; /* chlb_bench.bpf.c: (counter & mask) + 1, mask ~0 */

	fx_flow(f, spec);
	memcpy(f->src, &c, 4);
}

/*
 * first_ack_n1000: before each timed batch of handshake ACKs, the same
 * flows' SYNs (one untimed call); after it, delete the entries the batch
 * wrote (every one must be there) and rebuild the filter from the entries
 * left, so the table and the filter stay as before: a hot LRU that is not
 * full, its free nodes just used.
 */
static struct fx_pkt fa_spec;
static __u8 fa_syn[BENCH_LEN], fa_ack[BENCH_LEN];

static void first_ack_before(__u32 first, __u32 n)
{
	__u8 out[512];
	struct bpf_test_run_opts o = { .sz = sizeof(o),
				       .data_in = fa_syn,
				       .data_size_in = BENCH_LEN,
				       .data_out = out,
				       .data_size_out = sizeof(out),
				       .repeat = n };

	memcpy(bs->bss->bench_pkt, fa_syn, BENCH_LEN);
	bs->bss->bench_counter = first;
	if (bpf_prog_test_run_opts(pipe_fd, &o) || o.retval != XDP_TX)
		die("first_ack: SYNs", -errno);
	memcpy(bs->bss->bench_pkt, fa_ack, BENCH_LEN);
}

static void first_ack_after(__u32 first, __u32 n)
{
	struct chlb_flow *k = calloc(n, sizeof(*k));
	__u32 i, cnt = n;
	LIBBPF_OPTS(bpf_map_batch_opts, bo);

	if (!k)
		die("calloc", -ENOMEM);
	for (i = 0; i < n; i++)
		counter_flow(&k[i], &fa_spec, first + i);
	if (bpf_map_delete_batch(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), k, &cnt, &bo) || cnt != n)
		die("first_ack: a timed ACK wrote no entry for its flow", -ENOENT);
	free(k);
	if (sync_rb) {
		sync_records = 0;
		if (ring_buffer__consume(sync_rb) < 0 || sync_records != n)
			die("first_ack: not one sync record per entry", -EPROTO);
	}
	must(chlb_dp_filter_rebuild(dp), "filter rebuild");
}

static const struct hooks first_ack_hooks = { first_ack_before, first_ack_after };

static int count_sync_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	sync_records += size == sizeof(struct chlb_sync_rec);
	return 0;
}

/* platform_lru_insert_1m: delete the keys a timed batch inserted (bench_probe_lru_insert). */
static void lru_probe_after(__u32 first, __u32 n)
{
	struct chlb_flow *k = calloc(n, sizeof(*k));
	__u32 i, cnt = n, src;
	LIBBPF_OPTS(bpf_map_batch_opts, bo);

	if (!k)
		die("calloc", -ENOMEM);
	for (i = 0; i < n; i++) {
		src = first + i + 1;
		memcpy(k[i].src, &src, 4);
		k[i].sport = 1;
		k[i].dport = 80;
		k[i].proto = IPPROTO_TCP;
		k[i].family = CHLB_AF_INET;
	}
	if (bpf_map_delete_batch(bpf_map__fd(bs->maps.probe_lru), k, &cnt, &bo) || cnt != n)
		die("platform_lru_insert: a timed run inserted no key", -ENOENT);
	free(k);
}

static const struct hooks lru_probe_hooks = { NULL, lru_probe_after };

/*
 * ack_flood_cold_history: count the timed batch's flows the view's two
 * tables decide differently - exactly the ones that must get an entry.
 */
static struct fx_pkt af_spec;
static const struct chlb_table *af_old, *af_new;

static void disagree_after(__u32 first, __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		struct chlb_flow f;
		__u32 a, b, crc;

		counter_flow(&f, &af_spec, first + i);
		crc = chlb_flow_crc(&f, CHLB_HASH_5TUPLE);
		if (chlb_table_decide(af_old, crc, &a) || chlb_table_decide(af_new, crc, &b))
			die("decide", -EINVAL);
		hook_count += a != b;
	}
}

static const struct hooks disagree_hooks = { NULL, disagree_after };

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "build/bench/dataplane.json";
	struct chlb_table t[8] = { 0 }, t2 = { 0 }, tj = { 0 }, th = { 0 };
	struct chlb_dp_opts opts = { 0 };
	struct expect e;
	cpu_set_t cpus;
	__u8 pkt[BENCH_LEN];
	char err[256];
	int bare_fd, cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	__u32 slots[NBE + 1], i;

	only = getenv("CHLB_BENCH_ONLY");
	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	must(sched_setaffinity(0, sizeof(cpus), &cpus) ? -errno : 0, "pin to one CPU");
	if (fx_netns())
		die("private netns", -EPERM);
	if (chlb_dp_open(&opts, &dp, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	bs = chlb_bench_bpf__open();
	if (!bs)
		die("open bench object", -errno);
	for (i = 0; i < CHLB_MAP_COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(bs->obj, chlb_dp_map_name(i));

		if (!m)
			die("bench map", -ENOENT);
		must(bpf_map__reuse_fd(m, chlb_dp_map_fd(dp, i)), "reuse map");
	}
	if (getenv("CHLB_BENCH_SYNC") && !strcmp(getenv("CHLB_BENCH_SYNC"), "1")) {
		bs->rodata->cfg_sync = 1;
		must(bpf_map__set_max_entries(bs->maps.sync_ring, CHLB_DP_SYNC_RING_BYTES),
		     "size sync_ring");
	}
	/* CHLB_BENCH_BUDGET=N: N moved-flow inserts per second per CPU (the A/B of the budget) */
	if (getenv("CHLB_BENCH_BUDGET"))
		bs->rodata->cfg_moved_inserts_per_s =
		    (__u32)strtoul(getenv("CHLB_BENCH_BUDGET"), NULL, 0);
	must(chlb_bench_bpf__load(bs), "load bench object");
	if (bs->rodata->cfg_sync) {
		sync_rb = ring_buffer__new(bpf_map__fd(bs->maps.sync_ring), count_sync_record, NULL,
					   NULL);
		if (!sync_rb)
			die("sync ring buffer", -errno);
		printf("entry sync on: a sync_ring record per entry written\n");
	}
	pipe_fd = bpf_program__fd(bs->progs.bench_pipeline);
	restore_fd = bpf_program__fd(bs->progs.bench_restore_tx);
	bare_fd = bpf_program__fd(bs->progs.bench_bare_tx);

	/* state: 1000 (+1) IPv4 backends, 1000 IPv6 backends, one service per case */
	backends(1, NBE + 1, CHLB_AF_INET);
	backends(V6_BASE, NBE, CHLB_AF_INET6);
	service(1, CHLB_AF_INET, "10.0.0.1", CHLB_ALGO_RING, 1, NBE, &t[1]);
	service(2, CHLB_AF_INET, "10.0.0.2", CHLB_ALGO_JUMP, 1, NBE, &t[2]);
	service(3, CHLB_AF_INET, "10.0.0.3", CHLB_ALGO_MAGLEV, 1, NBE, &t[3]);
	service(4, CHLB_AF_INET, "10.0.0.4", CHLB_ALGO_RING, 1, 10, &t[4]);
	service(5, CHLB_AF_INET6, "2001:db8::5", CHLB_ALGO_RING, V6_BASE, NBE, &t[5]);
	service(6, CHLB_AF_INET, "10.0.0.6", CHLB_ALGO_RING, 1, NBE, &t[6]);
	service_jump_uneven(9, "10.0.0.9", 1, NBE, &tj); /* 7 and 8: the cases below */
	/* hrw, uneven weights: a Maglev-format table, so the Maglev lookup by construction */
	service_uneven(10, "10.0.0.12", CHLB_ALGO_HRW, 1, NBE, &th);
	/* service 6 after a membership change: view {t2 (1001 backends), t[6]} */
	for (i = 0; i <= NBE; i++)
		slots[i] = 1 + i;
	must(fx_table(dp, 6 * CHLB_SLOTS_PER_SERVICE + 1, CHLB_ALGO_RING, slots, NBE + 1,
		      CHLB_AF_INET, &t2),
	     "table t2");

	json = fopen(path, "w");
	if (!json)
		die(path, -errno);
	fprintf(json, "{");
	printf("pinned to CPU %d; XDP via BPF_PROG_TEST_RUN, %d runs per case in batches of %d"
	       " (floods: %d in batches of %d)\n",
	       cpu, RUNS, BATCH, FLOOD_RUNS, FLOOD_BATCH);

	struct fx_pkt s4 = { .family = CHLB_AF_INET,
			     .proto = IPPROTO_TCP,
			     .src = "198.51.100.1",
			     .dst = "10.0.0.1",
			     .sport = 40000,
			     .dport = 80,
			     .flags = FX_SYN };
	struct fx_pkt s6 = { .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::1",
			     .dst = "2001:db8::5",
			     .sport = 40000,
			     .dport = 80,
			     .flags = FX_SYN };
	const __u32 src4 = 14 + 12, src6 = 14 + 8;

	frame(pkt, &s4);
	e = (struct expect){ .verdict = XDP_TX };
	run_case("baseline_bare_xdp_tx", bare_fd, pkt, 0, &e, RUNS, BATCH);
	run_case("baseline_xdp_tx", restore_fd, pkt, src4, &e, RUNS, BATCH);

	/* the SYN of a flow never seen before: a fresh source every run */
	e = (struct expect){ .verdict = XDP_TX, .svc_id = 1, .new_flows = 1, .path = R(FORWARDED) };
	run_case("new_flow_ring_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	run_flood("new_flow_ring_n1000_fresh_src", pipe_fd, pkt, src4, &e);
	run_mix("new_flow_ring_n1000_mix256", pipe_fd, pkt, src4, &e);
	s4.dst = "10.0.0.2";
	frame(pkt, &s4);
	e.svc_id = 2;
	{
		/*
		 * Jump's SYN costs ~3.3 ns per loop iteration and the count is the
		 * flow's own: the named case takes a flow with the median count. The
		 * flow the other algorithms use needs 16 (more than 99.8% of flows).
		 */
		struct fx_pkt med = s4;
		__u32 m, buckets = chlb_table_header(&t[2])->count; /* the table the SYNs use */

		med.sport = jump_median_sport(s4, buckets, &m);
		frame(pkt, &med);
		run_case("new_flow_jump_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
		note_jump_iters("new_flow_jump_n1000", m);
		frame(pkt, &s4);
		run_case("new_flow_jump_n1000_slow_flow", pipe_fd, pkt, 0, &e, RUNS, BATCH);
		note_jump_iters("new_flow_jump_n1000_slow_flow",
				flow_jump_iterations(&s4, buckets));
	}
	run_mix("new_flow_jump_n1000_mix256", pipe_fd, pkt, src4, &e);
	/* weights 100,149,50,25: acceptance rehashes (1.84 attempts on average) */
	s4.dst = "10.0.0.9";
	frame(pkt, &s4);
	e.svc_id = 9;
	run_mix("new_flow_jump_n1000_uneven_mix256", pipe_fd, pkt, src4, &e);
	s4.dst = "10.0.0.3";
	frame(pkt, &s4);
	e.svc_id = 3;
	run_case("new_flow_maglev_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	run_mix("new_flow_maglev_n1000_mix256", pipe_fd, pkt, src4, &e);
	s4.dst = "10.0.0.12";
	frame(pkt, &s4);
	e.svc_id = 10;
	run_case("new_flow_hrw_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	s4.dst = "10.0.0.3";
	frame(pkt, &s4);
	e.svc_id = 3;
	s4.dst = "10.0.0.4";
	frame(pkt, &s4);
	e.svc_id = 4;
	run_case("new_flow_ring_n10", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	frame(pkt, &s6);
	e.svc_id = 5;
	run_case("new_flow_ipv6_ring_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	run_mix("new_flow_ipv6_ring_n1000_mix256", pipe_fd, pkt, src6, &e);

	/* profile of the maglev and ring SYN paths: cut after VIP, CRC, stickiness+decision */
	{
		int upto[3] = { bpf_program__fd(bs->progs.bench_upto_vip),
				bpf_program__fd(bs->progs.bench_upto_crc),
				bpf_program__fd(bs->progs.bench_upto_decide) };
		static const char *const names[2][3] = {
			{ "profile_maglev_parse_vip", "profile_maglev_crc",
			  "profile_maglev_stick_decide" },
			{ "profile_ring_parse_vip", "profile_ring_crc",
			  "profile_ring_stick_decide" },
		};
		int a, k;

		for (a = 0; a < 2; a++) {
			s4.dst = a ? "10.0.0.1" : "10.0.0.3";
			frame(pkt, &s4);
			e = (struct expect){ .verdict = XDP_TX };
			for (k = 0; k < 3; k++)
				run_case(names[a][k], upto[k], pkt, 0, &e, RUNS / 4, BATCH);
		}
	}

	/*
	 * A later packet of an established connection: every TCP connection has
	 * an entry from its handshake ACK on, so this is an entry hit. The SYN
	 * and the handshake ACK are sent first, untimed.
	 */
	s4.dst = "10.0.0.1";
	handshake(s4);
	s4.flags = FX_ACK;
	frame(pkt, &s4);
	e = (struct expect){ .verdict = XDP_TX, .svc_id = 1, .path = R(CT_HIT) | R(FORWARDED) };
	run_case("established_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);

	/* the same without an entry and with no SYN seen (evicted, or from another LB host) */
	{
		struct fx_pkt ne = s4;

		ne.sport = 40001;
		frame(pkt, &ne);
		clear_stamps();
		e = (struct expect){ .verdict = XDP_TX,
				     .svc_id = 1,
				     .path = R(CT_MISS) | R(FORWARDED) };
		run_case("established_no_entry_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	}

	/*
	 * The packet that writes the entry: the handshake ACK of a fresh flow
	 * whose SYN was sent (untimed, right before each batch); the entries
	 * are deleted after each batch, so the LRU is hot and far from full.
	 */
	fa_spec = s4;
	fa_spec.flags = FX_SYN;
	frame(fa_syn, &fa_spec);
	fa_spec.flags = FX_ACK;
	frame(fa_ack, &fa_spec);
	e = (struct expect){ .verdict = XDP_TX,
			     .svc_id = 1,
			     .path = R(CT_MISS) | R(CT_INSERT) | R(FORWARDED) };
	hooks = &first_ack_hooks;
	run_case("first_ack_n1000", pipe_fd, fa_ack, src4, &e, RUNS, BATCH);
	hooks = NULL;

	/* established before a change that moved it: its entry carries it */
	{
		struct chlb_service svc = { .id = 6, .fwd = CHLB_FWD_IPIP, .ntables = 2 };
		struct chlb_vip_key key;
		struct chlb_flow f;
		__u32 a, b, verdict, len = sizeof(pkt);
		__u8 addr[4] = { 10, 0, 0, 6 }, out[512];

		s4.dst = "10.0.0.6";
		for (s4.sport = 1;; s4.sport++) {
			fx_flow(&f, &s4);
			chlb_table_decide(&t[6], chlb_flow_crc(&f, 0), &a);
			chlb_table_decide(&t2, chlb_flow_crc(&f, 0), &b);
			if (a != b)
				break;
		}
		/* its handshake under the old view (t[6] alone), then the change */
		handshake(s4);
		svc.table[0] = 6 * CHLB_SLOTS_PER_SERVICE + 1;
		svc.table[1] = 6 * CHLB_SLOTS_PER_SERVICE;
		chlb_dp_vip_key(&key, CHLB_AF_INET, addr, 80, IPPROTO_TCP);
		must(chlb_dp_set_service(dp, &key, &svc), "view");
		s4.flags = FX_ACK;
		frame(pkt, &s4);
		len = sizeof(out);
		must(chlb_dp_test_run(dp, CHLB_PROG_XDP, pkt, BENCH_LEN, out, &len, &verdict),
		     "established packet");
		if (fx_slot_of(out + 14 + 16, CHLB_AF_INET) != (int)a)
			die("moved flow not on its original backend", -EINVAL);
		e = (struct expect){ .verdict = XDP_TX,
				     .svc_id = 6,
				     .path = R(CT_HIT) | R(FORWARDED) };
		run_case("established_moved_n1000", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	}

	/* SYN flood from never-seen sources into a full connection table */
	if (!only || !strncmp(only, "syn_flood", 9) || !strncmp(only, "ack_flood", 9))
		fill_conns(CHLB_DP_DEFAULT_CONN_MAX);
	s4.dst = "10.0.0.1";
	s4.flags = FX_SYN;
	frame(pkt, &s4);
	e = (struct expect){ .verdict = XDP_TX, .svc_id = 1, .new_flows = 1, .path = R(FORWARDED) };
	run_flood("syn_flood_cold", pipe_fd, pkt, src4, &e);
	/* the same with Maglev: one table word per decision instead of a ring search */
	s4.dst = "10.0.0.3";
	frame(pkt, &s4);
	e.svc_id = 3;
	run_flood("syn_flood_cold_maglev", pipe_fd, pkt, src4, &e);
	e.svc_id = 1;
	/* the same during a history window (two tables, 1 of 1001 backends added) */
	s4.dst = "10.0.0.6";
	frame(pkt, &s4);
	e.svc_id = 6;
	run_flood("syn_flood_cold_history", pipe_fd, pkt, src4, &e);

	/*
	 * ACK flood: non-SYN packets from never-seen sources, no SYN seen (the
	 * stamps the SYN floods left are cleared), against the same full
	 * table: the insert path under attack. With one table in the view no
	 * packet writes; with two (the history view above) the flows the
	 * tables disagree about do while the budget lasts (counted per batch).
	 */
	clear_stamps();
	s4.dst = "10.0.0.1";
	s4.flags = FX_ACK;
	frame(pkt, &s4);
	e = (struct expect){ .verdict = XDP_TX, .svc_id = 1, .path = R(CT_MISS) | R(FORWARDED) };
	run_flood("ack_flood_cold", pipe_fd, pkt, src4, &e);
	s4.dst = "10.0.0.6";
	frame(pkt, &s4);
	af_spec = s4;
	af_old = &t[6]; /* the view's oldest table decides an entry-less flow */
	af_new = &t2;
	e = (struct expect){ .verdict = XDP_TX,
			     .svc_id = 6,
			     .path = R(CT_MISS) | R(FORWARDED),
			     .counted = R(CT_INSERT) | R(CT_NO_BUDGET) };
	hooks = &disagree_hooks;
	run_flood("ack_flood_cold_history", pipe_fd, pkt, src4, &e);
	/*
	 * The same right after a change that moved nearly every flow (the
	 * view {ring t2, Maglev t[3]}: two algorithms over the same backends
	 * disagree about ~99.9% of flows), as an ACK flood after a service's
	 * first configuration is: each of those flows would write an entry,
	 * and the CPU's insert budget bounds them (inserted + not = moved).
	 */
	{
		struct chlb_service svc = { .id = 6, .fwd = CHLB_FWD_IPIP, .ntables = 2 };
		struct chlb_vip_key key;
		__u8 addr[4] = { 10, 0, 0, 6 };

		svc.table[0] = 6 * CHLB_SLOTS_PER_SERVICE + 1;
		svc.table[1] = 3 * CHLB_SLOTS_PER_SERVICE;
		chlb_dp_vip_key(&key, CHLB_AF_INET, addr, 80, IPPROTO_TCP);
		must(chlb_dp_set_service(dp, &key, &svc), "view");
		af_old = &t[3];
		run_flood("ack_flood_cold_moved", pipe_fd, pkt, src4, &e);
		svc.table[1] = 6 * CHLB_SLOTS_PER_SERVICE;
		must(chlb_dp_set_service(dp, &key, &svc), "view");
	}
	hooks = NULL;

	/* next hop: cached per backend by the control plane vs bpf_fib_lookup per packet */
	{
		struct chlb_backend be;
		__u32 slot = 3500;
		int ifindex;

		if (system(
			"ip link add chlbb0 type veth peer name chlbb1 && "
			"ip addr add 192.0.2.1/24 dev chlbb0 && ip link set chlbb0 up && "
			"ip link set chlbb1 up && ip neigh add 192.0.2.78 lladdr 02:00:00:00:00:78 "
			"dev chlbb0 nud permanent && echo 1 > /proc/sys/net/ipv4/ip_forward"))
			die("veth for the FIB case", -EIO);
		ifindex = if_nametoindex("chlbb0");
		memset(&be, 0, sizeof(be));
		be.family = CHLB_AF_INET;
		be.state = CHLB_BE_LIVE;
		be.gen = 1;
		inet_pton(AF_INET, "192.0.2.78", be.addr);
		must(chlb_dp_set_backend(dp, slot, &be), "fib backend");
		must(fx_table(dp, 7 * CHLB_SLOTS_PER_SERVICE, CHLB_ALGO_MAGLEV, &slot, 1,
			      CHLB_AF_INET, &t[7]),
		     "fib table");
		must(fx_service(dp, CHLB_AF_INET, "10.0.0.7", 80, IPPROTO_TCP, 7, CHLB_FWD_IPIP, 0,
				7 * CHLB_SLOTS_PER_SERVICE),
		     "fib service");
		/* an established connection: its entry is hit, then the next hop */
		s4.dst = "10.0.0.7";
		handshake(s4);
		s4.flags = FX_ACK;
		frame(pkt, &s4);
		e = (struct expect){ .verdict = XDP_REDIRECT,
				     .svc_id = 7,
				     .path = R(CT_HIT) | R(FORWARDED) };
		run_case("nexthop_fib_lookup_maglev_n1", pipe_fd, pkt, 0, &e, RUNS, BATCH);
		be.flags = CHLB_BE_F_NH_VALID;
		be.ifindex = ifindex;
		memcpy(be.dmac, (const __u8[]){ 2, 0, 0, 0, 0, 0x78 }, 6);
		must(chlb_dp_set_backend(dp, slot, &be), "cached backend");
		run_case("nexthop_cached_maglev_n1", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	}

	/* not for a VIP */
	s4.dst = "10.9.9.9";
	frame(pkt, &s4);
	e = (struct expect){ .verdict = XDP_PASS, .path = R(PASS_NOT_VIP) };
	run_case("pass_non_vip", pipe_fd, pkt, 0, &e, RUNS, BATCH);

	/*
	 * A VIP with an allow-list of 16 prefixes, the source in none: dropped
	 * after the VIP lookup and one trie lookup (the goal: pass_non_vip + 30).
	 */
	{
		struct chlb_allow_pfx al[16];
		struct chlb_vip_key key;
		struct chlb_service svc;
		__u8 addr[4] = { 10, 0, 0, 13 };

		for (i = 0; i < 16; i++) {
			memset(&al[i], 0, sizeof(al[i]));
			al[i].addr[0] = 100;
			al[i].addr[1] = (__u8)(64 + i * 4);
			al[i].plen = 14;
		}
		service(11, CHLB_AF_INET, "10.0.0.13", CHLB_ALGO_MAGLEV, 1, NBE, &t[0]);
		must(chlb_dp_set_allow(dp, 11, al, 16, true), "allow-list");
		chlb_dp_vip_key(&key, CHLB_AF_INET, addr, 80, IPPROTO_TCP);
		must(chlb_dp_get_service(dp, &key, &svc), "get view");
		svc.flags |= CHLB_SVC_F_ALLOW;
		must(chlb_dp_set_service(dp, &key, &svc), "allow view");
		s4.dst = "10.0.0.13";
		s4.flags = FX_SYN;
		frame(pkt, &s4);
		e = (struct expect){ .verdict = XDP_DROP, .svc_id = 11, .path = R(DROP_SOURCE) };
		run_case("drop_source", pipe_fd, pkt, 0, &e, RUNS, BATCH);
	}

	/* the machine, not chlb: random reads of a 1 MiB array in long and short batches */
	e = (struct expect){ .verdict = XDP_TX };
	run_case("platform_random_read_1mib", bpf_program__fd(bs->progs.bench_probe_read), pkt, 0,
		 &e, FLOOD_RUNS, FLOOD_BATCH);
	run_case("platform_random_read_1mib_short_batches",
		 bpf_program__fd(bs->progs.bench_probe_read), pkt, 0, &e, RUNS, BATCH);
	/* ... and of 4 MiB: what that read cost when conn_filter interleaved bits and stamps */
	run_case("platform_random_read_4mib", bpf_program__fd(bs->progs.bench_probe_read4), pkt, 0,
		 &e, FLOOD_RUNS, FLOOD_BATCH);

	/* the machine, not chlb: the kernel's LRU insert alone (first_ack_n1000's floor) */
	hooks = &lru_probe_hooks;
	run_case("platform_lru_insert_1m", bpf_program__fd(bs->progs.bench_probe_lru_insert), pkt,
		 0, &e, RUNS, BATCH);
	hooks = NULL;

	for (i = 0; i < (__u32)ncases; i++) {
		/* baselines and the platform probe are not the pipeline: no net */
		bool base =
		    !strncmp(res[i].name, "baseline", 8) || !strncmp(res[i].name, "platform", 8);
		double ns = !strcmp(res[i].name, "baseline_xdp_tx") ? baseline : res[i].ns;

		fprintf(json, "%s\n  \"%s\": { \"ns_per_pkt\": %.1f, \"runs\": %u, \"batch\": %u",
			i ? "," : "", res[i].name, ns, res[i].runs, res[i].batch);
		if (!base)
			fprintf(json, ", \"net_ns\": %.1f", ns - baseline);
		if (res[i].jump_iters)
			fprintf(json, ", \"jump_iterations\": %u", res[i].jump_iters);
		fprintf(json, " }");
		printf("%-42s %7.1f ns/pkt  net %6.1f", res[i].name, ns,
		       base ? 0.0 : ns - baseline);
		if (res[i].jump_iters)
			printf("  (%u jump iterations)", res[i].jump_iters);
		printf("\n");
	}
	fprintf(json, "\n}\n");
	fclose(json);
	print_goals();
	printf("wrote %s\n", path);
	for (i = 0; i < 8; i++)
		chlb_table_free(&t[i]);
	chlb_table_free(&t2);
	chlb_table_free(&tj);
	chlb_table_free(&th);
	chlb_bench_bpf__destroy(bs);
	chlb_dp_close(dp);
	return 0;
}
