// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The control socket. One request per connection: the client writes the
 * request text and shuts down its write side; chlbd answers one JSON object
 * and closes. Every client has its own non-blocking buffers, so one that
 * hangs, trickles or vanishes mid-request costs nobody else anything: its
 * whole request must arrive within CHLBD_CLIENT_TIMEOUT ms of the accept,
 * however it trickles, and its reply must be taken with progress every
 * CHLBD_CLIENT_TIMEOUT ms and whole within CHLBD_REPLY_CAP times that, or
 * it is dropped. A client whose deadline passed while chlbd was busy gets
 * a last read (or write) first: what arrived meanwhile counts. Requests
 * larger than CHLBD_REQ_MAX get an error reply. Peers must be root, our own
 * uid or, with --socket-group, a member of that group (SO_PEERCRED); the
 * socket is mode 0600, 0660 with --socket-group.
 *
 * File descriptors: clients may take all but CHLBD_FD_RESERVE of the
 * RLIMIT_NOFILE (the data plane, the state file and the metrics need the
 * rest; a quarter of a tiny limit). A client accepted beyond that, or an
 * accept that fails at the limit (EMFILE), drops the client that has
 * waited longest for its request to arrive; with none to drop, the new one
 * gets a "too many clients" error (at EMFILE, accepted on a spare
 * descriptor kept for that), so the listening socket never stays readable
 * with nothing done (which spun the loop at 100% CPU).
 *
 * The socket path: only a stale socket is removed (a socket nobody
 * listens on); a file of any other kind there is refused, and a lock file
 * beside the socket (PATH.lock) keeps a second chlbd off it.
 *
 * The request that stops chlbd (`shutdown`) gets its reply at once, but its
 * connection stays open until chlbd has released everything (pins, lock,
 * socket, pid file): the kernel closes it as the process exits, so
 * `chlbctl shutdown`, which reads to EOF, returns only once chlbd is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "sock.h"
#include "chlbd.h"
#include "ctl/ctl.h"
#include "loop_ev.h"
#include "locks.h"
#include "base/util.h"

#define CHLBD_FD_RESERVE 64 /* descriptors clients never take */
#define CHLBD_REPLY_CAP	 12 /* a reply is taken within this many client timeouts */

struct client {
	struct loop_ev ev; /* first: epoll data points here */
	int fd;
	char *in;
	size_t inlen, incap;
	char *out;
	size_t outlen, outoff;
	__u64 deadline;
	__u64 reply_cap; /* the reply's last chance, however it is taken */
	bool hold;	 /* the shutdown request: keep the connection once answered */
	bool busy;	 /* its request is being handled, or waits (deferred) */
	struct client *next, **pprev;
	struct client *dnext; /* deferred: the next one waiting */
};

static struct client *clients;
/* requests that arrived during a change and would change something too: they wait */
static struct client *deferred, **deferred_tail = &deferred;
static bool polling, polled;
static int held_fd = -1; /* the shutdown request's connection, closed by the exit */
static struct loop_ev listen_ev = { .type = LOOP_EV_LISTEN };
static int spare_fd = -1; /* /dev/null: freed to accept one client at EMFILE and refuse it */
static int fd_limit;	  /* all descriptors but the reserve */
static int nclients;
static int max_clients = -1; /* fd_limit less chlbd's other descriptors; -1: not counted */
static __u64 listen_paused;  /* accepting again from then on (0: not paused) */
static __u64 fd_warned_ns;

/*
 * Whatever is at path goes only if it is a socket nobody listens on (a
 * chlbd that died without removing it); 0 when path is free now.
 */
static int remove_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		pr_err("socket path '%s': %s", path, chlb_strerror(rc));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		pr_err("'%s' exists and is not a socket (%s): refusing to remove it; choose "
		       "another -s",
		       path,
		       S_ISREG(st.st_mode)   ? "a regular file"
		       : S_ISDIR(st.st_mode) ? "a directory"
		       : S_ISLNK(st.st_mode) ? "a symbolic link"
					     : "another kind of file");
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? errno : 0;
	close(fd);
	/* a live daemon answers (or its backlog is full: EAGAIN) */
	if (!rc || rc == EAGAIN) {
		pr_err("another chlbd is listening on '%s'", path);
		return -EADDRINUSE;
	}
	if (rc != ECONNREFUSED) {
		pr_err("socket '%s': can't tell whether anyone listens on it (connect: %s): "
		       "refusing to remove it",
		       path, strerror(rc));
		return -rc;
	}
	if (unlink(path) && errno != ENOENT) {
		rc = -errno;
		pr_err("couldn't remove the stale socket '%s': %s", path, chlb_strerror(rc));
		return rc;
	}
	pr_debug("removed the stale socket '%s'", path);
	return 0;
}

/* The descriptors clients may take (see the top comment), and the spare one. */
static void fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX)
		fd_limit = INT_MAX;
	else /* a tiny limit keeps a quarter */
		fd_limit = (int)rl.rlim_cur - CHLBD_FD_RESERVE > (int)rl.rlim_cur / 4 * 3
			       ? (int)rl.rlim_cur - CHLBD_FD_RESERVE
			       : (int)rl.rlim_cur / 4 * 3;
	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int server_open(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_ev };
	char *dup = strdup(path);
	int fd, rc;

	if (!dup || strlen(path) >= sizeof(sa.sun_path)) {
		free(dup);
		pr_err("socket path '%s' too long", path);
		return -ENAMETOOLONG;
	}
	rc = chlb_mkdir_p(dirname(dup), 0755, 0755);
	if (rc) {
		pr_err("couldn't create the directory of '%s': %s", path, chlb_strerror(rc));
		free(dup);
		return rc;
	}
	free(dup);
	strcpy(sa.sun_path, path);
	/* PATH.lock, held until exit (locks.c) */
	rc = lock_beside(path, "control socket");
	if ((rc < 0 && rc != -EROFS) || (rc = remove_stale(path, &sa)))
		return rc < 0 ? rc : -EEXIST;
	fd_budget();
	fd = sock_bind((struct sockaddr *)&sa, sizeof(sa)); /* born 0600 */
	int r = fd < 0 ? fd : 0;

	if (!r && D.socket_gid >= 0) /* --socket-group: members may talk to chlbd too */
		r = chown(path, (uid_t)-1, (gid_t)D.socket_gid) || chmod(path, 0660) ? -errno : 0;
	else if (!r)
		r = chmod(path, 0600) ? -errno : 0;
	if (!r)
		r = sock_listen_start(fd, 64);
	if (r) {
		pr_err("couldn't listen on '%s': %s", path, chlb_strerror(r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		r = -errno;
		close(fd);
		return r;
	}
	D.listen_fd = fd;
	D.answer_readonly = server_poll_readonly;
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
	nclients--;
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
	/* the reply is taken with progress every timeout, and whole within a dozen */
	c->deadline = chlb_now_ns() + CHLBD_CLIENT_TIMEOUT * 1000000ull;
	c->reply_cap = chlb_now_ns() + CHLBD_REPLY_CAP * CHLBD_CLIENT_TIMEOUT * 1000000ull;
	if (!reply) {
		client_free(c);
		return;
	}
	epoll_ctl(D.epfd, EPOLL_CTL_MOD, c->fd, &ev);
	server_client_event(c, EPOLLOUT);
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

/* Descriptors open now (/proc/self/fd), or a negative errno. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = -3; /* ".", "..", and d's own */

	if (!d)
		return -errno;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * One more client (its descriptor just accepted) would pass the budget?
 * chlbd's other descriptors are counted again only when the clients reach
 * the last count's cap: a flood costs a directory read per accept, no more.
 */
static bool over_budget(void)
{
	int n;

	if (max_clients >= 0 && nclients + 1 <= max_clients)
		return false;
	n = open_fds();
	if (n < 0)
		return false;
	max_clients = fd_limit - (n - nclients - 1);
	return nclients + 1 > max_clients;
}

/* The client that has waited longest for its request (none answered yet), or NULL. */
static struct client *oldest_reading(void)
{
	struct client *c, *old = NULL;

	for (c = clients; c; c = c->next)
		if (!c->out && !c->busy && (!old || c->deadline < old->deadline))
			old = c;
	return old;
}

static void fd_warn(const char *what)
{
	__u64 now = chlb_now_ns();

	if (fd_warned_ns && now - fd_warned_ns < 10000000000ull)
		return; /* once per 10 s: a flood must not flood the log */
	fd_warned_ns = now;
	pr_warn("control socket: clients at the file-descriptor limit (RLIMIT_NOFILE %d less "
		"%d kept for chlbd): %s",
		fd_limit + CHLBD_FD_RESERVE, CHLBD_FD_RESERVE, what);
}

/* Make room for one more client: drop the one waiting longest for its request. */
static bool drop_oldest(void)
{
	struct client *c = oldest_reading();

	if (!c)
		return false;
	fd_warn("dropped the client that waited longest for its request");
	client_free(c);
	return true;
}

static void refuse_busy(int fd)
{
	if (send(fd, chlbd_busy_reply, strlen(chlbd_busy_reply), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0; /* closed either way */
	close(fd);
}

/*
 * accept() failed with EMFILE/ENFILE: 0 to try again (room was made, or
 * one client was refused on the spare descriptor), -1 to stop: the
 * listening socket is then left out of the loop until the next
 * housekeeping tick (server_expire()), not left readable to spin on.
 */
static int at_fd_limit(void)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &listen_ev };
	int fd;

	if (drop_oldest())
		return 0;
	if (spare_fd >= 0) {
		close(spare_fd);
		fd = sock_accept(D.listen_fd, NULL, NULL);
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			fd_warn("refused a client");
			refuse_busy(fd);
			return 0;
		}
		if (fd == -EAGAIN)
			return -1; /* nobody left waiting */
	}
	fd_warn("not accepting for a second");
	if (!epoll_ctl(D.epfd, EPOLL_CTL_MOD, D.listen_fd, &ev))
		listen_paused = chlb_now_ns() + 1000000000ull;
	return -1;
}

void server_accept(void)
{
	for (;;) {
		int fd = sock_accept(D.listen_fd, NULL, NULL);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct client *c;

		if (fd == -EMFILE || fd == -ENFILE) {
			if (at_fd_limit())
				return;
			continue;
		}
		if (fd < 0)
			return;
		/* with no other client, this one is served whatever the count */
		if (clients && over_budget() && !drop_oldest()) {
			fd_warn("refused a client");
			refuse_busy(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		nclients++;
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
			client_reply(c, chlbd_error_reply("permission denied", CHLBD_ERR_FAILED));
		}
	}
}

/* Reads what has arrived; true while the request is still incomplete (c stays). */
static bool client_read(struct client *c)
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
				client_reply(c, chlbd_error_reply(msg, CHLBD_ERR_USAGE));
				return false;
			}
			p = realloc(c->in, cap + 1);
			if (!p) {
				client_free(c);
				return false;
			}
			c->in = p;
			c->incap = cap;
		}
		n = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
		if (n > 0) {
			/* progress does not move the deadline: a trickle is dropped too */
			c->inlen += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n < 0) {
			client_free(c);
			return false;
		}
		/* EOF: the whole request is here */
		c->in[c->inlen] = '\0';
		if (strlen(c->in) != c->inlen) {
			client_reply(
			    c, chlbd_error_reply("request contains a NUL byte", CHLBD_ERR_USAGE));
			return false;
		}
		/* no more reads, no expiry: a poll during a long change must not come back here */
		c->busy = true;
		c->deadline = ~0ull;
		epoll_ctl(D.epfd, EPOLL_CTL_MOD, c->fd, &(struct epoll_event){ .data.ptr = c });
		if (polling && !chlbd_request_read_only(c->in)) {
			c->dnext = NULL;
			*deferred_tail = c;
			deferred_tail = &c->dnext;
			return false;
		}
		reply = handle_request(c->in, c->inlen);
		c->hold = D.stop; /* this request stopped chlbd */
		c->busy = false;
		client_reply(c, reply);
		return false;
	}
}

/* Sends what the socket takes; true while some of the reply is still unsent (c stays). */
static bool client_write(struct client *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			break;
		c->outoff += (size_t)n;
		c->deadline = chlb_now_ns() + CHLBD_CLIENT_TIMEOUT * 1000000ull;
		if (c->deadline > c->reply_cap)
			c->deadline = c->reply_cap;
	}
	if (c->hold && c->outoff == c->outlen)
		client_hold(c);
	else
		client_free(c);
	return false;
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
	client_write(c);
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
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_ev };
	struct client *c = clients, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->deadline > now)
			continue;
		/* what arrived (or drained) while chlbd was busy elsewhere still counts */
		if (c->out ? client_write(c) : client_read(c)) {
			pr_debug("control socket: dropped a client that %s within %d ms",
				 c->out ? "did not take its reply" : "sent no whole request",
				 CHLBD_CLIENT_TIMEOUT);
			client_free(c);
		}
	}
	if (listen_paused && listen_paused <= now &&
	    !epoll_ctl(D.epfd, EPOLL_CTL_MOD, D.listen_fd, &ev))
		listen_paused = 0;
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
	if (spare_fd >= 0)
		close(spare_fd);
	spare_fd = -1;
}
