// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Control-plane swap latency: time from sending a membership change to
 * chlbd until the data plane serves the new table, i.e. until the VIP's
 * view in the pinned `vips` map names a new current table; and until the
 * reply, which chlbd sends once the change is durable (the state file
 * fsynced and renamed, the directory fsynced). Alternates removing and
 * re-adding one backend; prints the median and max swap times and the
 * median durable time, in ms.
 *
 *   control SOCKET PIN_DIR VIP:PORT/PROTO BACKEND RUNS
 *
 * tests/bench/control.sh sets up chlbd and turns the output into
 * build/bench/control.json.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "engine/apply.h"

static int send_req(const char *sock, const char *text)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text) || shutdown(fd, SHUT_WR)) {
		perror("control: request");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int read_reply(int fd, char *reply, size_t len)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = read(fd, reply + got, len - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	reply[got] = '\0';
	close(fd);
	return strstr(reply, "\"error\"") ? -1 : 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char path[512], req[256], reply[4096], err[CHLB_ERR_MAX];
	struct chlb_vip_key key;
	struct chlb_service v;
	struct chlb_vip vip;
	double *ms, *dur;
	int fd, runs;

	if (argc != 6) {
		fprintf(stderr, "usage: control SOCKET PIN_DIR VIP:PORT/PROTO BACKEND RUNS\n");
		return 2;
	}
	runs = atoi(argv[5]);
	ms = calloc((size_t)runs, sizeof(*ms));
	dur = calloc((size_t)runs, sizeof(*dur));
	if (!ms || !dur || runs < 1 || chlb_parse_vip(argv[3], &vip, err, sizeof(err))) {
		fprintf(stderr, "control: bad arguments %s\n", err);
		return 2;
	}
	chlb_vip_to_key(&vip, &key);
	snprintf(path, sizeof(path), "%s/vips", argv[2]);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "control: '%s': %s\n", path, strerror(errno));
		return 1;
	}
	for (int i = 0; i < runs; i++) {
		__u32 before, spins = 0;
		__u64 t0, t1, t2;
		int cfd;

		if (bpf_map_lookup_elem(fd, &key, &v)) {
			fprintf(stderr, "control: no view for %s\n", argv[3]);
			return 1;
		}
		before = v.table[0];
		snprintf(req, sizeof(req), "backend %s %s %s%s\n", i % 2 ? "add" : "del", argv[3],
			 argv[4], i % 2 ? " weight 100" : "");
		t0 = chlb_now_ns();
		cfd = send_req(argv[1], req);
		if (cfd < 0)
			return 1;
		/*
		 * serving = the pinned view names the new table; chlbd replies after
		 * persisting. Polled every ~50 us, not spun: on a 2-CPU host a
		 * spinning client takes a CPU from chlbd's two threads (the apply
		 * and the state file's staging).
		 */
		do {
			if (bpf_map_lookup_elem(fd, &key, &v))
				return 1;
			if (v.table[0] == before)
				usleep(50);
		} while (v.table[0] == before && ++spins < 200000);
		t1 = chlb_now_ns();
		if (read_reply(cfd, reply, sizeof(reply)) || v.table[0] == before) {
			fprintf(stderr, "control: %s -> %s\n", req, reply);
			return 1;
		}
		t2 = chlb_now_ns(); /* the reply: the change is durable */
		ms[i] = (double)(t1 - t0) / 1e6;
		dur[i] = (double)(t2 - t0) / 1e6;
		usleep(150 * 1000); /* past the slot grace period: measure the swap, not the wait */
	}
	qsort(ms, (size_t)runs, sizeof(*ms), cmp_d);
	qsort(dur, (size_t)runs, sizeof(*dur), cmp_d);
	printf("median_ms %.3f max_ms %.3f runs %d durable_median_ms %.3f\n", ms[runs / 2],
	       ms[runs - 1], runs, dur[runs / 2]);
	free(ms);
	free(dur);
	return 0;
}
