// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One case of the live-traffic bench (tests/bench/live.sh,
 * docs/bench-live.md): live frames from bpf/chlb_live.bpf.c's generator,
 * redirected into a veth whose peer runs the program under test (chlb, or
 * the XDP_TX ceiling); what comes back is counted and dropped on this end.
 *
 *   live --netns NS --dev DEV --cpus 0[,1] --secs S --family 4|6 --flags syn|ack
 *        --base N --mask M [--stats PIN/global_stats] [--warm S]
 *
 * Joins NS (setns: the process stays in the host's mount namespace, where
 * chlb's pins are), attaches the counter to DEV (a bpf_link: gone when this
 * process exits), runs one generator thread per CPU listed, each pinned and
 * calling BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES in a loop. After
 * --warm seconds (caches, the peer's NAPI) it counts what comes back over
 * --secs seconds. Prints one JSON object: mpps (returned frames per
 * second over the window), per-CPU mpps, frames sent and returned over the
 * whole run, the generator threads' CPU time over the window and the Mpps
 * per CPU-second of it, the share of each host CPU busy over the window, the load
 * average, and - with --stats - the deltas of chlb's per-reason counters
 * (its pinned global_stats map) over the whole run, warm-up included.
 * With --prog-id ID (the program under test) it also turns on the kernel's
 * BPF run-time statistics (BPF_ENABLE_STATS, for as long as it runs: every
 * program on the host then pays two clock reads a run) and reports that
 * program's ns per run over the window: its own cost, without the veths'.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "chlb_maps.h"
#include "chlb_live.skel.h"

#define MAX_CPUS   64
#define REPEAT	   65536 /* frames per BPF_PROG_TEST_RUN call: ~10-100 ms */
#define BATCH_SIZE 64	 /* frames per redirect flush, as a NIC's NAPI budget */

static struct chlb_live_bpf *sk;
static volatile int stop;
static int ncpus;
static __u8 frame[80];
static __u32 frame_len;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *gen_thread(void *arg)
{
	int cpu = (int)(long)arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		fprintf(stderr, "live: can't pin to CPU %d\n", cpu);
		exit(1);
	}
	while (!stop) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = frame_len,
			    .repeat = REPEAT, .batch_size = BATCH_SIZE,
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

		/* live frames: no retval; what came back is counted on the far side */
		if (bpf_prog_test_run_opts(bpf_program__fd(sk->progs.live_gen), &o)) {
			fprintf(stderr, "live: BPF_PROG_TEST_RUN: %s\n", strerror(errno));
			exit(1);
		}
	}
	return NULL;
}

/* Per-CPU values of a one-element per-CPU array of __u64. */
static void read_percpu(int fd, __u64 *v)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, v)) {
		perror("live: reading a per-CPU counter");
		exit(1);
	}
}

static __u64 sum(const __u64 *v)
{
	__u64 s = 0;
	int c;

	for (c = 0; c < ncpus; c++)
		s += v[c];
	return s;
}

/* chlb's per-reason counters, summed over CPUs. */
static void read_reasons(int fd, __u64 *out)
{
	size_t stride = (sizeof(struct chlb_global_stats) + 7) & ~(size_t)7;
	char *buf = calloc(ncpus, stride);
	__u32 zero = 0;
	int c, r;

	if (!buf || bpf_map_lookup_elem(fd, &zero, buf)) {
		perror("live: reading chlb's global_stats");
		exit(1);
	}
	memset(out, 0, sizeof(__u64) * CHLB_R_MAX);
	for (c = 0; c < ncpus; c++)
		for (r = 0; r < CHLB_R_MAX; r++)
			out[r] += ((struct chlb_global_stats *)(buf + c * stride))->reason[r];
	free(buf);
}

/*
 * The generator threads' CPU time, in seconds. The frames' whole way - the
 * peer's NAPI with the program under test, the far side's - runs in
 * softirq on the thread's CPU, in its context (on bh enable after each
 * batch), and tick-based accounting charges that to the thread; so this is
 * the CPU the case got, whatever other work shared the CPU.
 */
static double threads_cpu_s(const pthread_t *th, int n)
{
	double s = 0;
	int i;

	for (i = 0; i < n; i++) {
		struct timespec ts;
		clockid_t id;

		if (pthread_getcpuclockid(th[i], &id) || clock_gettime(id, &ts)) {
			perror("live: a generator thread's CPU time");
			exit(1);
		}
		s += ts.tv_sec + ts.tv_nsec / 1e9;
	}
	return s;
}

/* The program's run-time statistics so far (none: fd < 0). */
static void prog_info(int fd, struct bpf_prog_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, info, &len)) {
		perror("live: program info");
		exit(1);
	}
}

/* /proc/stat: busy and total jiffies per CPU. */
static int read_cpu_times(unsigned long long *busy, unsigned long long *total)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && n < MAX_CPUS) {
		unsigned long long v[10] = { 0 };
		int cpu;

		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 9)
			continue;
		total[n] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
		busy[n] = total[n] - v[3] - v[4];
		n++;
	}
	fclose(f);
	return n;
}

/* The template: Ethernet, IPv4 or IPv6, TCP to VIP:dport with the flags. */
static void build_frame(int family, int syn, const char *vip, int dport)
{
	__u8 *p = frame;
	__u8 *tcp;

	memset(frame, 0, sizeof(frame));
	memcpy(p, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	if (family == 4) {
		p[12] = 0x08;
		p[14] = 0x45;
		p[17] = 40; /* total length */
		p[22] = 64; /* TTL */
		p[23] = IPPROTO_TCP;
		inet_pton(AF_INET, "11.0.0.1", p + 26);
		if (inet_pton(AF_INET, vip, p + 30) != 1)
			goto bad;
		tcp = p + 34;
		frame_len = 64;
		sk->bss->gen_ip_off = 26;
		sk->bss->gen_port_off = 34;
	} else {
		p[12] = 0x86;
		p[13] = 0xdd;
		p[14] = 0x60;
		p[19] = 20; /* payload length */
		p[20] = IPPROTO_TCP;
		p[21] = 64;
		inet_pton(AF_INET6, "2001:db8:11::1", p + 22);
		if (inet_pton(AF_INET6, vip, p + 38) != 1)
			goto bad;
		tcp = p + 54;
		frame_len = 80;
		sk->bss->gen_ip_off = 34;
		sk->bss->gen_port_off = 54;
	}
	tcp[2] = dport >> 8;
	tcp[3] = dport & 0xff;
	tcp[4] = 1;	/* seq */
	tcp[12] = 0x50; /* data offset 5 */
	tcp[13] = syn ? 0x02 : 0x10;
	tcp[15] = 0xff; /* window */
	memcpy(sk->bss->gen_tmpl, frame, sizeof(frame));
	sk->bss->gen_len = frame_len;
	return;
bad:
	fprintf(stderr, "live: bad VIP %s for IPv%d\n", vip, family);
	exit(2);
}

static void usage(void)
{
	fprintf(stderr, "usage: live --netns NS --dev DEV --cpus 0[,1] --secs S --family 4|6 "
			"--flags syn|ack --vip ADDR [--dport P] [--base N] [--mask M] "
			"[--stats PIN/global_stats] [--warm S] [--prog-id ID]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "netns", required_argument, NULL, 'n' },
					      { "dev", required_argument, NULL, 'd' },
					      { "cpus", required_argument, NULL, 'c' },
					      { "secs", required_argument, NULL, 's' },
					      { "family", required_argument, NULL, 'f' },
					      { "flags", required_argument, NULL, 'F' },
					      { "vip", required_argument, NULL, 'v' },
					      { "dport", required_argument, NULL, 'p' },
					      { "base", required_argument, NULL, 'b' },
					      { "mask", required_argument, NULL, 'm' },
					      { "stats", required_argument, NULL, 'S' },
					      { "warm", required_argument, NULL, 'w' },
					      { "prog-id", required_argument, NULL, 'P' },
					      {} };
	const char *netns = NULL, *dev = NULL, *cpus = "0", *vip = NULL, *stats = NULL;
	double secs = 2, warm = 0.2, t0, t1, load1 = 0, gen_cpu0, gen_cpu1;
	int family = 4, syn = 1, dport = 80, o, i, ncpu_gen = 0, cpu_list[MAX_CPUS], stats_fd = -1;
	unsigned long base = 0, mask = 0, prog_id = 0;
	struct bpf_prog_info pi0 = {}, pi1 = {};
	int prog_fd = -1;
	__u64 c0[MAX_CPUS] = { 0 }, c1[MAX_CPUS] = { 0 }, sent[MAX_CPUS] = { 0 };
	__u64 r0[CHLB_R_MAX], r1[CHLB_R_MAX];
	unsigned long long b0[MAX_CPUS], tt0[MAX_CPUS], b1[MAX_CPUS], tt1[MAX_CPUS];
	pthread_t th[MAX_CPUS];
	struct bpf_link *link;
	int nstat, fd, ifindex;
	char *s, *tok;
	FILE *la;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			netns = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'c':
			cpus = optarg;
			break;
		case 's':
			secs = atof(optarg);
			break;
		case 'f':
			family = atoi(optarg);
			break;
		case 'F':
			syn = !strcmp(optarg, "syn");
			break;
		case 'v':
			vip = optarg;
			break;
		case 'p':
			dport = atoi(optarg);
			break;
		case 'b':
			base = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			mask = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			stats = optarg;
			break;
		case 'w':
			warm = atof(optarg);
			break;
		case 'P':
			prog_id = strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!dev || !vip || (family != 4 && family != 6) || secs <= 0)
		usage();
	s = strdup(cpus);
	for (tok = strtok(s, ","); tok && ncpu_gen < MAX_CPUS; tok = strtok(NULL, ","))
		cpu_list[ncpu_gen++] = atoi(tok);
	free(s);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0 || ncpus > MAX_CPUS || !ncpu_gen)
		usage();

	/* setns(CLONE_NEWNET) keeps the mount namespace: the pin is found either way */
	if (stats && (stats_fd = bpf_obj_get(stats)) < 0) {
		fprintf(stderr, "live: %s: %s\n", stats, strerror(errno));
		return 1;
	}
	if (prog_id) {
		prog_fd = bpf_prog_get_fd_by_id(prog_id);
		if (prog_fd < 0 || bpf_enable_stats(BPF_STATS_RUN_TIME) < 0) {
			fprintf(stderr, "live: program %lu's run-time statistics: %s\n", prog_id,
				strerror(errno));
			return 1;
		}
	}
	if (netns) {
		char path[256];

		snprintf(path, sizeof(path), "/var/run/netns/%s", netns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET)) {
			fprintf(stderr, "live: netns %s: %s\n", netns, strerror(errno));
			return 1;
		}
		close(fd);
	}
	ifindex = if_nametoindex(dev);
	if (!ifindex) {
		fprintf(stderr, "live: no device %s\n", dev);
		return 1;
	}
	sk = chlb_live_bpf__open();
	if (!sk)
		return 1;
	build_frame(family, syn, vip, dport);
	sk->bss->gen_ifindex = ifindex;
	sk->bss->gen_base = base;
	sk->bss->gen_mask = mask;
	if (chlb_live_bpf__load(sk)) {
		fprintf(stderr, "live: loading the generator failed\n");
		return 1;
	}
	link = bpf_program__attach_xdp(sk->progs.live_count, ifindex);
	if (!link) {
		fprintf(stderr, "live: attaching the counter to %s: %s\n", dev, strerror(errno));
		return 1;
	}

	if (stats_fd >= 0)
		read_reasons(stats_fd, r0);
	for (i = 0; i < ncpu_gen; i++)
		pthread_create(&th[i], NULL, gen_thread, (void *)(long)cpu_list[i]);
	usleep((useconds_t)(warm * 1e6));
	nstat = read_cpu_times(b0, tt0);
	read_percpu(bpf_map__fd(sk->maps.count), c0);
	prog_info(prog_fd, &pi0);
	gen_cpu0 = threads_cpu_s(th, ncpu_gen);
	t0 = now_s();
	usleep((useconds_t)(secs * 1e6));
	read_percpu(bpf_map__fd(sk->maps.count), c1);
	prog_info(prog_fd, &pi1);
	gen_cpu1 = threads_cpu_s(th, ncpu_gen);
	t1 = now_s();
	read_cpu_times(b1, tt1);
	stop = 1;
	for (i = 0; i < ncpu_gen; i++)
		pthread_join(th[i], NULL);
	usleep(20000); /* the last batches come back */
	read_percpu(bpf_map__fd(sk->maps.gen_seq), sent);
	if (stats_fd >= 0)
		read_reasons(stats_fd, r1);
	la = fopen("/proc/loadavg", "r");
	if (la) {
		if (fscanf(la, "%lf", &load1) != 1)
			load1 = 0;
		fclose(la);
	}
	{
		__u64 end[MAX_CPUS] = { 0 };

		read_percpu(bpf_map__fd(sk->maps.count), end);
		printf("{\"mpps\": %.3f, \"window_s\": %.3f, \"cpus\": \"%s\", \"per_cpu_mpps\": [",
		       (double)(sum(c1) - sum(c0)) / (t1 - t0) / 1e6, t1 - t0, cpus);
		for (i = 0; i < ncpu_gen; i++)
			printf("%s%.3f", i ? ", " : "",
			       (double)(c1[cpu_list[i]] - c0[cpu_list[i]]) / (t1 - t0) / 1e6);
		printf("], \"gen_cpu_s\": %.3f, \"mpps_per_gen_cpu\": %.3f", gen_cpu1 - gen_cpu0,
		       gen_cpu1 > gen_cpu0
			   ? (double)(sum(c1) - sum(c0)) / (gen_cpu1 - gen_cpu0) / 1e6
			   : 0);
		printf(", \"sent\": %llu, \"returned\": %llu, \"host_cpu_busy\": [",
		       (unsigned long long)sum(sent), (unsigned long long)sum(end));
		for (i = 0; i < nstat; i++)
			printf("%s%.2f", i ? ", " : "",
			       tt1[i] > tt0[i] ? (double)(b1[i] - b0[i]) / (tt1[i] - tt0[i]) : 0);
		printf("], \"loadavg1\": %.2f", load1);
		if (prog_fd >= 0 && pi1.run_cnt > pi0.run_cnt)
			printf(", \"prog_ns_per_run\": %.1f, \"prog_runs\": %llu",
			       (double)(pi1.run_time_ns - pi0.run_time_ns) /
				   (pi1.run_cnt - pi0.run_cnt),
			       (unsigned long long)(pi1.run_cnt - pi0.run_cnt));
	}
	if (stats_fd >= 0) {
		int first = 1;

		printf(", \"chlb\": {");
		for (i = 0; i < CHLB_R_MAX; i++) {
			if (r1[i] == r0[i])
				continue;
			printf("%s\"%s\": %llu", first ? "" : ", ", chlb_reason_names[i],
			       (unsigned long long)(r1[i] - r0[i]));
			first = 0;
		}
		printf("}");
	}
	printf("}\n");
	bpf_link__destroy(link);
	chlb_live_bpf__destroy(sk);
	return 0;
}
