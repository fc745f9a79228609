// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-echo: the backend server of the end-to-end tests.
 *
 *   chlb-echo -n NAME [-p PORT | -p LO-HI]
 *
 * Listens on TCP and UDP PORT (default 80) on every address, IPv4 and IPv6;
 * LO-HI: on every port from LO to HI (at most 1024: all-port VIPs' tests).
 * TCP: for every line received it answers "NAME <line>\n", so a client learns
 * which backend serves the connection on every exchange, for as long as the
 * connection lives. An HTTP/1.1 GET gets a 200 whose body is "NAME PATH\n"
 * (so `curl http://VIP/` works too). UDP: every datagram is answered with
 * "NAME <datagram>", sent FROM the address it was sent to (the VIP on lo, in a DSR setup) so a
 * connected client socket accepts it. One epoll loop; thousands of idle
 * connections cost one fd and a small buffer each.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINE_MAX_LEN 16384

#define MAX_PORTS 1024

/* What an epoll event is about: kind first in both, a connection's is 0 (calloc). */
enum {
	K_CONN = 0,
	K_TCP_LISTEN,
	K_UDP
};
struct listener {
	int kind;
	int fd;
};

struct conn {
	int kind; /* K_CONN */
	int fd;
	size_t len;
	char buf[LINE_MAX_LEN];
};

static const char *name = "backend";
static size_t name_len;

static int listen_sock(int type, int port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	int fd, one = 1, zero = 0;

	fd = socket(AF_INET6, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (type == SOCK_DGRAM) {
		/* Learn each datagram's destination, to answer from it. */
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Blocking-enough write of a small answer; the peer reads before sending more. */
static int write_all(int fd, const char *p, size_t n)
{
	int spins = 0;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EAGAIN && ++spins < 1000) {
			usleep(1000);
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

/*
 * HTTP/1.1 GET (curl, or chlb-client -H): once the header block is complete,
 * answer 200 with body "NAME PATH\n" and keep the connection open. Returns
 * the answer's length and in *used the request's; 0 while incomplete.
 */
static int http_answer(struct conn *c, char *out, size_t outlen, size_t *used)
{
	char *eoh = memmem(c->buf, c->len, "\r\n\r\n", 4);
	char *sp, body[LINE_MAX_LEN];
	int blen;

	if (!eoh)
		return 0;
	*used = eoh + 4 - c->buf;
	sp = memchr(c->buf + 4, ' ', eoh - c->buf - 4);
	blen = snprintf(body, sizeof(body), "%s %.*s\n", name, (int)((sp ? sp : eoh) - c->buf - 4),
			c->buf + 4);
	return snprintf(out, outlen,
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			"X-Backend: %s\r\n\r\n%s",
			blen, name, body);
}

/* Answer every complete line; returns -1 when the connection must close. */
static int serve_tcp(struct conn *c)
{
	char out[LINE_MAX_LEN + 128];

	for (;;) {
		ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		char *nl;

		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN ? 0 : -1;
		c->len += r;
		while ((nl = memchr(c->buf, '\n', c->len))) {
			size_t l = nl - c->buf + 1;
			int n;

			if (c->len >= 4 && !memcmp(c->buf, "GET ", 4)) {
				n = http_answer(c, out, sizeof(out), &l);
				if (n == 0)
					break; /* headers not complete yet */
			} else {
				n = snprintf(out, sizeof(out), "%s %.*s", name, (int)l, c->buf);
			}
			if (n >= (int)sizeof(out))
				n = sizeof(out) - 1; /* snprintf truncated: never send past out */
			if (write_all(c->fd, out, n) < 0)
				return -1;
			memmove(c->buf, c->buf + l, c->len - l);
			c->len -= l;
		}
		if (c->len == sizeof(c->buf))
			return -1; /* a line longer than we accept */
	}
}

static void serve_udp(int fd)
{
	char in[LINE_MAX_LEN] = { 0 }, out[LINE_MAX_LEN + 128], cbuf[256];
	struct sockaddr_in6 peer;
	struct iovec iov;
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t r;

	for (;;) {
		iov = (struct iovec){ .iov_base = in, .iov_len = sizeof(in) };
		msg = (struct msghdr){ .msg_name = &peer,
				       .msg_namelen = sizeof(peer),
				       .msg_iov = &iov,
				       .msg_iovlen = 1,
				       .msg_control = cbuf,
				       .msg_controllen = sizeof(cbuf) };
		r = recvmsg(fd, &msg, 0);
		if (r < 0)
			return;
		memcpy(out, name, name_len);
		out[name_len] = ' ';
		memcpy(out + name_len + 1, in, r);
		iov = (struct iovec){ .iov_base = out, .iov_len = name_len + 1 + r };
		/* Reply with the pktinfo we got: source = the address it was sent to. */
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO)
				((struct in_pktinfo *)CMSG_DATA(cm))->ipi_ifindex = 0;
			if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO)
				((struct in6_pktinfo *)CMSG_DATA(cm))->ipi6_ifindex = 0;
		}
		msg.msg_flags = 0;
		sendmsg(fd, &msg, 0);
	}
}

int main(int argc, char **argv)
{
	static struct listener ls[2 * MAX_PORTS];
	struct epoll_event ev, evs[256];
	int port = 80, hi = 0, opt, ep, nl = 0;
	char *dash;

	while ((opt = getopt(argc, argv, "n:p:h")) != -1) {
		switch (opt) {
		case 'n':
			name = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			dash = strchr(optarg, '-');
			hi = dash ? atoi(dash + 1) : 0;
			break;
		default:
			fprintf(stderr, "usage: chlb-echo -n NAME [-p PORT | -p LO-HI]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (hi < port)
		hi = port;
	if (hi - port >= MAX_PORTS) {
		fprintf(stderr, "chlb-echo: at most %d ports\n", MAX_PORTS);
		return 2;
	}
	name_len = strlen(name);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (int p = port; p <= hi && ep >= 0; p++) {
		ls[nl] = (struct listener){ K_TCP_LISTEN, listen_sock(SOCK_STREAM, p) };
		ls[nl + 1] = (struct listener){ K_UDP, listen_sock(SOCK_DGRAM, p) };
		if (ls[nl].fd < 0 || ls[nl + 1].fd < 0) {
			fprintf(stderr, "chlb-echo: couldn't listen on port %d: %s\n", p,
				strerror(errno));
			return 1;
		}
		for (int k = nl; k < nl + 2; k++) {
			ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &ls[k] };
			epoll_ctl(ep, EPOLL_CTL_ADD, ls[k].fd, &ev);
		}
		nl += 2;
	}
	if (ep < 0)
		return 1;
	fprintf(stderr, "chlb-echo %s: listening on tcp+udp port %d%s\n", name, port,
		hi > port ? " and up" : "");
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);

		for (int i = 0; i < n; i++) {
			struct listener *l = evs[i].data.ptr;
			struct conn *c = evs[i].data.ptr;

			if (l->kind == K_TCP_LISTEN) {
				int fd;

				while ((fd = accept4(l->fd, NULL, NULL,
						     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					c = calloc(1, sizeof(*c));
					if (!c) {
						close(fd);
						continue;
					}
					c->fd = fd;
					ev = (struct epoll_event){ .events = EPOLLIN,
								   .data.ptr = c };
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
			} else if (l->kind == K_UDP) {
				serve_udp(l->fd);
			} else if (serve_tcp(c) < 0) {
				close(c->fd);
				free(c);
			}
		}
	}
}
