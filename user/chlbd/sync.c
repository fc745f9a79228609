// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Entry sync between LB hosts (sync.h says who sends what; the wire format
 * is sync_wire.h; docs/design.md, "Several LB hosts").
 *
 * All in the event loop, no threads: the listening socket, one socket per
 * direction per peer (non-blocking), and the data plane's ring buffer
 * (ring_buffer__epoll_fd) are epoll sources tagged LOOP_EV_SYNC.
 *
 *  - Sending (a connection a configured peer opened to us): the ring's
 *    records are turned into entries a peer can use - the backend slot
 *    becomes the backend's address, its owning service the VIP - batched
 *    (up to SYNC_WIRE_BATCH a message) and queued to every such peer. A
 *    peer that does not read keeps at most OUT_MAX bytes queued; beyond,
 *    records for it are dropped and counted (peer_slow).
 *  - Receiving (the connection we opened to a peer): each entry's VIP and
 *    backend address are mapped to this host's service and backend slot
 *    and applied with its current generation (chlb_dp_sync_apply). An
 *    entry whose service or backend this host lacks waits (deferred): in a
 *    rolling change a peer that already has a new backend sends entries
 *    for it before this host has it. It is tried again every
 *    DEFER_RETRY_NS, and dropped (counted by reason) when
 *    it has waited as long as a replaced table stays in the view
 *    (--history-ms, at most DEFER_MAX_MS): a change not made here by then
 *    is not a rollout in progress. Bad bytes drop the connection
 *    (counted); it is opened again after a backoff.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>
#include "chlbd.h"
#include "loop_ev.h"
#include "sync.h"
#include "sync_wire.h"

#define SYNC_MAX_PEERS	16
#define OUT_MAX		(16u << 20) /* bytes queued to a peer beyond a dump */
#define IN_CAP		(2 * SYNC_WIRE_MSG_MAX)
#define IN_ROUNDS	8 /* receive buffers per event */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000
#define KEEPALIVE_IDLE	5 /* s: a silently dead peer's connection goes in ~11 s */
#define KEEPALIVE_INTVL 2
#define KEEPALIVE_CNT	3
#define USER_TIMEOUT_MS 11000 /* the same bound for a connection with data unacknowledged */
#define DEFER_MAX	65536 /* entries waiting for their service or backend */
#define DEFER_MAX_MS	60000
#define DEFER_RETRY_NS	200000000ull

enum conn_kind {
	K_LISTEN,
	K_RING,
	K_IN,
	K_OUT
};
enum in_state {
	IN_DOWN,
	IN_CONNECTING,
	IN_DUMP,
	IN_SYNCED
};
static const char *const in_names[] = { "down", "connecting", "receiving dump", "synced" };

struct sync_conn {
	struct loop_ev ev; /* first: epoll data points here */
	enum conn_kind kind;
	int fd;
	struct sync_peer *peer;
	__u8 *buf; /* K_IN: bytes received, not yet a whole message; K_OUT: bytes to send */
	size_t len, off, cap;
};

struct sync_peer {
	struct sockaddr_storage addr;
	socklen_t alen;
	char name[INET6_ADDRSTRLEN + 8];
	/* receiving: the connection we open */
	struct sync_conn in;
	enum in_state in_state;
	__u64 retry_at, backoff_ms;
	__u64 dump_entries; /* entries in the dump being received (or the last one) */
	__u64 received, sent;
	char error[64]; /* why the receiving connection last failed ("": it has not) */
	/* sending: the connection the peer opened to us */
	struct sync_conn out;
};

static struct sockaddr_storage l_addr;
static socklen_t l_alen;
static char l_name[INET6_ADDRSTRLEN + 8];
static struct sync_peer peers[SYNC_MAX_PEERS];
static int npeers;
static struct sync_conn lconn = { .ev = { .type = LOOP_EV_SYNC }, .kind = K_LISTEN, .fd = -1 };
static struct sync_conn rconn = { .ev = { .type = LOOP_EV_SYNC }, .kind = K_RING, .fd = -1 };
static struct ring_buffer *rb;
static struct sync_counters C;
/* the ring's records as wire records, not yet queued to the peers */
static __u8 stage[SYNC_WIRE_MSG_MAX];
static __u16 nstage;
/* received entries waiting for their service or backend (a rollout in progress) */
struct deferred {
	struct sync_entry e;
	__u64 until; /* chlb_now_ns(): dropped after */
	bool no_service;
};
static struct deferred *defer;
static size_t ndefer;
static __u64 defer_retry_at;

/* ---- options ---- */

static int parse_addr(const char *opt, const char *arg, struct sockaddr_storage *ss, socklen_t *len,
		      char *name, size_t nlen)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *h = arg;
	size_t hl;
	char *end;
	unsigned long port;

	if (arg[0] == '[') {
		const char *rb_ = strchr(arg, ']');

		colon = rb_ && rb_[1] == ':' ? rb_ + 1 : NULL;
		h = arg + 1;
		hl = rb_ ? (size_t)(rb_ - h) : 0;
	} else {
		colon = strrchr(arg, ':');
		hl = colon ? (size_t)(colon - arg) : 0;
		if (colon && memchr(arg, ':', hl))
			colon = NULL; /* IPv6 without brackets */
	}
	if (!colon || !hl || hl >= sizeof(host)) {
		fprintf(stderr,
			"chlbd: '%s': bad value for %s: expected ADDR:PORT ([ADDR]:PORT "
			"for IPv6)\n",
			arg, opt);
		return -1;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || !port || port > 65535) {
		fprintf(stderr,
			"chlbd: '%s': bad value for %s: the port is not a number from 1 "
			"to 65535\n",
			arg, opt);
		return -1;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((__u16)port);
		*len = sizeof(*s4);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((__u16)port);
		*len = sizeof(*s6);
	} else {
		fprintf(stderr, "chlbd: '%s': bad value for %s: '%s' is not an IP address\n", arg,
			opt, host);
		return -1;
	}
	snprintf(name, nlen, strchr(host, ':') ? "[%s]:%lu" : "%s:%lu", host, port);
	return 0;
}

int sync_parse_listen(const char *arg)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&l_addr;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&l_addr;

	if (parse_addr("--sync-listen", arg, &l_addr, &l_alen, l_name, sizeof(l_name)))
		return -1;
	/*
	 * A wildcard cannot be told from the peers' addresses: this host would
	 * be its own peer (syncing every entry with itself), and its connections
	 * would leave from whatever address the route picks.
	 */
	if ((l_addr.ss_family == AF_INET && s4->sin_addr.s_addr == htonl(INADDR_ANY)) ||
	    (l_addr.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))) {
		fprintf(stderr,
			"chlbd: '%s': bad value for --sync-listen: give this host's own "
			"address, the one its peers name in --sync-peer, not a wildcard\n",
			arg);
		l_alen = 0;
		return -1;
	}
	return 0;
}

int sync_parse_peer(const char *arg)
{
	struct sync_peer *p;

	if (npeers == SYNC_MAX_PEERS) {
		fprintf(stderr, "chlbd: at most %d --sync-peer\n", SYNC_MAX_PEERS);
		return -1;
	}
	p = &peers[npeers];
	if (parse_addr("--sync-peer", arg, &p->addr, &p->alen, p->name, sizeof(p->name)))
		return -1;
	/* twice: two receiving connections, each making the peer drop the other, over and over */
	for (int i = 0; i < npeers; i++) {
		if (peers[i].alen == p->alen && !memcmp(&peers[i].addr, &p->addr, p->alen)) {
			fprintf(stderr, "chlbd: '%s': --sync-peer %s given twice\n", arg, p->name);
			return -1;
		}
	}
	p->in.fd = p->out.fd = -1; /* sync_close() after a start that failed early */
	npeers++;
	return 0;
}

int sync_check_options(void)
{
	if (npeers && !l_alen) {
		fprintf(stderr, "chlbd: --sync-peer needs --sync-listen (peers connect to it to "
				"receive this host's entries)\n");
		return -1;
	}
	if (l_alen && !npeers) {
		fprintf(stderr, "chlbd: --sync-listen needs --sync-peer (only the peers' addresses "
				"are accepted: with none, sync would be off)\n");
		return -1;
	}
	return 0;
}

bool sync_configured(void)
{
	return npeers > 0;
}

const struct sync_counters *sync_counters(void)
{
	return &C;
}

/* ---- connections ---- */

static void conn_watch(struct sync_conn *c, unsigned int events, int op)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	if (epoll_ctl(D.epfd, op, c->fd, &ev))
		pr_warn("sync: epoll: %s", strerror(errno));
}

static void conn_close(struct sync_conn *c)
{
	if (c->fd >= 0) {
		epoll_ctl(D.epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->off = c->cap = 0;
}

static void keepalive(int fd)
{
	int one = 1, idle = KEEPALIVE_IDLE, intvl = KEEPALIVE_INTVL, cnt = KEEPALIVE_CNT;
	/* keepalive finds a dead peer on an idle connection; this one with data unacked */
	unsigned int user_timeout = USER_TIMEOUT_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

/* The receiving side lost its connection: open it again after a backoff. */
static void in_down(struct sync_peer *p, const char *why)
{
	if (p->in_state == IN_SYNCED || p->in_state == IN_DUMP)
		pr_warn("sync: %s: connection lost (%s); reconnecting", p->name, why);
	/* a wrong address or a peer down: said once per reason, not per retry */
	else if (strcmp(p->error, why))
		pr_warn("sync: %s: can't connect (%s); retrying every %d s at most", p->name, why,
			BACKOFF_MAX_MS / 1000);
	snprintf(p->error, sizeof(p->error), "%s", why);
	conn_close(&p->in);
	p->in_state = IN_DOWN;
	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (p->backoff_ms > BACKOFF_MAX_MS)
		p->backoff_ms = BACKOFF_MAX_MS;
	p->retry_at = chlb_now_ns() + p->backoff_ms * 1000000ull;
}

static void in_connect(struct sync_peer *p)
{
	int fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		in_down(p, strerror(errno));
		return;
	}
	/* from the listening address: the address the peer knows us by */
	if (l_alen && l_addr.ss_family == p->addr.ss_family) {
		struct sockaddr_storage src = l_addr;

		if (src.ss_family == AF_INET)
			((struct sockaddr_in *)&src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)&src)->sin6_port = 0;
		if (bind(fd, (struct sockaddr *)&src, l_alen))
			pr_debug("sync: %s: bind to %s: %s", p->name, l_name, strerror(errno));
	}
	keepalive(fd);
	p->in.fd = fd;
	p->in_state = IN_CONNECTING;
	if (connect(fd, (struct sockaddr *)&p->addr, p->alen) && errno != EINPROGRESS) {
		in_down(p, strerror(errno));
		return;
	}
	conn_watch(&p->in, EPOLLOUT | EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
}

/* Write what is queued; EPOLLOUT only while something is left. -1: the connection is gone. */
static int out_flush(struct sync_conn *c)
{
	while (c->off < c->len) {
		ssize_t n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return -1;
		c->off += (size_t)n;
	}
	if (c->off == c->len)
		c->off = c->len = 0;
	conn_watch(c, EPOLLIN | EPOLLRDHUP | (c->len ? EPOLLOUT : 0), EPOLL_CTL_MOD);
	return 0;
}

/* Queue n bytes to c (no limit when `dump`). -1 when over OUT_MAX. */
static int out_queue(struct sync_conn *c, const void *b, size_t n, bool dump)
{
	if (c->off && c->off == c->len)
		c->off = c->len = 0;
	if (!dump && c->len - c->off + n > OUT_MAX)
		return -1;
	if (c->off > c->cap / 2) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len + n > c->cap) {
		size_t cap = c->cap ? c->cap : 65536;
		__u8 *nb;

		while (cap < c->len + n)
			cap *= 2;
		nb = realloc(c->buf, cap);
		if (!nb)
			return -1;
		c->buf = nb;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, b, n);
	c->len += n;
	return 0;
}

/* ---- sending ---- */

/* A conns entry as peers name it: backend address, VIP. false: its slot is not current. */
static bool entry_of(const struct chlb_flow *f, __u32 slot, __u32 gen, __u16 flags,
		     struct sync_entry *e)
{
	const struct chlb_rt_be *r;

	if (slot >= CHLB_MAX_BACKENDS)
		return false;
	r = &D.rt->be[slot];
	if (r->state == CHLB_BE_EMPTY || r->gen != gen || r->svc < 0 ||
	    r->svc >= CHLB_MAX_SERVICES || !D.rt->svc[r->svc].used)
		return false;
	e->vip = D.rt->svc[r->svc].vip;
	e->flow = *f;
	e->backend = r->addr;
	e->flags = (__u8)(flags & CHLB_CONN_F_ENDED);
	return true;
}

/* The staged records, as one message, to every peer we send to. */
static void stage_flush(void)
{
	__u8 *msg = stage;

	if (!nstage)
		return;
	sync_wire_hdr(msg, SYNC_MSG_RECORDS, nstage);
	for (int i = 0; i < npeers; i++) {
		struct sync_peer *p = &peers[i];

		if (p->out.fd < 0)
			continue;
		if (out_queue(&p->out, msg, SYNC_WIRE_HDR + (size_t)nstage * SYNC_WIRE_REC,
			      false)) {
			C.drop_peer_slow += nstage;
			continue;
		}
		C.sent += nstage;
		p->sent += nstage;
		if (out_flush(&p->out)) {
			pr_warn("sync: %s: send: %s; it gets a dump when it reconnects", p->name,
				strerror(errno));
			conn_close(&p->out);
		}
	}
	nstage = 0;
}

static int on_ring_record(void *ctx, void *data, size_t size)
{
	const struct chlb_sync_rec *r = data;
	struct sync_entry e;

	(void)ctx;
	if (size < sizeof(*r))
		return 0;
	if (!entry_of(&r->flow, r->backend, r->gen, r->flags, &e)) {
		C.drop_stale++;
		return 0;
	}
	sync_wire_put(stage + SYNC_WIRE_HDR + (size_t)nstage * SYNC_WIRE_REC, &e);
	if (++nstage == SYNC_WIRE_BATCH)
		stage_flush();
	return 0;
}

static void ring_drain(void)
{
	if (ring_buffer__consume(rb) < 0)
		pr_warn("sync: reading the ring buffer: %s", strerror(errno));
	stage_flush();
}

struct dump_ctx {
	struct sync_conn *c;
	__u8 msg[SYNC_WIRE_MSG_MAX];
	__u16 n;
	__u64 entries;
	int err;
};

static void dump_flush(struct dump_ctx *d)
{
	if (!d->n)
		return;
	sync_wire_hdr(d->msg, SYNC_MSG_RECORDS, d->n);
	if (out_queue(d->c, d->msg, SYNC_WIRE_HDR + (size_t)d->n * SYNC_WIRE_REC, true))
		d->err = -ENOMEM;
	d->n = 0;
}

static int dump_entry(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct dump_ctx *d = ctx;
	struct sync_entry e;

	/* entries whose backend left are not the connection's any more: not sent */
	if (D.rt->be[c->backend % CHLB_MAX_BACKENDS].state != CHLB_BE_LIVE ||
	    !entry_of(f, c->backend, c->gen, c->flags, &e))
		return 0;
	sync_wire_put(d->msg + SYNC_WIRE_HDR + (size_t)d->n * SYNC_WIRE_REC, &e);
	d->entries++;
	if (++d->n == SYNC_WIRE_BATCH)
		dump_flush(d);
	return d->err;
}

/*
 * A peer connected to receive: what the ring holds goes to the others
 * first (so nothing older than the dump follows it), then every entry,
 * DUMP_END, and from then on the records as they come.
 */
static void out_start(struct sync_peer *p, int fd)
{
	struct dump_ctx *d = calloc(1, sizeof(*d));
	__u8 end[SYNC_WIRE_HDR];
	__u64 t0 = chlb_now_ns();
	int rc;

	if (p->out.fd >= 0) {
		pr_info("sync: %s connected again: the old connection is dropped", p->name);
		conn_close(&p->out);
	}
	ring_drain();
	p->out.fd = fd;
	keepalive(fd);
	conn_watch(&p->out, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
	if (!d) {
		conn_close(&p->out);
		return;
	}
	d->c = &p->out;
	rc = chlb_dp_conns_foreach(D.dp, dump_entry, d);
	dump_flush(d);
	sync_wire_hdr(end, SYNC_MSG_DUMP_END, 0);
	if (rc || d->err || out_queue(&p->out, end, sizeof(end), true)) {
		pr_err("sync: %s: dump failed: %s", p->name, strerror(-(rc ? rc : d->err)));
		conn_close(&p->out);
		free(d);
		return;
	}
	C.dumps_sent++;
	C.sent += d->entries;
	p->sent += d->entries;
	pr_info("sync: %s connected: dumping %llu entries (%.1f ms to walk)", p->name,
		(unsigned long long)d->entries, (double)(chlb_now_ns() - t0) / 1e6);
	free(d);
	if (out_flush(&p->out))
		conn_close(&p->out);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family == AF_INET && b->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6 && b->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

static void on_accept(void)
{
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		char name[INET6_ADDRSTRLEN];
		int fd = accept4(lconn.fd, (struct sockaddr *)&from, &flen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC),
		    i;

		if (fd < 0)
			return;
		for (i = 0; i < npeers && !same_host(&from, &peers[i].addr); i++)
			;
		if (i == npeers) {
			C.unknown_peer++;
			inet_ntop(from.ss_family,
				  from.ss_family == AF_INET
				      ? (void *)&((struct sockaddr_in *)&from)->sin_addr
				      : (void *)&((struct sockaddr_in6 *)&from)->sin6_addr,
				  name, sizeof(name));
			pr_warn("sync: refused a connection from %s: not a --sync-peer", name);
			close(fd);
			continue;
		}
		out_start(&peers[i], fd);
	}
}

/* The receiver sends nothing: bytes from it are bad input, EOF the end. */
static void out_event(struct sync_peer *p, unsigned int events)
{
	__u8 b[64];
	ssize_t n;

	if (events & EPOLLOUT) {
		if (out_flush(&p->out)) {
			conn_close(&p->out);
			return;
		}
	}
	if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	n = recv(p->out.fd, b, sizeof(b), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		C.bad_input++;
		pr_warn("sync: %s sent bytes on the connection it receives on: dropped", p->name);
	} else {
		pr_info("sync: %s: stopped receiving (%s)", p->name,
			n ? strerror(errno) : "closed");
	}
	conn_close(&p->out);
}

/* ---- receiving ---- */

/* Apply e here: 0, or -1 (no_service set) when its service or backend is not here (yet). */
static int try_apply(const struct sync_entry *e, __u64 coarse_now, bool *no_service)
{
	int id = chlb_rt_svc_id(D.rt, &e->vip), slot, rc;

	*no_service = id < 0;
	slot = id < 0 ? -1 : chlb_rt_be_slot(D.rt, id, &e->backend);
	if (slot < 0)
		return -1;
	rc = chlb_dp_sync_apply(D.dp, &e->flow, (__u32)slot, D.rt->be[slot].gen, e->flags,
				coarse_now);
	if (rc == CHLB_SYNC_APPLIED)
		C.applied++;
	else if (rc == CHLB_SYNC_KEPT)
		C.kept++;
	else
		C.drop_error++;
	return 0;
}

static void drop_deferred(const struct deferred *d)
{
	if (d->no_service)
		C.drop_no_service++;
	else
		C.drop_no_backend++;
}

static void apply_entry(struct sync_peer *p, const struct sync_entry *e, __u64 now)
{
	struct deferred d = { .e = *e };
	__u64 wait_ms = D.history_ms < DEFER_MAX_MS ? D.history_ms : DEFER_MAX_MS;

	p->received++;
	C.received++;
	if (!try_apply(e, now, &d.no_service))
		return;
	if (!defer && !(defer = calloc(DEFER_MAX, sizeof(*defer)))) {
		drop_deferred(&d);
		return;
	}
	if (ndefer == DEFER_MAX) { /* the oldest goes */
		drop_deferred(&defer[0]);
		memmove(defer, defer + 1, (DEFER_MAX - 1) * sizeof(*defer));
		ndefer--;
	}
	d.until = chlb_now_ns() + wait_ms * 1000000ull;
	defer[ndefer++] = d;
	C.deferred++;
}

/* Deferred entries whose service and backend are here now: applied; expired ones dropped. */
static void retry_deferred(__u64 now)
{
	__u64 coarse = chlb_coarse_now_ns();
	size_t i, k = 0;

	for (i = 0; i < ndefer; i++) {
		bool no_service;

		if (!try_apply(&defer[i].e, coarse, &no_service)) {
			C.deferred_applied++;
			continue;
		}
		defer[i].no_service = no_service;
		if (defer[i].until <= now) {
			drop_deferred(&defer[i]);
			continue;
		}
		defer[k++] = defer[i];
	}
	ndefer = k;
}

/* Whole messages in p->in.buf: applied; the rest kept. -1 and why on bad input. */
static int in_parse(struct sync_peer *p, const char **why)
{
	struct sync_conn *c = &p->in;
	__u64 now = chlb_coarse_now_ns();
	size_t off = 0;

	while (off < c->len) {
		enum sync_msg_type type;
		__u16 count;
		int n = sync_wire_msg(c->buf + off, c->len - off, &type, &count, why);

		if (n < 0)
			return -1;
		if (!n)
			break;
		if (type == SYNC_MSG_DUMP_END) {
			if (p->in_state == IN_DUMP)
				pr_info("sync: %s: dump received (%llu entries)", p->name,
					(unsigned long long)p->dump_entries);
			C.dumps_received += p->in_state == IN_DUMP;
			p->in_state = IN_SYNCED;
			/* a whole dump: the peer works; a peer that hangs up at once keeps backing off */
			p->backoff_ms = 0;
		} else {
			for (__u16 i = 0; i < count; i++) {
				struct sync_entry e;

				if (sync_wire_get(c->buf + off, i, &e, why))
					return -1; /* what came before it stays applied */
				apply_entry(p, &e, now);
				p->dump_entries += p->in_state == IN_DUMP;
			}
		}
		off += (size_t)n;
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 0;
}

static void in_event(struct sync_peer *p, unsigned int events)
{
	struct sync_conn *c = &p->in;
	const char *why = NULL;

	if (p->in_state == IN_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
			in_down(p, strerror(err ? err : errno));
			return;
		}
		if (!(events & EPOLLOUT) && !(events & EPOLLIN))
			return;
		p->in_state = IN_DUMP;
		p->error[0] = '\0'; /* from here the state says how it goes */
		p->dump_entries = 0;
		pr_info("sync: connected to %s: receiving its entries", p->name);
		conn_watch(c, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
	}
	if (!c->buf) {
		c->buf = malloc(IN_CAP);
		c->cap = IN_CAP;
		if (!c->buf) {
			in_down(p, "out of memory");
			return;
		}
	}
	/*
	 * A few buffers per event: a large dump must not keep the loop from
	 * the control socket; epoll reports the rest at the next round.
	 */
	for (int round = 0; round < IN_ROUNDS; round++) {
		ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (c->len) {
				C.truncated++;
				pr_warn("sync: %s: connection ended inside a message (%zu bytes "
					"dropped)",
					p->name, c->len);
			}
			in_down(p, n ? strerror(errno) : "closed by the peer");
			return;
		}
		c->len += (size_t)n;
		if (in_parse(p, &why)) {
			C.bad_input++;
			pr_warn("sync: %s: bad input (%s): connection dropped", p->name, why);
			in_down(p, "bad input");
			return;
		}
	}
}

void sync_event(void *ev, unsigned int events)
{
	struct sync_conn *c = ev;

	switch (c->kind) {
	case K_LISTEN:
		on_accept();
		break;
	case K_RING:
		ring_drain();
		break;
	case K_IN:
		in_event(c->peer, events);
		break;
	case K_OUT:
		out_event(c->peer, events);
		break;
	}
}

__u64 sync_tick(__u64 now)
{
	__u64 next = 0;

	if (ndefer && now >= defer_retry_at) {
		retry_deferred(now);
		defer_retry_at = now + DEFER_RETRY_NS;
	}
	if (ndefer)
		next = defer_retry_at;

	for (int i = 0; i < npeers; i++) {
		struct sync_peer *p = &peers[i];

		if (p->in_state != IN_DOWN)
			continue;
		if (p->retry_at <= now)
			in_connect(p);
		if (p->in_state == IN_DOWN && (!next || p->retry_at < next))
			next = p->retry_at;
	}
	return next;
}

int sync_open(void)
{
	int one = 1, fd;

	if (!npeers) /* sync_check_options(): --sync-listen came with it */
		return 0;
	/* the same peer list on every host: each leaves itself out */
	for (int i = 0; i < npeers; i++) {
		if (peers[i].alen == l_alen && !memcmp(&peers[i].addr, &l_addr, l_alen)) {
			pr_debug("sync: %s is this host (--sync-listen): not a peer",
				 peers[i].name);
			memmove(&peers[i], &peers[i + 1],
				(size_t)(npeers - i - 1) * sizeof(peers[0]));
			npeers--;
			i--;
		}
	}
	rb = ring_buffer__new(chlb_dp_sync_ring_fd(D.dp), on_ring_record, NULL, NULL);
	if (!rb) {
		pr_err("sync: couldn't open the data plane's ring buffer: %s", strerror(errno));
		return -1;
	}
	rconn.fd = ring_buffer__epoll_fd(rb);
	conn_watch(&rconn, EPOLLIN, EPOLL_CTL_ADD);
	fd = socket(l_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&l_addr, l_alen) || listen(fd, 16)) {
		pr_err("sync: couldn't listen on %s: %s", l_name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	lconn.fd = fd;
	conn_watch(&lconn, EPOLLIN, EPOLL_CTL_ADD);
	for (int i = 0; i < npeers; i++) {
		struct sync_peer *p = &peers[i];

		p->in = (struct sync_conn){
			.ev = { .type = LOOP_EV_SYNC }, .kind = K_IN, .fd = -1, .peer = p
		};
		p->out = (struct sync_conn){
			.ev = { .type = LOOP_EV_SYNC }, .kind = K_OUT, .fd = -1, .peer = p
		};
		in_connect(p);
	}
	pr_info("sync: listening on %s, %d peers", l_name, npeers);
	return 0;
}

void sync_close(void)
{
	for (int i = 0; i < npeers; i++) {
		conn_close(&peers[i].in);
		conn_close(&peers[i].out);
	}
	if (lconn.fd >= 0)
		close(lconn.fd);
	lconn.fd = -1;
	free(defer);
	defer = NULL;
	ndefer = 0;
	ring_buffer__free(rb); /* closes its epoll fd */
	rb = NULL;
	rconn.fd = -1;
}

/* ---- status ---- */

bool sync_ready(const char **why)
{
	*why = "";
	return true; /* STUB: being written */
}

static void add(json_object *o, const char *k, __u64 v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

json_object *sync_view(void)
{
	json_object *o, *drop, *rej, *pa;

	if (!npeers)
		return NULL;
	o = json_object_new_object();
	drop = json_object_new_object();
	rej = json_object_new_object();
	pa = json_object_new_array();
	json_object_object_add(o, "listen", json_object_new_string(l_name));
	add(o, "records_sent", C.sent);
	add(o, "records_received", C.received);
	add(o, "applied", C.applied);
	add(o, "kept", C.kept);
	add(o, "deferred", C.deferred);
	add(o, "deferred_applied", C.deferred_applied);
	add(o, "waiting", ndefer);
	add(o, "dumps_sent", C.dumps_sent);
	add(o, "dumps_received", C.dumps_received);
	add(drop, "no_service", C.drop_no_service);
	add(drop, "no_backend", C.drop_no_backend);
	add(drop, "stale", C.drop_stale);
	add(drop, "peer_slow", C.drop_peer_slow);
	add(drop, "error", C.drop_error);
	add(rej, "bad_input", C.bad_input);
	add(rej, "truncated", C.truncated);
	add(rej, "unknown_peer", C.unknown_peer);
	json_object_object_add(o, "dropped", drop);
	json_object_object_add(o, "rejected", rej);
	for (int i = 0; i < npeers; i++) {
		const struct sync_peer *p = &peers[i];
		json_object *e = json_object_new_object();

		json_object_object_add(e, "peer", json_object_new_string(p->name));
		json_object_object_add(e, "receiving",
				       json_object_new_string(in_names[p->in_state]));
		json_object_object_add(e, "sending", json_object_new_boolean(p->out.fd >= 0));
		if (p->error[0])
			json_object_object_add(e, "error", json_object_new_string(p->error));
		add(e, "dump_entries", p->dump_entries);
		add(e, "records_received", p->received);
		add(e, "records_sent", p->sent);
		json_object_array_add(pa, e);
	}
	json_object_object_add(o, "peers", pa);
	return o;
}
