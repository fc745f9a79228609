// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-markconn: one TCP connection with a socket mark, as chlbd's health
 * checker makes one `via vip` (tests/e2e/test_probe_steer.sh).
 *
 *   chlb-markconn [-m MARK] [-s SLOT] [-t TIMEOUT_MS] ADDR PORT
 *
 * -s SLOT sets the mark CHLB_PROBE_MARK(SLOT) (include/chlb_maps.h); -m
 * any mark (hex with 0x). Connects to ADDR:PORT, sends one line and
 * prints the answer of the e2e echo server ("bN probe"), which names the
 * backend that served it. Exit 0 on an answer, 1 on a timeout or a refused
 * or reset connection (the reason on stderr), 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "chlb_maps.h"

static int usage(void)
{
	fprintf(stderr, "usage: chlb-markconn [-m MARK] [-s SLOT] [-t TIMEOUT_MS] ADDR PORT\n");
	return 2;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline: 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return 0;
		n = poll(&p, 1, (int)left);
		if (n > 0 || (n < 0 && errno != EINTR))
			return 1;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss = { 0 };
	unsigned long mark = 0, timeout = 2000;
	char *end, buf[256];
	long long deadline;
	socklen_t sl;
	int o, fd, err = 0, port;
	size_t got = 0;

	while ((o = getopt(argc, argv, "m:s:t:")) != -1) {
		switch (o) {
		case 'm':
			mark = strtoul(optarg, &end, 0);
			if (*end || mark > 0xffffffffUL)
				return usage();
			break;
		case 's':
			mark = strtoul(optarg, &end, 10);
			if (*end || mark >= CHLB_MAX_BACKENDS)
				return usage();
			mark = CHLB_PROBE_MARK(mark);
			break;
		case 't':
			timeout = strtoul(optarg, &end, 10);
			if (*end || !timeout)
				return usage();
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 2)
		return usage();
	port = atoi(argv[optind + 1]);
	if (port <= 0 || port > 65535)
		return usage();
	if (inet_pton(AF_INET, argv[optind], &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
		sl = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, argv[optind], &((struct sockaddr_in6 *)&ss)->sin6_addr) ==
		   1) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		sl = sizeof(struct sockaddr_in6);
	} else {
		fprintf(stderr, "chlb-markconn: '%s': not an address\n", argv[optind]);
		return 2;
	}

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    (mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &(int){ (int)mark }, sizeof(int)))) {
		perror("chlb-markconn: socket/SO_MARK");
		return 2;
	}
	deadline = now_ms() + (long long)timeout;
	if (connect(fd, (struct sockaddr *)&ss, sl) && errno != EINPROGRESS) {
		fprintf(stderr, "chlb-markconn: connect: %s\n", strerror(errno));
		return 1;
	}
	if (!wait_fd(fd, POLLOUT, deadline)) {
		fprintf(stderr, "chlb-markconn: timeout connecting (mark 0x%lx)\n", mark);
		return 1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &(socklen_t){ sizeof(err) });
	if (err) {
		fprintf(stderr, "chlb-markconn: connect: %s\n", strerror(err));
		return 1;
	}
	if (write(fd, "probe\n", 6) != 6) {
		fprintf(stderr, "chlb-markconn: write: %s\n", strerror(errno));
		return 1;
	}
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		ssize_t n;

		if (!wait_fd(fd, POLLIN, deadline)) {
			fprintf(stderr, "chlb-markconn: timeout waiting for the answer\n");
			return 1;
		}
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0) {
			fprintf(stderr, "chlb-markconn: read: %s\n", n ? strerror(errno) : "EOF");
			return 1;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	fputs(buf, stdout);
	close(fd);
	return 0;
}
