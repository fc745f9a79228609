// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-ctfill: fill a pinned connection table (conns) from userspace, as
 * many connections as a busy LB holds, in seconds, for the suites that
 * need a full table (tests/daemon/test_stats.sh: `stats` stays fast while
 * /metrics is scraped).
 *
 *   chlb-ctfill [-t] [-F] [-i FIRST] [-a AGE_S] CONNS_PIN N VIP PORT SLOT:GEN [SLOT:GEN...]
 *   chlb-ctfill -H [-t] [-F] [-i FIRST] [-a AGE_S] CONNS_PIN N VIP PORT
 *
 * Writes N TCP entries client -> VIP:PORT, clients 100.64.0.0/10 and ports
 * 1024..60999 (entry i: address 100.64.0.0 + i / 60000, port 1024 + i %
 * 60000; i from FIRST, default 0), each naming one of the SLOT:GEN pairs in
 * turn (a backend's slot and generation, as `chlbctl -j backend list` shows
 * them), so the entries count as live for that service's backends. -H
 * writes held placeholders instead, as chlbd does while it waits for a sync
 * peer's entry (slot CHLB_CONN_HELD_SLOT, generation 0, flags HELD:
 * include/chlb_maps.h). The entries are stamped now, or AGE_S seconds ago
 * with -a (a placeholder past CHLB_CONN_HELD_MAX_NS is stale). -F also
 * sets each entry's bits in the connection filter pinned next to CONNS_PIN
 * (conn_filter_<layout>, both banks), as the data plane does before it
 * writes an entry: the table then looks like one traffic filled, and
 * chlbd's filter upkeep (ctmaint.c) finds no growth to rebuild for when
 * the same flows come back from a sync peer. IPv4 only.
 * BPF_MAP_UPDATE_BATCH (BPF_ANY) in chunks of 16384. Prints the entries
 * written; -t also the seconds it took. Exit 0, 1 on a failure (the reason
 * on stderr), 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "chlb_maps.h"

#define CHUNK	    16384u
#define PORTS	    60000u
#define MAX_SLOTS   1024
#define MAX_ENTRIES (1u << 26)

static int usage(void)
{
	fprintf(stderr,
		"usage: chlb-ctfill [-t] [-F] [-i FIRST] [-a AGE_S] CONNS_PIN N VIP PORT "
		"SLOT:GEN [SLOT:GEN...]\n"
		"       chlb-ctfill -H [-t] [-F] [-i FIRST] [-a AGE_S] CONNS_PIN N VIP PORT\n");
	return 2;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * -F: the connection filter pinned next to conns_pin, mapped; NULL (the
 * reason on stderr) when it cannot be.
 */
static struct chlb_conn_filter *filter_map(const char *conns_pin)
{
	const char *slash = strrchr(conns_pin, '/');
	size_t bytes = sizeof(struct chlb_conn_filter);
	char path[4096];
	void *mem;
	int fd;

	snprintf(path, sizeof(path), "%.*sconn_filter_%s", slash ? (int)(slash - conns_pin + 1) : 0,
		 conns_pin, CHLB_CONN_FILTER_LAYOUT);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "chlb-ctfill: couldn't open '%s': %s\n", path, strerror(errno));
		return NULL;
	}
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "chlb-ctfill: couldn't map '%s': %s\n", path, strerror(errno));
		return NULL;
	}
	return mem;
}

/* A flow's bits in both banks, as the data plane sets them (include/chlb_maps.h). */
static void filter_add(struct chlb_conn_filter *filter, const struct chlb_flow *f)
{
	__u32 fk = chlb_conn_fkey(f);

	__atomic_fetch_or(&filter->bank[0][chlb_filter_word(fk)], chlb_filter_mask(fk),
			  __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&filter->bank[1][chlb_filter_word(fk)], chlb_filter_mask(fk),
			  __ATOMIC_SEQ_CST);
}

/* The data plane's clock (bpf_ktime_get_coarse_ns): entries refreshed now. */
static __u64 coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static __u16 slot[MAX_SLOTS];
	static __u32 gen[MAX_SLOTS];
	struct chlb_conn_filter *filter = NULL;
	struct chlb_flow *keys;
	struct chlb_conn *vals;
	unsigned long n, port, s, g, first = 0, age = 0;
	struct in_addr vip;
	int o, fd, nslots = 0;
	bool timed = false, held = false, bits = false;
	__u64 last;
	double t0;
	char *end;

	while ((o = getopt(argc, argv, "tHFi:a:")) != -1) {
		if (o == 't') {
			timed = true;
		} else if (o == 'F') {
			bits = true;
		} else if (o == 'H') {
			held = true;
		} else if (o == 'i' || o == 'a') {
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || v > MAX_ENTRIES)
				return usage();
			if (o == 'i')
				first = v;
			else
				age = v;
		} else {
			return usage();
		}
	}
	argv += optind;
	argc -= optind;
	if (argc < (held ? 4 : 5) || (held && argc > 4))
		return usage();
	n = strtoul(argv[1], &end, 10);
	if (*end || !n || n > MAX_ENTRIES || first + n > MAX_ENTRIES)
		return usage();
	if (inet_pton(AF_INET, argv[2], &vip) != 1)
		return usage();
	port = strtoul(argv[3], &end, 10);
	if (*end || port > 65535)
		return usage();
	for (int i = 4; i < argc; i++) {
		s = strtoul(argv[i], &end, 10);
		if (*end != ':' || s >= CHLB_MAX_BACKENDS || nslots == MAX_SLOTS)
			return usage();
		g = strtoul(end + 1, &end, 10);
		if (*end || g > 0xffffffffUL)
			return usage();
		slot[nslots] = (__u16)s;
		gen[nslots++] = (__u32)g;
	}
	fd = bpf_obj_get(argv[0]);
	if (fd < 0) {
		fprintf(stderr, "chlb-ctfill: couldn't open '%s': %s\n", argv[0], strerror(errno));
		return 1;
	}
	if (bits && !(filter = filter_map(argv[0])))
		return 1;
	keys = calloc(CHUNK, sizeof(*keys));
	vals = calloc(CHUNK, sizeof(*vals));
	if (!keys || !vals) {
		fprintf(stderr, "chlb-ctfill: out of memory\n");
		return 1;
	}
	t0 = now_s();
	last = coarse_ns();
	if (age * 1000000000ull >= last) {
		fprintf(stderr, "chlb-ctfill: the clock is not %lu s old yet\n", age);
		return 1;
	}
	last -= age * 1000000000ull;
	for (unsigned long base = 0; base < n; base += CHUNK) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
		__u32 cnt = n - base < CHUNK ? (__u32)(n - base) : CHUNK;

		for (__u32 k = 0; k < cnt; k++) {
			unsigned long i = first + base + k;
			__u32 src = htonl(0x64400000u + (__u32)(i / PORTS)); /* 100.64.0.0 + */

			memset(&keys[k], 0, sizeof(keys[k]));
			memcpy(keys[k].src, &src, 4);
			memcpy(keys[k].dst, &vip, 4);
			keys[k].sport = htons((__u16)(1024 + i % PORTS));
			keys[k].dport = htons((__u16)port);
			keys[k].proto = IPPROTO_TCP;
			keys[k].family = CHLB_AF_INET;
			memset(&vals[k], 0, sizeof(vals[k]));
			if (held) {
				vals[k].backend = CHLB_CONN_HELD_SLOT;
				vals[k].flags = CHLB_CONN_F_HELD;
			} else {
				vals[k].backend = slot[i % (unsigned long)nslots];
				vals[k].gen = gen[i % (unsigned long)nslots];
			}
			vals[k].last_ns = last;
			if (filter) /* the bits first, as the data plane writes them */
				filter_add(filter, &keys[k]);
		}
		if (bpf_map_update_batch(fd, keys, vals, &cnt, &opts)) {
			fprintf(stderr, "chlb-ctfill: couldn't write entries %lu..: %s\n", base,
				strerror(errno));
			return 1;
		}
	}
	if (timed)
		printf("%lu %.2f\n", n, now_s() - t0);
	else
		printf("%lu\n", n);
	close(fd);
	free(keys);
	free(vals);
	return 0;
}
