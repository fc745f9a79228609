// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The receiving side of entry sync (sync_int.h): the connection this host
 * opens to each peer. After connecting it proves the key and makes the
 * peer prove it (HELLO, CHALLENGE, PROOF: sync_auth.h); a peer that cannot
 * - whoever answers at PEER:PORT without the key - is refused before a
 * single record is read. From then on every message must carry the
 * session's next seal; one that does not open drops the connection, and what
 * came before it stays applied. Bad bytes drop it too (counted); it is
 * opened again after a backoff.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include "sock.h"
#include "sync/sync_int.h"

#define IN_CAP	       (2 * SYNC_WIRE_MSG_MAX)
#define IN_READ	       SYNC_WIRE_MSG_MAX /* bytes read per round: at most 256 records */
#define IN_ROUNDS      1		 /* rounds per event */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define AUTH_FAILED    (-EACCES) /* a result: authentication failed (already counted and logged) */

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
	sync_conn_close(&p->in);
	sync_session_end(&p->in.ses);
	p->in_state = IN_DOWN;
	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (p->backoff_ms > BACKOFF_MAX_MS)
		p->backoff_ms = BACKOFF_MAX_MS;
	p->retry_at = chlb_now_ns() + p->backoff_ms * 1000000ull;
}

/*
 * From the listening address, the address the peer knows us by (its
 * accept refuses others); a failed bind is logged and the connect goes
 * ahead from whatever address the route gives, as the peer will say.
 */
static int from_listen_address(int fd, void *peer, const char **step)
{
	const struct sync_listen *l = &sync_listen;
	const struct sync_peer *p = peer;
	struct sockaddr_storage src = l->addr;

	(void)step;
	sync_keepalive(fd);
	if (!l->alen || l->addr.ss_family != p->addr.ss_family)
		return 0;
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	if (bind(fd, (struct sockaddr *)&src, l->alen))
		pr_debug("sync: %s: bind: %s", p->name, chlb_strerror(-errno));
	return 0;
}

void sync_recv_connect(struct sync_peer *p)
{
	int fd = sock_connect((struct sockaddr *)&p->addr, p->alen, NULL, 0, from_listen_address, p,
			      NULL);

	p->handshake_until = chlb_now_ns() + SYNC_HANDSHAKE_NS;
	if (fd < 0) {
		in_down(p, strerror(-fd)); /* the peer's error as stats shows it */
		return;
	}
	p->in.fd = fd;
	p->in_state = IN_CONNECTING;
	sync_conn_watch(&p->in, EPOLLOUT | EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
}

/* Connected: HELLO with this host's key id and a fresh nonce. */
static int send_hello(struct sync_peer *p)
{
	__u8 m[SYNC_WIRE_HELLO];
	const struct sync_key *k;

	sync_key_refresh();
	k = sync_key_own();
	if (!k)
		return -ENOKEY;
	p->in_key = *k;
	sync_nonce(p->nonce_c);
	sync_wire_hdr(m, SYNC_MSG_HELLO, 0);
	memcpy(m + SYNC_WIRE_HDR, k->id, SYNC_KEYID_LEN);
	memcpy(m + SYNC_WIRE_HDR + SYNC_KEYID_LEN, p->nonce_c, SYNC_NONCE_LEN);
	return sync_send_now(p->in.fd, m, sizeof(m));
}

/*
 * The peer's CHALLENGE: its proof checked, ours sent, the session begun.
 * AUTH_FAILED (counted), -EPROTO (bad input) or -EIO (not sent), and why, if not.
 */
static int on_challenge(struct sync_peer *p, const __u8 *m, const char **why)
{
	const __u8 *nonce_a = m + SYNC_WIRE_HDR, *proof = nonce_a + SYNC_NONCE_LEN;
	__u8 out[SYNC_WIRE_PROOF];

	if (!sync_proof_ok(&p->in_key, SYNC_ROLE_ACCEPTOR, p->nonce_c, nonce_a, proof)) {
		sync_auth_rejected(p, "receiving",
				   "it did not prove the key: not the peer, or another key");
		*why = "authentication failed: the peer did not prove the key";
		return AUTH_FAILED;
	}
	sync_wire_hdr(out, SYNC_MSG_PROOF, 0);
	sync_proof(&p->in_key, SYNC_ROLE_CONNECTOR, p->nonce_c, nonce_a, out + SYNC_WIRE_HDR);
	if (sync_send_now(p->in.fd, out, sizeof(out))) {
		*why = "couldn't send the handshake";
		return -EIO;
	}
	sync_session_start(&p->in.ses, &p->in_key, p->nonce_c, nonce_a);
	p->in_state = IN_DUMP;
	p->error[0] = '\0'; /* from here the state says how it goes */
	p->dump_entries = 0;
	pr_info("sync: connected to %s: authenticated, receiving its entries", p->name);
	return 0;
}

/* One whole message m of n bytes after the handshake: applied. AUTH_FAILED or -EPROTO, and why. */
static int on_message(struct sync_peer *p, __u8 *m, int n, enum sync_msg_type type, __u16 count,
		      __u64 now, const char **why)
{
	if (type != SYNC_MSG_RECORDS && type != SYNC_MSG_DUMP_END) {
		*why = "a handshake message after the handshake";
		return -EPROTO;
	}
	if (!sync_session_open(&p->in.ses, m, (size_t)n - SYNC_TAG_LEN, m + n - SYNC_TAG_LEN)) {
		sync_auth_rejected(p, "receiving",
				   "a message failed its tag (changed or replayed)");
		*why = "a message failed authentication";
		return AUTH_FAILED;
	}
	if (type == SYNC_MSG_DUMP_END) {
		if (p->in_state == IN_DUMP)
			pr_info("sync: %s: dump received (%llu entries)", p->name,
				(unsigned long long)p->dump_entries);
		sync_c.dumps_received += p->in_state == IN_DUMP;
		p->in_state = IN_SYNCED;
		/* a whole dump: the peer works; a peer that hangs up at once keeps backing off */
		p->backoff_ms = 0;
		return 0;
	}
	for (__u16 i = 0; i < count; i++) {
		struct sync_entry e;

		/* what came before it stays applied: it was the peer's */
		if (sync_wire_get(m, i, &e, why))
			return -EPROTO;
		p->received++;
		sync_apply_entry(&e, now);
		p->dump_entries += p->in_state == IN_DUMP;
	}
	return 0;
}

/* Whole messages in p->in.buf: handled; the rest kept. AUTH_FAILED, -EPROTO or -EIO, and why. */
static int in_parse(struct sync_peer *p, const char **why)
{
	struct sync_conn *c = &p->in;
	__u64 now = chlb_coarse_now_ns();
	size_t off = 0;

	while (off < c->len) {
		enum sync_msg_type type;
		__u16 count;
		int n = sync_wire_msg(c->buf + off, c->len - off, &type, &count, why), rc;

		if (n < 0)
			return -EPROTO;
		if (!n)
			break;
		if (p->in_state == IN_HANDSHAKE && type != SYNC_MSG_CHALLENGE) {
			*why = "the peer sent something else than the handshake's challenge";
			return -EPROTO;
		}
		rc = p->in_state == IN_HANDSHAKE
			 ? on_challenge(p, c->buf + off, why)
			 : on_message(p, c->buf + off, n, type, count, now, why);
		if (rc)
			return rc;
		off += (size_t)n;
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 0;
}

/* The connection is up: the handshake begins. false: it is down again. */
static bool on_connected(struct sync_peer *p, unsigned int events)
{
	int err = 0;
	socklen_t el = sizeof(err);

	if (getsockopt(p->in.fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		in_down(p, strerror(err ? err : errno));
		return false;
	}
	if (!(events & (EPOLLOUT | EPOLLIN)))
		return false;
	if (send_hello(p)) {
		in_down(p, "couldn't send the handshake");
		return false;
	}
	p->in_state = IN_HANDSHAKE;
	sync_conn_watch(&p->in, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
	return true;
}

void sync_recv_event(struct sync_peer *p, unsigned int events)
{
	struct sync_conn *c = &p->in;
	const char *why = NULL;

	if (p->in_state == IN_CONNECTING && !on_connected(p, events))
		return;
	if (!c->buf) {
		c->buf = malloc(IN_CAP);
		c->cap = IN_CAP;
		if (!c->buf) {
			in_down(p, "out of memory");
			return;
		}
	}
	/*
	 * At most IN_ROUNDS * 256 records per event (each up to two map writes):
	 * a large dump or a flood must not keep the loop from the control
	 * socket; epoll reports the rest at the next iteration.
	 */
	for (int round = 0; round < IN_ROUNDS; round++) {
		size_t room = c->cap - c->len < IN_READ ? c->cap - c->len : IN_READ;
		ssize_t n = recv(c->fd, c->buf + c->len, room, MSG_DONTWAIT);
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (c->len) {
				sync_c.truncated++;
				pr_warn("sync: %s: connection ended inside a message (%zu bytes "
					"dropped)",
					p->name, c->len);
			}
			in_down(p, p->in_state == IN_HANDSHAKE
				       ? "closed during the handshake (the peer does not "
					 "accept our key?)"
				   : n ? strerror(errno)
				       : "closed by the peer");
			return;
		}
		c->len += (size_t)n;
		rc = in_parse(p, &why);
		if (rc == -EPROTO) {
			sync_c.bad_input++;
			pr_warn("sync: %s: bad input (%s): connection dropped", p->name, why);
		}
		if (rc) {
			in_down(p, rc == -EPROTO ? "bad input" : why);
			return;
		}
	}
}

__u64 sync_recv_tick(struct sync_peer *p, __u64 now)
{
	if ((p->in_state == IN_CONNECTING || p->in_state == IN_HANDSHAKE) &&
	    now >= p->handshake_until) {
		if (p->in_state == IN_HANDSHAKE)
			sync_auth_rejected(p, "receiving", "no answer to the handshake");
		in_down(p, p->in_state == IN_HANDSHAKE ? "no answer to the handshake"
						       : "connect timed out");
	}
	if (p->in_state == IN_DOWN && p->retry_at <= now)
		sync_recv_connect(p);
	if (p->in_state == IN_DOWN)
		return p->retry_at;
	if (p->in_state == IN_CONNECTING || p->in_state == IN_HANDSHAKE)
		return p->handshake_until;
	return 0;
}
