// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The metrics endpoint: `--metrics ADDR:PORT`, HTTP/1.0 style, one response
 * per connection, served from the event loop like the control socket:
 *
 *  - the client's request line and headers are read without blocking, at
 *    most METRICS_REQ_MAX bytes (more: 431);
 *  - GET (or HEAD) /metrics gets 200 with the text metrics_render() makes
 *    (text/plain; version=0.0.4); another path 404, another method 405,
 *    anything unparsable 400;
 *  - the reply is written without blocking; then chlbd shuts down its side
 *    and reads what the client still sends until it closes, so the client
 *    never sees a reset before it has read the reply;
 *  - every client has METRICS_CLIENT_MS from accept to close, however it
 *    trickles, and at most METRICS_MAX_CLIENTS are served at once (more
 *    get 503 and are closed at once).
 * A slow or stuck client therefore costs a buffer and a slot, never the
 * loop's time: `chlbctl` keeps being answered. A scrape itself runs in the
 * loop (one walk of the connection table, as `chlbctl stats`; its cost per
 * million entries: docs/performance.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sock.h"
#include "chlbd.h"
#include "loop_ev.h"
#include "metrics/metrics.h"

#define METRICS_DRAIN_MS 1000 /* after the reply: wait this long at most for the client's close */

enum mcl_state {
	MCL_READ,  /* reading the request */
	MCL_WRITE, /* writing the reply */
	MCL_DRAIN, /* reply written, our side shut down: waiting for the client's close */
};

struct mclient {
	struct loop_ev ev; /* first: epoll data points here */
	int fd;
	enum mcl_state st;
	__u64 deadline;
	size_t inlen;
	char *out;
	size_t outlen, outoff;
	struct mclient *next, **pprev;
	char in[METRICS_REQ_MAX + 1];
};

static struct sockaddr_storage m_addr;
static socklen_t m_addrlen; /* 0: --metrics not given */
static char m_name[INET6_ADDRSTRLEN + 16];
static int m_fd = -1, m_nclients;
static struct mclient *m_clients;
static struct loop_ev m_listen_ev = { .type = LOOP_EV_METRICS_LISTEN };
static __u64 m_paused; /* accepting again from then on (0: not paused) */

static int bad(const char *arg, const char *why)
{
	fprintf(stderr, "chlbd: '%s': bad value for --metrics: %s\n", arg, why);
	return -EINVAL;
}

int metrics_parse(const char *arg)
{
	const char *why;
	unsigned int len;

	if (chlb_parse_sockaddr(arg, &m_addr, &len, m_name, sizeof(m_name), &why))
		return bad(arg, why);
	m_addrlen = len;
	return 0;
}

int metrics_open(void)
{
	int fd;

	if (!m_addrlen)
		return 0;
	fd = sock_listen((struct sockaddr *)&m_addr, m_addrlen, 64);
	if (fd < 0) {
		pr_err("metrics: couldn't listen on %s: %s", m_name, chlb_strerror(fd));
		return fd;
	}
	m_fd = fd;
	pr_info("metrics: serving http://%s/metrics", m_name);
	return 0;
}

int metrics_watch(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &m_listen_ev };

	if (m_fd < 0)
		return 0;
	if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, m_fd, &ev)) {
		int rc = -errno;

		pr_err("metrics: epoll: %s", chlb_strerror(rc));
		return rc;
	}
	return 0;
}

static void mcl_free(struct mclient *c)
{
	epoll_ctl(D.epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	free(c->out);
	free(c);
	m_nclients--;
}

static void mcl_events(struct mclient *c, unsigned int events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	epoll_ctl(D.epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* A reply with no body to a client we won't serve (too many), best effort. */
static void refuse(int fd)
{
	static const char busy[] = "HTTP/1.0 503 Service Unavailable\r\n"
				   "Content-Type: text/plain; charset=utf-8\r\n"
				   "Content-Length: 19\r\nConnection: close\r\n\r\n"
				   "too many clients\r\n\r\n";

	if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0; /* it is closed either way */
	close(fd);
}

void metrics_accept(void)
{
	for (;;) {
		int fd = sock_accept(m_fd, NULL, NULL);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct mclient *c;

		if (fd == -EMFILE || fd == -ENFILE) {
			/* out of descriptors: stop watching for a second, not spin on a readable socket */
			struct epoll_event ev = { .events = 0, .data.ptr = &m_listen_ev };

			if (!epoll_ctl(D.epfd, EPOLL_CTL_MOD, m_fd, &ev))
				m_paused = chlb_now_ns() + 1000000000ull;
			pr_debug(
			    "metrics: at the file-descriptor limit: not accepting for a second");
			return;
		}
		if (fd < 0)
			return;
		if (m_nclients >= METRICS_MAX_CLIENTS) {
			pr_debug("metrics: %d clients already: refused one", m_nclients);
			refuse(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->ev.type = LOOP_EV_METRICS_CLIENT;
		c->fd = fd;
		c->deadline = chlb_now_ns() + METRICS_CLIENT_MS * 1000000ull;
		c->next = m_clients;
		if (m_clients)
			m_clients->pprev = &c->next;
		c->pprev = &m_clients;
		m_clients = c;
		m_nclients++;
		ev.data.ptr = c;
		if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev))
			mcl_free(c);
	}
}

static void mcl_write(struct mclient *c);

/* The status line and headers, then the body (may be NULL); sets c->out. */
static void mcl_reply(struct mclient *c, const char *status, const char *extra, const char *body,
		      size_t blen, bool head_only)
{
	char hdr[512];
	int n;

	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n",
		     status,
		     body && !strncmp(status, "200", 3) ? "text/plain; version=0.0.4; charset=utf-8"
							: "text/plain; charset=utf-8",
		     blen, extra ? extra : "");
	if (head_only)
		blen = 0;
	c->out = malloc((size_t)n + blen);
	if (!c->out) {
		mcl_free(c);
		return;
	}
	memcpy(c->out, hdr, (size_t)n);
	if (blen)
		memcpy(c->out + n, body, blen);
	c->outlen = (size_t)n + blen;
	c->st = MCL_WRITE;
	mcl_events(c, EPOLLOUT);
	mcl_write(c);
}

static void mcl_error(struct mclient *c, const char *status, const char *extra)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "%s\n", status + 4);

	mcl_reply(c, status, extra, body, (size_t)n, false);
}

/* The request line and headers are in: answer. */
static void mcl_respond(struct mclient *c)
{
	char *line = c->in, *eol = memchr(c->in, '\n', c->inlen), *method, *target, *version,
	     *save = NULL, *q;
	bool head;
	size_t blen = 0;
	char *text;

	if (!eol || memchr(c->in, '\0', c->inlen)) {
		mcl_error(c, "400 Bad Request", NULL);
		return;
	}
	*eol = '\0';
	if (eol > line && eol[-1] == '\r')
		eol[-1] = '\0';
	method = strtok_r(line, " ", &save);
	target = strtok_r(NULL, " ", &save);
	version = strtok_r(NULL, " ", &save);
	if (!method || !target || !version || strtok_r(NULL, " ", &save) ||
	    strncmp(version, "HTTP/1.", 7)) {
		mcl_error(c, "400 Bad Request", NULL);
		return;
	}
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		mcl_error(c, "405 Method Not Allowed", "Allow: GET, HEAD\r\n");
		return;
	}
	q = strchr(target, '?');
	if (q)
		*q = '\0';
	if (strcmp(target, "/metrics")) {
		mcl_error(c, "404 Not Found", NULL);
		return;
	}
	text = metrics_render(&blen);
	if (!text) {
		mcl_error(c, "500 Internal Server Error", NULL);
		return;
	}
	mcl_reply(c, "200 OK", NULL, text, blen, head);
	free(text);
}

/* The end of the headers: an empty line. */
static bool headers_done(const struct mclient *c)
{
	return memmem(c->in, c->inlen, "\r\n\r\n", 4) || memmem(c->in, c->inlen, "\n\n", 2);
}

static void mcl_read(struct mclient *c)
{
	for (;;) {
		ssize_t n;

		if (c->inlen == METRICS_REQ_MAX) {
			mcl_error(c, "431 Request Header Fields Too Large", NULL);
			return;
		}
		n = recv(c->fd, c->in + c->inlen, METRICS_REQ_MAX - c->inlen, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			mcl_free(c);
			return;
		}
		if (n == 0) {
			/* the client is done sending: answer what it sent, if anything */
			if (c->inlen)
				mcl_respond(c);
			else
				mcl_free(c);
			return;
		}
		c->inlen += (size_t)n;
		if (headers_done(c)) {
			mcl_respond(c);
			return;
		}
	}
}

static void mcl_write(struct mclient *c)
{
	__u64 drain = chlb_now_ns() + METRICS_DRAIN_MS * 1000000ull;

	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			mcl_free(c);
			return;
		}
		c->outoff += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	/* our side is done; a close now could reset the connection under the reply */
	shutdown(c->fd, SHUT_WR);
	c->st = MCL_DRAIN;
	if (c->deadline > drain)
		c->deadline = drain;
	mcl_events(c, EPOLLIN | EPOLLRDHUP);
}

static void mcl_drain(struct mclient *c)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		mcl_free(c); /* EOF or an error: the client is gone */
		return;
	}
}

void metrics_client_event(void *p, unsigned int events)
{
	struct mclient *c = p;

	switch (c->st) {
	case MCL_READ:
		mcl_read(c);
		break;
	case MCL_WRITE:
		mcl_write(c);
		break;
	case MCL_DRAIN:
		mcl_drain(c);
		break;
	}
}

void metrics_expire(__u64 now)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &m_listen_ev };
	struct mclient *c = m_clients, *next;

	if (m_paused && m_paused <= now && !epoll_ctl(D.epfd, EPOLL_CTL_MOD, m_fd, &ev))
		m_paused = 0;
	for (; c; c = next) {
		next = c->next;
		if (c->deadline <= now) {
			if (c->st != MCL_DRAIN)
				pr_debug("metrics: dropped a client after %d ms",
					 METRICS_CLIENT_MS);
			mcl_free(c);
		}
	}
}
