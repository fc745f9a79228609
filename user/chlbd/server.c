// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The control socket. One request per connection: the client writes the
 * request text and shuts down its write side; chlbd answers one JSON object
 * and closes. Every client has its own non-blocking buffers, so one that
 * hangs, trickles or vanishes mid-request costs nobody else anything; it is
 * dropped after CHLBD_CLIENT_TIMEOUT ms without progress. Requests larger
 * than CHLBD_REQ_MAX get an error reply. Peers must be root, our own uid or,
 * with --socket-group, a member of that group (SO_PEERCRED); the socket is
 * mode 0600, 0660 with --socket-group.
 *
 * The request that stops chlbd (`shutdown`) gets its reply at once, but its
 * connection stays open until chlbd has released everything (pins, lock,
 * socket, pid file): the kernel closes it as the process exits, so
 * `chlbctl shutdown`, which reads to EOF, returns only once chlbd is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "chlbd.h"
#include "loop_ev.h"

struct client {
	struct loop_ev ev; /* first: epoll data points here */
	int fd;
	char *in;
	size_t inlen, incap;
	char *out;
	size_t outlen, outoff;
	__u64 deadline;
	bool hold; /* the shutdown request: keep the connection once answered */
	bool busy; /* its request is being handled, or waits (deferred) */
	struct client *next, **pprev;
	struct client *dnext; /* deferred: the next one waiting */
};

static struct client *clients;
/* requests that arrived during a change and would change something too: they wait */
static struct client *deferred, **deferred_tail = &deferred;
static bool polling, polled;
static int held_fd = -1; /* the shutdown request's connection, closed by the exit */
static struct loop_ev listen_ev = { .type = LOOP_EV_LISTEN };

static int mkdir_p(const char *dir)
{
	char buf[4096], *p;

	snprintf(buf, sizeof(buf), "%s", dir);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

int server_open(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_ev };
	char *dup = strdup(path);
	int fd;

	if (!dup || strlen(path) >= sizeof(sa.sun_path)) {
		free(dup);
		pr_err("socket path '%s' too long", path);
		return -1;
	}
	if (mkdir_p(dirname(dup))) {
		pr_err("couldn't create the directory of '%s': %s (-%d)", path, strerror(errno),
		       errno);
		free(dup);
		return -1;
	}
	free(dup);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* a live daemon answers; a stale socket file is removed */
	if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || errno == EAGAIN) {
		pr_err("another chlbd is listening on '%s'", path);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	mode_t old = umask(0177); /* born 0600: no window where others could connect */
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	umask(old);
	if (!r && D.socket_gid >= 0) /* --socket-group: members may talk to chlbd too */
		r = chown(path, (uid_t)-1, (gid_t)D.socket_gid) || chmod(path, 0660);
	else if (!r)
		r = chmod(path, 0600);
	if (r || listen(fd, 64)) {
		pr_err("couldn't listen on '%s': %s (-%d)", path, strerror(errno), errno);
		close(fd);
		return -1;
	}
	if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return -1;
	}
	D.listen_fd = fd;
	return 0;
}

static void client_free(struct client *c)
{
	for (struct client **p = &deferred; *p; p = &(*p)->dnext) {
		if (*p == c) {
			*p = c->dnext;
			if (!*p)
				deferred_tail = p;
			break;
		}
	}
	if (c->fd >= 0) {
		epoll_ctl(D.epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	free(c->in);
	free(c->out);
	free(c);
}

/* The shutdown request, answered: its connection is left for the exit to close. */
static void client_hold(struct client *c)
{
	epoll_ctl(D.epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (held_fd >= 0)
		close(held_fd);
	held_fd = c->fd;
	c->fd = -1;
	client_free(c);
}

static void client_reply(struct client *c, char *reply)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };

	c->out = reply;
	c->outlen = reply ? strlen(reply) : 0;
	c->outoff = 0;
	c->deadline = chlb_now_ns() + CHLBD_CLIENT_TIMEOUT * 1000000ull;
	if (!reply) {
		client_free(c);
		return;
	}
	epoll_ctl(D.epfd, EPOLL_CTL_MOD, c->fd, &ev);
	server_client_event(c, EPOLLOUT);
}

static char *error_reply(const char *msg, const char *kind)
{
	return chlbd_reply(chlbd_jerr_kind(msg, kind));
}

/* Is gid among pid's groups (primary or supplementary)? */
static bool pid_in_group(pid_t pid, gid_t primary, gid_t gid)
{
	char path[64], line[4096];
	bool in = primary == gid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (!in && f && fgets(line, sizeof(line), f)) {
		char *p = line + 7, *end;

		if (strncmp(line, "Groups:", 7))
			continue;
		for (;;) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			in |= g == gid;
			p = end;
		}
	}
	if (f)
		fclose(f);
	return in;
}

static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return false;
	if (cr.uid == 0 || cr.uid == getuid())
		return true;
	return D.socket_gid >= 0 && pid_in_group(cr.pid, cr.gid, (gid_t)D.socket_gid);
}

void server_accept(void)
{
	for (;;) {
		int fd = accept4(D.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct client *c;

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->ev.type = LOOP_EV_CLIENT;
		c->fd = fd;
		c->deadline = chlb_now_ns() + CHLBD_CLIENT_TIMEOUT * 1000000ull;
		c->next = clients;
		if (clients)
			clients->pprev = &c->next;
		c->pprev = &clients;
		clients = c;
		ev.data.ptr = c;
		if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev)) {
			client_free(c);
			continue;
		}
		if (!peer_allowed(fd)) {
			pr_warn("control socket: refused a peer that is neither root nor uid %d",
				getuid());
			client_reply(c, error_reply("permission denied", CHLBD_ERR_FAILED));
		}
	}
}

static void client_read(struct client *c)
{
	char *reply;

	for (;;) {
		ssize_t n;

		if (c->incap - c->inlen < 4096) {
			size_t cap = c->incap ? c->incap * 2 : 8192;
			char *p;

			if (cap > CHLBD_REQ_MAX + 1)
				cap = CHLBD_REQ_MAX + 1;
			if (c->inlen >= CHLBD_REQ_MAX) {
				char msg[96];

				snprintf(msg, sizeof(msg), "request larger than %u bytes",
					 CHLBD_REQ_MAX);
				pr_warn("control socket: %s; refused", msg);
				client_reply(c, error_reply(msg, CHLBD_ERR_USAGE));
				return;
			}
			p = realloc(c->in, cap + 1);
			if (!p) {
				client_free(c);
				return;
			}
			c->in = p;
			c->incap = cap;
		}
		n = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
		if (n > 0) {
			c->inlen += (size_t)n;
			c->deadline = chlb_now_ns() + CHLBD_CLIENT_TIMEOUT * 1000000ull;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			client_free(c);
			return;
		}
		/* EOF: the whole request is here */
		c->in[c->inlen] = '\0';
		if (strlen(c->in) != c->inlen) {
			client_reply(c,
				     error_reply("request contains a NUL byte", CHLBD_ERR_USAGE));
			return;
		}
		/* no more reads, no expiry: a poll during a long change must not come back here */
		c->busy = true;
		c->deadline = ~0ull;
		epoll_ctl(D.epfd, EPOLL_CTL_MOD, c->fd, &(struct epoll_event){ .data.ptr = c });
		if (polling && !chlbd_request_read_only(c->in)) {
			c->dnext = NULL;
			*deferred_tail = c;
			deferred_tail = &c->dnext;
			return;
		}
		reply = handle_request(c->in, c->inlen);
		c->hold = D.stop; /* this request stopped chlbd */
		c->busy = false;
		client_reply(c, reply);
		return;
	}
}

void server_client_event(void *p, unsigned int events)
{
	struct client *c = p;

	if (c->busy) /* (a hang-up while handled or waiting: answered all the same) */
		return;
	if (!c->out) {
		if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			client_read(c);
		return;
	}
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			break;
		c->outoff += (size_t)n;
		c->deadline = chlb_now_ns() + CHLBD_CLIENT_TIMEOUT * 1000000ull;
	}
	if (c->hold && c->outoff == c->outlen)
		client_hold(c);
	else
		client_free(c);
}

/*
 * Between the services of a long apply (chlb_rt->yield): a look at the
 * socket without waiting. Read-only requests are answered now, against the
 * state as it was before the change; the others wait for
 * server_run_deferred(). The loop drops the rest of its batch of events
 * afterwards (server_polled()): they may name clients answered here.
 */
void server_poll_readonly(void)
{
	struct epoll_event evs[32];
	int n;

	if (polling)
		return;
	polling = true;
	n = epoll_wait(D.epfd, evs, 32, 0);
	for (int i = 0; i < n; i++) {
		struct loop_ev *e = evs[i].data.ptr;

		if (e->type == LOOP_EV_LISTEN)
			server_accept();
		else if (e->type == LOOP_EV_CLIENT)
			server_client_event(e, evs[i].events);
	}
	polled |= n > 0;
	polling = false;
}

bool server_polled(void)
{
	bool p = polled;

	polled = false;
	return p;
}

void server_run_deferred(void)
{
	while (deferred && !D.stop) {
		struct client *c = deferred;
		char *reply;

		deferred = c->dnext;
		if (!deferred)
			deferred_tail = &deferred;
		reply = handle_request(c->in, c->inlen);
		c->hold = D.stop;
		c->busy = false;
		client_reply(c, reply);
	}
}

void server_expire(__u64 now)
{
	struct client *c = clients, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->deadline <= now) {
			pr_debug("control socket: dropped a client idle for %d ms",
				 CHLBD_CLIENT_TIMEOUT);
			client_free(c);
		}
	}
}

void server_close_all(void)
{
	while (clients)
		client_free(clients);
	if (D.listen_fd >= 0) {
		close(D.listen_fd);
		D.listen_fd = -1;
		unlink(D.socket_path);
	}
}
