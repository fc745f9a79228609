// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sending side of entry sync (sync_int.h): connections peers open to
 * this host to receive its entries.
 *
 *  - Accepting: only a configured peer's address is accepted, and only
 *    into a handshake (sync_auth.h) that must end within
 *    SYNC_HANDSHAKE_NS; at most PENDING_MAX are under way (the oldest
 *    goes). Nothing is sent before the peer proved the key; once it has,
 *    its connection replaces the one it had (a connection from the peer's
 *    address that does not prove the key displaces nothing).
 *  - The dump: every live entry, read in DUMP_BATCH slices through the
 *    resumable cursor only while less than DUMP_LOW bytes are queued to
 *    the peer, so the dump advances as fast as the peer reads and never
 *    fills the queue (nor walks the table in one go in the event loop).
 *    Two dumps per peer per SYNC_DUMP_GAP_NS: a peer that reconnects in a
 *    loop does not make this host walk its table in a loop.
 *  - Live records: the ring's records are turned into entries a peer can
 *    use - the backend slot becomes the backend's address, its owning
 *    service the VIP - batched (up to SYNC_WIRE_BATCH a message) and queued
 *    to every authenticated peer, interleaved with its dump. A peer that
 *    does not read keeps at most OUT_MAX bytes queued; beyond, records for
 *    it are dropped and counted (peer_slow). As the dump is held to
 *    DUMP_LOW, a dump never makes live records go.
 * Every message is sealed with the session's next number (sync_session_seal).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <bpf/libbpf.h>
#include <sodium.h>
#include "sock.h"
#include "sync/sync_int.h"

#define OUT_MAX		 (16u << 20) /* bytes queued to a peer */
#define DUMP_LOW	 (1u << 20)  /* the dump is read on while less is queued */
#define DUMP_BATCH	 1024	     /* entries read per slice */
#define DUMP_SLICES	 4	     /* slices per event */
#define SYNC_DUMP_GAP_NS 2000000000ull
#define PENDING_MAX	 16
#define PENDING_CAP	 (SYNC_WIRE_HELLO + SYNC_WIRE_PROOF)

struct pending {
	struct sync_conn c; /* kind K_PENDING; c.peer: whose address it came from */
	__u64 until;
	bool challenged; /* HELLO answered: PROOF expected */
	struct sync_key key;
	__u8 nonce_c[SYNC_NONCE_LEN], nonce_a[SYNC_NONCE_LEN];
	__u8 in[PENDING_CAP];
};

static struct pending pend[PENDING_MAX];
static struct ring_buffer *rb;
static struct sync_conn rconn = { .ev = { .type = LOOP_EV_SYNC }, .kind = K_RING, .fd = -1 };
/* the ring's records as wire records, not yet queued to the peers */
static __u8 stage[SYNC_WIRE_MSG_MAX];
static __u16 nstage;
static struct sync_ratelog unknown_log;
/* one dump slice read, and its messages */
static struct chlb_flow dkeys[DUMP_BATCH];
static struct chlb_conn dvals[DUMP_BATCH];
static __u8 dmsg[SYNC_WIRE_MSG_MAX];

/* ---- the queue to a peer ---- */

static size_t queued(const struct sync_conn *c)
{
	return c->len - c->off;
}

/* Write what is queued; EPOLLOUT while something is left or a dump goes on. < 0: gone. */
static int out_flush(struct sync_peer *p)
{
	struct sync_conn *c = &p->out;

	while (c->off < c->len) {
		ssize_t n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		c->off += (size_t)n;
	}
	if (c->off == c->len)
		c->off = c->len = 0;
	sync_conn_watch(c, EPOLLIN | EPOLLRDHUP | (c->len || p->dumping ? EPOLLOUT : 0),
			EPOLL_CTL_MOD);
	return 0;
}

/* Room for n more bytes in c's buffer: 0, or -1 (out of memory). */
static int out_room(struct sync_conn *c, size_t n)
{
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
			return -ENOMEM;
		c->buf = nb;
		c->cap = cap;
	}
	return 0;
}

/* Message msg[0..n) queued to p, sealed with the session's next number. -1 when over OUT_MAX. */
static int out_msg(struct sync_peer *p, const __u8 *msg, size_t n)
{
	struct sync_conn *c = &p->out;

	if (queued(c) + n + SYNC_TAG_LEN > OUT_MAX || out_room(c, n + SYNC_TAG_LEN))
		return -ENOBUFS;
	memcpy(c->buf + c->len, msg, n);
	sync_session_seal(&c->ses, c->buf + c->len, n, c->buf + c->len + n);
	c->len += n + SYNC_TAG_LEN;
	return 0;
}

static void out_close(struct sync_peer *p)
{
	sync_conn_close(&p->out);
	sync_session_end(&p->out.ses);
	p->dumping = false;
}

/* ---- live records ---- */

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
	size_t n = SYNC_WIRE_HDR + (size_t)nstage * SYNC_WIRE_REC;

	if (!nstage)
		return;
	sync_wire_hdr(stage, SYNC_MSG_RECORDS, nstage);
	for (int i = 0; i < sync_npeers; i++) {
		struct sync_peer *p = &sync_peers[i];

		if (p->out.fd < 0)
			continue;
		if (out_msg(p, stage, n)) {
			sync_c.drop_peer_slow += nstage;
			continue;
		}
		sync_c.sent += nstage;
		p->sent += nstage;
		if (out_flush(p)) {
			pr_warn("sync: %s: send: %s; it gets a dump when it reconnects", p->name,
				strerror(errno));
			out_close(p);
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
		sync_c.drop_stale++;
		return 0;
	}
	sync_wire_put(stage + SYNC_WIRE_HDR + (size_t)nstage * SYNC_WIRE_REC, &e);
	if (++nstage == SYNC_WIRE_BATCH)
		stage_flush();
	return 0;
}

void sync_send_ring_drain(void)
{
	if (ring_buffer__consume(rb) < 0)
		pr_warn("sync: reading the ring buffer: %s", strerror(errno));
	stage_flush();
}

int sync_send_open(void)
{
	for (int i = 0; i < PENDING_MAX; i++)
		pend[i].c.fd = -1;
	rb = ring_buffer__new(chlb_dp_sync_ring_fd(D.dp), on_ring_record, NULL, NULL);
	if (!rb) {
		int rc = -errno;

		pr_err("sync: couldn't open the data plane's ring buffer: %s", chlb_strerror(rc));
		return rc;
	}
	rconn.fd = ring_buffer__epoll_fd(rb);
	sync_conn_watch(&rconn, EPOLLIN, EPOLL_CTL_ADD);
	return 0;
}

/* ---- the dump ---- */

/* A slice's live entries as messages to p: -1 when they cannot be queued. */
static int dump_put(struct sync_peer *p, __u32 n)
{
	__u8 *msg = dmsg;
	__u16 k = 0;

	for (__u32 i = 0; i <= n; i++) {
		struct sync_entry e;

		if (k && (i == n || k == SYNC_WIRE_BATCH)) {
			sync_wire_hdr(msg, SYNC_MSG_RECORDS, k);
			/* the dump is held to DUMP_LOW queued: OUT_MAX is never in the way */
			if (out_msg(p, msg, SYNC_WIRE_HDR + (size_t)k * SYNC_WIRE_REC))
				return -ENOBUFS;
			p->dump_sent += k;
			k = 0;
		}
		if (i == n)
			break;
		/* entries whose backend left are not the connection's any more: not sent */
		if (D.rt->be[dvals[i].backend % CHLB_MAX_BACKENDS].state != CHLB_BE_LIVE ||
		    !entry_of(&dkeys[i], dvals[i].backend, dvals[i].gen, dvals[i].flags, &e))
			continue;
		sync_wire_put(msg + SYNC_WIRE_HDR + (size_t)k * SYNC_WIRE_REC, &e);
		k++;
	}
	return 0;
}

/* The dump ended: DUMP_END, counted and said. */
static int dump_end(struct sync_peer *p)
{
	__u8 end[SYNC_WIRE_HDR];

	sync_wire_hdr(end, SYNC_MSG_DUMP_END, 0);
	if (out_msg(p, end, sizeof(end)))
		return -ENOBUFS;
	p->dumping = false;
	sync_c.dumps_sent++;
	sync_c.sent += p->dump_sent;
	p->sent += p->dump_sent;
	pr_info("sync: %s: dump of %llu entries queued in %.1f ms", p->name,
		(unsigned long long)p->dump_sent, (double)(chlb_now_ns() - p->dump_t0) / 1e6);
	return 0;
}

/* More of p's dump while little is queued to it, then a flush. */
static void out_pump(struct sync_peer *p)
{
	for (int s = 0; s < DUMP_SLICES && p->dumping && queued(&p->out) < DUMP_LOW; s++) {
		__u32 n = DUMP_BATCH;
		int rc;

		rc = chlb_dp_conns_next_batch(D.dp, &p->cur, dkeys, dvals, &n);
		if (rc == -ENOSPC) { /* a bucket fuller than a slice: its entries are skipped */
			pr_warn("sync: %s: dump: a bucket holds more than %d entries", p->name,
				DUMP_BATCH);
			rc = 0;
			p->cur.done = true;
		}
		if (rc || dump_put(p, n) || (p->cur.done && dump_end(p))) {
			pr_err("sync: %s: dump failed: %s", p->name,
			       rc ? strerror(-rc) : "out of memory");
			out_close(p);
			return;
		}
	}
	if (out_flush(p))
		out_close(p);
}

/*
 * p proved the key: its dump begins now, or SYNC_DUMP_GAP_NS after the one
 * before the last began. Two within the gap: a peer restarted fresh right
 * after a dump (an upgrade, a wiped host) needs its dump at once - it is
 * deciding flows without its peers' entries meanwhile - while one that
 * reconnects in a loop still gets one per gap.
 */
static void dump_schedule(struct sync_peer *p, __u64 now)
{
	__u64 prev = p->prev_dump_ns;

	p->dump_at = prev && now - prev < SYNC_DUMP_GAP_NS ? prev + SYNC_DUMP_GAP_NS : now;
}

static void dump_start(struct sync_peer *p, __u64 now)
{
	p->dump_at = 0;
	p->dumping = true;
	p->prev_dump_ns = p->last_dump_ns;
	p->last_dump_ns = now;
	p->dump_t0 = now;
	p->dump_sent = 0;
	memset(&p->cur, 0, sizeof(p->cur));
	out_pump(p);
}

/* ---- accepting ---- */

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

static void pending_close(struct pending *q)
{
	sync_conn_close(&q->c);
	sodium_memzero(&q->key, sizeof(q->key));
	q->challenged = false;
}

/* A free pending slot; the oldest handshake goes when none is. */
static struct pending *pending_slot(void)
{
	struct pending *old = &pend[0];

	for (int i = 0; i < PENDING_MAX; i++) {
		if (pend[i].c.fd < 0)
			return &pend[i];
		if (pend[i].until < old->until)
			old = &pend[i];
	}
	sync_auth_rejected(old->c.peer, "sending", "too many handshakes under way");
	pending_close(old);
	return old;
}

static void refused(const struct sockaddr_storage *from)
{
	char name[INET6_ADDRSTRLEN];

	sync_c.unknown_peer++;
	if (!sync_ratelog(&unknown_log, chlb_now_ns()))
		return;
	inet_ntop(from->ss_family,
		  from->ss_family == AF_INET
		      ? (const void *)&((const struct sockaddr_in *)from)->sin_addr
		      : (const void *)&((const struct sockaddr_in6 *)from)->sin6_addr,
		  name, sizeof(name));
	pr_warn("sync: refused a connection from %s: not a --sync-peer (%llu more refused "
		"since the last such line)",
		name, (unsigned long long)unknown_log.suppressed);
	unknown_log.suppressed = 0;
}

void sync_send_accept(int lfd)
{
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		int fd = sock_accept(lfd, &from, &flen), i;
		struct pending *q;

		if (fd < 0)
			return;
		for (i = 0; i < sync_npeers && !same_host(&from, &sync_peers[i].addr); i++)
			;
		if (i == sync_npeers) {
			refused(&from);
			close(fd);
			continue;
		}
		q = pending_slot();
		q->c = (struct sync_conn){ .ev = { .type = LOOP_EV_SYNC },
					   .kind = K_PENDING,
					   .fd = fd,
					   .peer = &sync_peers[i] };
		q->until = chlb_now_ns() + SYNC_HANDSHAKE_NS;
		q->challenged = false;
		sync_keepalive(fd);
		sync_conn_watch(&q->c, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
	}
}

/* HELLO: the key it names, a fresh nonce, our proof. -1 (counted) when refused. */
static int on_hello(struct pending *q, const __u8 *m)
{
	const struct sync_key *k;
	__u8 out[SYNC_WIRE_CHALL];

	sync_key_refresh();
	k = sync_key_find(m + SYNC_WIRE_HDR);
	if (!k) {
		sync_auth_rejected(q->c.peer, "sending", "its key is not one of ours");
		return -EACCES;
	}
	q->key = *k;
	memcpy(q->nonce_c, m + SYNC_WIRE_HDR + SYNC_KEYID_LEN, SYNC_NONCE_LEN);
	sync_nonce(q->nonce_a);
	sync_wire_hdr(out, SYNC_MSG_CHALLENGE, 0);
	memcpy(out + SYNC_WIRE_HDR, q->nonce_a, SYNC_NONCE_LEN);
	sync_proof(&q->key, SYNC_ROLE_ACCEPTOR, q->nonce_c, q->nonce_a,
		   out + SYNC_WIRE_HDR + SYNC_NONCE_LEN);
	if (sync_send_now(q->c.fd, out, sizeof(out)))
		return -EIO;
	q->challenged = true;
	return 0;
}

/* PROOF checked: the connection becomes the peer's sending one, its dump scheduled. */
static int on_proof(struct pending *q, const __u8 *m)
{
	struct sync_peer *p = q->c.peer;
	__u64 now = chlb_now_ns();

	if (!sync_proof_ok(&q->key, SYNC_ROLE_CONNECTOR, q->nonce_c, q->nonce_a,
			   m + SYNC_WIRE_HDR)) {
		sync_auth_rejected(p, "sending",
				   "it did not prove the key (a replayed or forged "
				   "handshake)");
		return -EACCES;
	}
	if (p->out.fd >= 0) {
		pr_info("sync: %s connected again: the old connection is dropped", p->name);
		out_close(p);
	}
	sync_send_ring_drain(); /* what the ring holds goes to the others first */
	p->out.fd = q->c.fd;
	q->c.fd = -1;
	sync_session_start(&p->out.ses, &q->key, q->nonce_c, q->nonce_a);
	pending_close(q);
	sync_conn_watch(&p->out, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
	pr_info("sync: %s connected and authenticated", p->name);
	dump_schedule(p, now);
	if (p->dump_at <= now)
		dump_start(p, now);
	return 0;
}

void sync_send_pending_event(struct sync_conn *c, unsigned int events)
{
	struct pending *q = (struct pending *)c;
	size_t want = q->challenged ? SYNC_WIRE_PROOF : SYNC_WIRE_HELLO;
	enum sync_msg_type type;
	const char *why;
	__u16 count;
	ssize_t n;
	int len;

	(void)events;
	n = recv(c->fd, q->in + c->len, want - c->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		sync_auth_rejected(c->peer, "sending", "closed during the handshake");
		pending_close(q);
		return;
	}
	c->len += (size_t)n;
	len = sync_wire_msg(q->in, c->len, &type, &count, &why);
	if (!len && c->len < want)
		return;
	if (len <= 0 || type != (q->challenged ? SYNC_MSG_PROOF : SYNC_MSG_HELLO)) {
		sync_auth_rejected(c->peer, "sending", len < 0 ? why : "not the handshake");
		pending_close(q);
		return;
	}
	c->len = 0;
	if (q->challenged ? on_proof(q, q->in) : on_hello(q, q->in))
		pending_close(q);
}

/* The receiver sends nothing after its handshake: bytes from it are bad input, EOF the end. */
void sync_send_out_event(struct sync_peer *p, unsigned int events)
{
	__u8 b[64];
	ssize_t n;

	if (events & EPOLLOUT) {
		out_pump(p);
		if (p->out.fd < 0)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	n = recv(p->out.fd, b, sizeof(b), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		sync_c.bad_input++;
		pr_warn("sync: %s sent bytes on the connection it receives on: dropped", p->name);
	} else {
		pr_info("sync: %s: stopped receiving (%s)", p->name,
			n ? strerror(errno) : "closed");
	}
	out_close(p);
}

__u64 sync_send_tick(__u64 now)
{
	__u64 next = 0;

	for (int i = 0; i < PENDING_MAX; i++) {
		struct pending *q = &pend[i];

		if (q->c.fd < 0)
			continue;
		if (q->until <= now) {
			sync_auth_rejected(q->c.peer, "sending", "handshake not done in time");
			pending_close(q);
		} else if (!next || q->until < next) {
			next = q->until;
		}
	}
	for (int i = 0; i < sync_npeers; i++) {
		struct sync_peer *p = &sync_peers[i];

		if (p->out.fd < 0 || !p->dump_at)
			continue;
		if (p->dump_at <= now)
			dump_start(p, now);
		else if (!next || p->dump_at < next)
			next = p->dump_at;
	}
	return next;
}

size_t sync_send_pending(void)
{
	size_t n = 0;

	for (int i = 0; i < PENDING_MAX; i++)
		n += pend[i].c.fd >= 0;
	return n;
}

void sync_send_close(void)
{
	for (int i = 0; i < PENDING_MAX; i++)
		pending_close(&pend[i]);
	for (int i = 0; i < sync_npeers; i++)
		out_close(&sync_peers[i]);
	ring_buffer__free(rb); /* closes its epoll fd */
	rb = NULL;
	rconn.fd = -1;
}
