// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Entry sync between LB hosts (sync.h says who sends what, sync_int.h which
 * part does what; the wire format is user/lib/wire/sync_wire.h, the authentication
 * sync_auth.h; docs/design.md, "Several LB hosts").
 *
 * All in the event loop, no threads: the listening socket, one socket per
 * direction per peer (non-blocking), the handshakes under way and the data
 * plane's ring buffer (ring_buffer__epoll_fd) are epoll sources tagged
 * LOOP_EV_SYNC. This file: the options, the listening socket, the event
 * and timer dispatch, and what `stats`, /metrics and readiness see.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "sock.h"
#include "sync/sync_int.h"

static const char *const in_names[] = { "down", "connecting", "authenticating", "receiving dump",
					"synced" };

static struct sync_conn lconn = { .ev = { .type = LOOP_EV_SYNC }, .kind = K_LISTEN, .fd = -1 };

/* ---- options ---- */

static int parse_addr(const char *opt, const char *arg, struct sockaddr_storage *ss, socklen_t *len,
		      char *name, size_t nlen)
{
	const char *why;
	unsigned int l;

	if (chlb_parse_sockaddr(arg, ss, &l, name, nlen, &why)) {
		fprintf(stderr, "chlbd: '%s': bad value for %s: %s\n", arg, opt, why);
		return -EINVAL;
	}
	*len = l;
	return 0;
}

int sync_parse_listen(const char *arg)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&sync_listen.addr;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&sync_listen.addr;

	if (parse_addr("--sync-listen", arg, &sync_listen.addr, &sync_listen.alen, sync_listen.name,
		       sizeof(sync_listen.name)))
		return -EINVAL;
	/*
	 * A wildcard cannot be told from the peers' addresses: this host would
	 * be its own peer (syncing every entry with itself), and its connections
	 * would leave from whatever address the route picks.
	 */
	if ((sync_listen.addr.ss_family == AF_INET && s4->sin_addr.s_addr == htonl(INADDR_ANY)) ||
	    (sync_listen.addr.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))) {
		fprintf(stderr,
			"chlbd: '%s': bad value for --sync-listen: give this host's own "
			"address, the one its peers name in --sync-peer, not a wildcard\n",
			arg);
		sync_listen.alen = 0;
		return -EINVAL;
	}
	return 0;
}

int sync_parse_peer(const char *arg)
{
	struct sync_peer *p;

	if (sync_npeers == SYNC_MAX_PEERS) {
		fprintf(stderr, "chlbd: at most %d --sync-peer\n", SYNC_MAX_PEERS);
		return -EINVAL;
	}
	p = &sync_peers[sync_npeers];
	if (parse_addr("--sync-peer", arg, &p->addr, &p->alen, p->name, sizeof(p->name)))
		return -EINVAL;
	/* twice: two receiving connections, each making the peer drop the other, over and over */
	for (int i = 0; i < sync_npeers; i++) {
		if (sync_peers[i].alen == p->alen &&
		    !memcmp(&sync_peers[i].addr, &p->addr, p->alen)) {
			fprintf(stderr, "chlbd: '%s': --sync-peer %s given twice\n", arg, p->name);
			return -EINVAL;
		}
	}
	p->in.fd = p->out.fd = -1; /* sync_close() after a start that failed early */
	sync_npeers++;
	return 0;
}

int sync_parse_key(const char *arg)
{
	return sync_key_option(arg);
}

int sync_check_options(void)
{
	if (sync_npeers && !sync_key_configured()) {
		fprintf(stderr, "chlbd: --sync-peer needs --sync-key FILE (the key the peers prove "
				"to each other; docs/operations.md, \"Entry sync\")\n");
		return -EINVAL;
	}
	if (sync_key_configured() && !sync_npeers) {
		fprintf(stderr, "chlbd: --sync-key needs --sync-peer and --sync-listen\n");
		return -EINVAL;
	}
	if (sync_npeers && !sync_listen.alen) {
		fprintf(stderr, "chlbd: --sync-peer needs --sync-listen (peers connect to it to "
				"receive this host's entries)\n");
		return -EINVAL;
	}
	if (sync_listen.alen && !sync_npeers) {
		fprintf(stderr, "chlbd: --sync-listen needs --sync-peer (only the peers' addresses "
				"are accepted: with none, sync would be off)\n");
		return -EINVAL;
	}
	return 0;
}

bool sync_configured(void)
{
	return sync_npeers > 0;
}

const struct sync_counters *sync_counters(void)
{
	return &sync_c;
}

/* ---- events and timers ---- */

void sync_event(void *ev, unsigned int events)
{
	struct sync_conn *c = ev;

	switch (c->kind) {
	case K_LISTEN:
		sync_send_accept(lconn.fd);
		break;
	case K_RING:
		sync_send_ring_drain();
		break;
	case K_IN:
		sync_recv_event(c->peer, events);
		break;
	case K_OUT:
		sync_send_out_event(c->peer, events);
		break;
	case K_PENDING:
		sync_send_pending_event(c, events);
		break;
	}
}

static __u64 earliest(__u64 a, __u64 b)
{
	return !a || (b && b < a) ? b : a;
}

__u64 sync_tick(__u64 now)
{
	__u64 next;

	if (!sync_npeers)
		return 0;
	next = earliest(sync_apply_tick(now), sync_send_tick(now));
	for (int i = 0; i < sync_npeers; i++)
		next = earliest(next, sync_recv_tick(&sync_peers[i], now));
	return next;
}

void sync_config_changed(void)
{
	sync_apply_retry();
}

int sync_open(void)
{
	int fd;

	if (!sync_npeers) /* sync_check_options(): --sync-listen came with it */
		return 0;
	/* the same peer list on every host: each leaves itself out */
	for (int i = 0; i < sync_npeers; i++) {
		if (sync_peers[i].alen == sync_listen.alen &&
		    !memcmp(&sync_peers[i].addr, &sync_listen.addr, sync_listen.alen)) {
			pr_debug("sync: %s is this host (--sync-listen): not a peer",
				 sync_peers[i].name);
			memmove(&sync_peers[i], &sync_peers[i + 1],
				(size_t)(sync_npeers - i - 1) * sizeof(sync_peers[0]));
			sync_npeers--;
			i--;
		}
	}
	for (int i = 0; i < sync_npeers; i++) {
		struct sync_peer *p = &sync_peers[i];

		p->in = (struct sync_conn){
			.ev = { .type = LOOP_EV_SYNC }, .kind = K_IN, .fd = -1, .peer = p
		};
		p->out = (struct sync_conn){
			.ev = { .type = LOOP_EV_SYNC }, .kind = K_OUT, .fd = -1, .peer = p
		};
	}
	fd = sync_send_open();
	if (fd)
		return fd;
	fd = sock_listen((struct sockaddr *)&sync_listen.addr, sync_listen.alen, 16);
	if (fd < 0) {
		pr_err("sync: couldn't listen on %s: %s", sync_listen.name, chlb_strerror(fd));
		return fd;
	}
	lconn.fd = fd;
	sync_conn_watch(&lconn, EPOLLIN, EPOLL_CTL_ADD);
	for (int i = 0; i < sync_npeers; i++)
		sync_recv_connect(&sync_peers[i]);
	pr_info("sync: listening on %s, %d peers, authenticated", sync_listen.name, sync_npeers);
	return 0;
}

void sync_close(void)
{
	for (int i = 0; i < sync_npeers; i++) {
		sync_conn_close(&sync_peers[i].in);
		sync_session_end(&sync_peers[i].in.ses);
	}
	sync_send_close();
	if (lconn.fd >= 0)
		close(lconn.fd);
	lconn.fd = -1;
	sync_apply_close();
}

/* ---- status ---- */

bool sync_ready(const char **why)
{
	*why = "";
	for (int i = 0; i < sync_npeers; i++) {
		const struct sync_peer *p = &sync_peers[i];

		/*
		 * A peer whose last attempt failed (down, refusing, another key) is
		 * not waited for - also while it is tried again: retries of a dead
		 * peer would otherwise hold readiness until all of them fail at once.
		 */
		if (p->in_state == IN_SYNCED || p->error[0])
			continue;
		*why = "a sync peer's entries are still coming (not synced)";
		return false;
	}
	if (sync_apply_retrying()) {
		*why = "peers' entries that waited for a backend are being applied";
		return false;
	}
	return true;
}

static void add(json_object *o, const char *k, __u64 v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

json_object *sync_json(void)
{
	json_object *o, *drop, *rej, *pa;

	if (!sync_npeers)
		return NULL;
	o = json_object_new_object();
	drop = json_object_new_object();
	rej = json_object_new_object();
	pa = json_object_new_array();
	json_object_object_add(o, "listen", json_object_new_string(sync_listen.name));
	add(o, "records_sent", sync_c.sent);
	add(o, "records_received", sync_c.received);
	add(o, "applied", sync_c.applied);
	add(o, "kept", sync_c.kept);
	add(o, "deferred", sync_c.deferred);
	add(o, "deferred_applied", sync_c.deferred_applied);
	add(o, "waiting", sync_apply_waiting());
	add(o, "dumps_sent", sync_c.dumps_sent);
	add(o, "dumps_received", sync_c.dumps_received);
	add(o, "handshakes", sync_send_pending());
	add(drop, "no_service", sync_c.drop_no_service);
	add(drop, "no_backend", sync_c.drop_no_backend);
	add(drop, "stale", sync_c.drop_stale);
	add(drop, "peer_slow", sync_c.drop_peer_slow);
	add(drop, "error", sync_c.drop_error);
	add(rej, "bad_input", sync_c.bad_input);
	add(rej, "truncated", sync_c.truncated);
	add(rej, "unknown_peer", sync_c.unknown_peer);
	add(rej, "auth", sync_c.auth_rejected);
	json_object_object_add(o, "dropped", drop);
	json_object_object_add(o, "rejected", rej);
	for (int i = 0; i < sync_npeers; i++) {
		const struct sync_peer *p = &sync_peers[i];
		json_object *e = json_object_new_object();

		json_object_object_add(e, "peer", json_object_new_string(p->name));
		json_object_object_add(e, "receiving",
				       json_object_new_string(in_names[p->in_state]));
		json_object_object_add(e, "sending", json_object_new_boolean(p->out.fd >= 0));
		json_object_object_add(e, "dumping", json_object_new_boolean(p->dumping));
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
