// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The conns LRU choice measured (docs/performance.md):
 * the kernel's LRU hash with one common LRU against BPF_F_NO_COMMON_LRU
 * (per-CPU LRU lists, one hash table), conns' key and value and size
 * (CHLB_LRU_ENTRIES, default 2^20), bpf/chlb_lru.bpf.c inserting.
 *
 * Per flavour: an insert into the full table, one CPU alone and both CPUs
 * at once (BPF_PROG_TEST_RUN on two threads pinned to CPUs 0 and 1; ns per
 * insert from the kernel's own timing); an entry inserted on CPU 0 looked up
 * by a program on CPU 1 (an RSS move); how many of N/4 entries CPU 0
 * inserted survive CPU 0 inserting N/2 more (the table not full); how many of
 * N/8 entries CPU 0 inserted survive a flood of N inserts on CPU 1; the
 * kernel's memory figure per entry. Writes a JSON report to argv[1].
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "chlb_maps.h"
#include "chlb_lru.skel.h"

struct run {
	int prog, cpu;
	__u32 repeat;
	double ns;
	int rc;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *run_thread(void *arg)
{
	struct run *r = arg;
	__u8 pkt[64] = { 0 };
	__u32 left = r->repeat;
	double total = 0;

	r->rc = pin(r->cpu);
	while (!r->rc && left) {
		__u32 n = left > 1000000 ? 1000000 : left;
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt),
			    .repeat = n);

		pkt[12] = 0x08;
		r->rc = bpf_prog_test_run_opts(r->prog, &o) ? -errno : 0;
		if (!r->rc && o.retval != XDP_TX)
			r->rc = -EIO;
		total += (double)o.duration * n;
		left -= n;
	}
	r->ns = total / r->repeat;
	return NULL;
}

/* Runs on CPUs cpus[0..n) at once; returns the mean ns per run. */
static double runs(int prog, const int *cpus, int n, __u32 repeat)
{
	struct run r[2];
	pthread_t t[2];
	double ns = 0;

	for (int i = 0; i < n; i++) {
		r[i] = (struct run){ .prog = prog, .cpu = cpus[i], .repeat = repeat };
		pthread_create(&t[i], NULL, run_thread, &r[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		if (r[i].rc) {
			fprintf(stderr, "test run on CPU %d: %s\n", cpus[i], strerror(-r[i].rc));
			exit(1);
		}
		ns += r[i].ns / n;
	}
	return ns;
}

static __u64 counter_of(struct chlb_lru_bpf *s, int cpu)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v = calloc(ncpu, sizeof(*v)), x = 0;
	__u32 zero = 0;

	if (v && !bpf_map_lookup_elem(bpf_map__fd(s->maps.counter), &zero, v))
		x = v[cpu];
	free(v);
	return x;
}

static void key_of(struct chlb_flow *f, __u64 n, __u32 cpu, __u32 tag)
{
	memset(f, 0, sizeof(*f));
	f->sport = 1;
	f->dport = 80;
	f->proto = 6;
	f->family = 2;
	*(__u32 *)f->src = (__u32)n;
	*(__u32 *)(f->src + 4) = cpu;
	*(__u32 *)(f->src + 8) = tag;
}

/* How many of CPU cpu's keys (counter values from..to] with tag are in map fd. */
static __u64 survivors(int fd, __u64 from, __u64 to, __u32 cpu, __u32 tag)
{
	struct chlb_conn c;
	struct chlb_flow f;
	__u64 n = 0;

	for (__u64 i = from + 1; i <= to; i++) {
		key_of(&f, i, cpu, tag);
		n += !bpf_map_lookup_elem(fd, &f, &c);
	}
	return n;
}

static long long memlock(int fd)
{
	char path[64], line[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static void flavour(FILE *js, int percpu, __u32 n, int last)
{
	const char *name = percpu ? "no_common_lru" : "common_lru";
	const int c0[1] = { 0 }, c1[1] = { 1 }, both[2] = { 0, 1 };
	struct chlb_lru_bpf *s = chlb_lru_bpf__open();
	__u64 a0, a1, own, flood, k;
	double one, two;
	int fd, ins, look, found;

	if (!s)
		exit(1);
	bpf_map__set_max_entries(percpu ? s->maps.lru_percpu : s->maps.lru_common, n);
	s->bss->use_percpu = percpu;
	if (chlb_lru_bpf__load(s)) {
		fprintf(stderr, "load failed\n");
		exit(1);
	}
	fd = bpf_map__fd(percpu ? s->maps.lru_percpu : s->maps.lru_common);
	ins = bpf_program__fd(s->progs.lru_insert);
	look = bpf_program__fd(s->progs.lru_lookup);

	/* own capacity: N/4 on CPU 0, then N/2 more on CPU 0 (3/4 of the table) */
	s->bss->tag = 1;
	runs(ins, c0, 1, n / 4);
	a1 = counter_of(s, 0);
	s->bss->tag = 2;
	runs(ins, c0, 1, n / 2);
	own = survivors(fd, 0, a1, 0, 1);
	/* a flood on CPU 1: N/8 on CPU 0 first, then N on CPU 1 */
	s->bss->tag = 3;
	a0 = counter_of(s, 0);
	runs(ins, c0, 1, n / 8);
	a1 = counter_of(s, 0);
	s->bss->tag = 4;
	runs(ins, c1, 1, n);
	flood = survivors(fd, a0, a1, 0, 3);
	/* the table is full: an insert evicts */
	s->bss->tag = 5;
	one = runs(ins, c0, 1, 1000000);
	two = runs(ins, both, 2, 1000000);
	/* an RSS move: inserted on CPU 0, looked up on CPU 1 */
	s->bss->tag = 6;
	runs(ins, c0, 1, 1);
	key_of(&s->bss->probe, counter_of(s, 0), 0, 6);
	{
		struct run r = { .prog = look, .cpu = 1, .repeat = 1 };
		pthread_t t;

		pthread_create(&t, NULL, run_thread, &r);
		pthread_join(t, NULL);
		found = r.rc == 0; /* XDP_TX: found */
	}
	k = n;
	printf("%-14s insert into a full table: one CPU %.0f ns, both CPUs at once %.0f ns; "
	       "RSS move found: %s; CPU 0's N/4 after N/2 more on CPU 0: %.1f%% left; "
	       "CPU 0's N/8 after N on CPU 1: %.1f%% left; memlock %lld B (%.0f B/entry)\n",
	       name, one, two, found ? "yes" : "NO", 100.0 * own / (n / 4), 100.0 * flood / (n / 8),
	       memlock(fd), (double)memlock(fd) / k);
	fprintf(js,
		"  \"%s\": {\"entries\": %u, \"insert_full_one_cpu_ns\": %.1f, "
		"\"insert_full_two_cpus_ns\": %.1f, \"rss_move_found\": %s, "
		"\"own_quarter_left_pct\": %.1f, \"quiet_cpu_left_after_flood_pct\": %.1f, "
		"\"memlock_bytes\": %lld, \"bytes_per_entry\": %.1f}%s\n",
		name, n, one, two, found ? "true" : "false", 100.0 * own / (n / 4),
		100.0 * flood / (n / 8), memlock(fd), (double)memlock(fd) / k, last ? "" : ",");
	chlb_lru_bpf__destroy(s);
}

int main(int argc, char **argv)
{
	const char *env = getenv("CHLB_LRU_ENTRIES");
	__u32 n = env ? (__u32)strtoul(env, NULL, 0) : 1u << 20;
	FILE *js = fopen(argc > 1 ? argv[1] : "/dev/null", "w");

	if (!js || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "lru: needs two CPUs and a writable report\n");
		return 1;
	}
	fprintf(js, "{\n  \"cpus\": %ld,\n", sysconf(_SC_NPROCESSORS_ONLN));
	flavour(js, 0, n, 0);
	flavour(js, 1, n, 1);
	fprintf(js, "}\n");
	fclose(js);
	return 0;
}
