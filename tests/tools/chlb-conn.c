// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-conn: one TCP connection from a FIXED source port, one request to
 * chlb-echo, then a close by FIN or by RST; for the 5-tuple reuse cases of
 * tests/e2e/test_guarantee.sh (chlb-client picks its ports itself).
 *
 *   chlb-conn -t ADDR [-p PORT] -s SPORT [-c fin|rst] [-T TIMEOUT_MS]
 *
 * The socket has SO_REUSEADDR, so the port can be bound again while an
 * earlier connection from it sits in TIME_WAIT (connect() then reuses the
 * TIME_WAIT 5-tuple when net.ipv4.tcp_tw_reuse allows it). -c rst closes
 * with SO_LINGER 0: a RST and no TIME_WAIT. Prints "conn 0 SPORT BACKEND"
 * (chlb-client's format) and exits 0, or prints "fail SPORT WHY" and exits
 * 1; usage errors exit 2.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(int sport, const char *why)
{
	printf("fail %d %s: %s\n", sport, why, strerror(errno));
	return 1;
}

static void usage(const char *why)
{
	fprintf(stderr, "chlb-conn: %s\n", why);
	fprintf(stderr,
		"usage: chlb-conn -t ADDR [-p PORT] -s SPORT [-c fin|rst] [-T TIMEOUT_MS]\n");
	exit(2);
}

static int num(const char *s, int lo, int hi, const char *why)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < lo || v > hi)
		usage(why);
	return (int)v;
}

int main(int argc, char **argv)
{
	const char *target = NULL, *req = "req 0 round 0\n";
	int port = 80, sport = 0, rst = 0, timeout_ms = 3000, one = 1, fd, opt;
	struct sockaddr_in me = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char buf[256];
	size_t len = 0;

	while ((opt = getopt(argc, argv, "t:p:s:c:T:")) != -1) {
		switch (opt) {
		case 't':
			target = optarg;
			break;
		case 'p':
			port = num(optarg, 1, 65535, "-p: a port 1..65535");
			break;
		case 's':
			sport = num(optarg, 1, 65535, "-s: a port 1..65535");
			break;
		case 'c':
			if (strcmp(optarg, "fin") && strcmp(optarg, "rst"))
				usage("-c: fin or rst");
			rst = !strcmp(optarg, "rst");
			break;
		case 'T':
			timeout_ms = num(optarg, 100, 600000, "-T: milliseconds, 100..600000");
			break;
		default:
			usage("unknown option");
		}
	}
	if (optind < argc)
		usage("unexpected argument");
	if (!target || inet_pton(AF_INET, target, &to.sin_addr) != 1)
		usage("-t: an IPv4 address is required");
	if (!sport)
		usage("-s SPORT is required");
	to.sin_port = htons(port);
	me.sin_port = htons(sport);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return fail(sport, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0)
		return fail(sport, "bind");
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		return fail(sport, "connect");
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		return fail(sport, "send");
	/* the reply: "NAME req 0 round 0\n" */
	while (!memchr(buf, '\n', len)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, timeout_ms) != 1) {
			errno = ETIMEDOUT;
			return fail(sport, "reply");
		}
		r = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (r <= 0) {
			if (!r)
				errno = ECONNRESET;
			return fail(sport, "reply");
		}
		len += (size_t)r;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = 0;
	if (!strchr(buf, ' ') || strcmp(strchr(buf, ' ') + 1, req)) {
		errno = EPROTO;
		return fail(sport, "bad reply");
	}
	*strchr(buf, ' ') = 0;
	if (rst)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	printf("conn 0 %d %s\n", sport, buf);
	return 0;
}
