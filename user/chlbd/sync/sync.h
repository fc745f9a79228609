/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Entry sync between LB hosts (docs/design.md, "Several LB hosts"): chlbd
 * streams the connection entries its data plane writes (the sync_ring
 * records) to its peers and applies theirs, so a connection that ECMP moves
 * to another LB finds its entry there.
 *
 * Every chlbd listens (--sync-listen) and connects to each --sync-peer. On
 * a connection the ACCEPTING side sends and the connecting side receives:
 * the acceptor first dumps every entry it has, then a DUMP_END, then the
 * records as its data plane writes them. So a chlbd that starts connects
 * to its peers and adopts their entries (its status says when each dump
 * is in), and each peer gets its entries by connecting back. Only
 * configured peers' addresses are accepted, and only once they prove they
 * hold the shared key (--sync-key; sync_auth.h) - both ends prove it before
 * a record or a dump flows, and every message after is sealed
 * (ChaCha20-Poly1305: authenticated, the records encrypted).
 */
#ifndef CHLBD_SYNC_H
#define CHLBD_SYNC_H

#include <stdbool.h>
#include <json-c/json.h>
#include <linux/types.h>

/* Options (main.c), before sync_open(): 0, or -1 with a message on stderr. */
int sync_parse_listen(const char *arg);
int sync_parse_peer(const char *arg);
int sync_parse_key(const char *arg);
/* After the options: -1 with a message on stderr when they do not go together. */
int sync_check_options(void);
/* Are peers configured? (then the data plane is loaded with a sync ring) */
bool sync_configured(void);

/* After the data plane is open and the state restored: listen, connect, watch the ring. */
int sync_open(void);
void sync_close(void);
/* An epoll event on one of sync's descriptors (LOOP_EV_SYNC). */
void sync_event(void *ev, unsigned int events);
/*
 * Reconnects, handshakes timed out, dumps due, a slice of the deferred
 * entries retried: the next deadline (ns) or 0.
 */
__u64 sync_tick(__u64 now);
/* The configuration changed (a commit): the entries that waited are tried again. */
void sync_config_changed(void);

/*
 * Has sync done what a starting host waits for before it is announced
 * (ready.h)? Every peer synced (its dump in) or in error (its last
 * connection attempt failed: a peer that is down is not waited for), and
 * no received entry waiting whose service and backend this host has. When
 * not, *why (static text) says what is missing. True without sync.
 */
bool sync_ready(const char **why);

/* `stats`: the "sync" object (counters, peers), or NULL when sync is off. */
json_object *sync_json(void);

/* Counters for the metrics (metrics/metrics_text.c). */
struct sync_counters {
	__u64 sent, received, applied, kept;
	__u64 deferred, deferred_applied; /* waited for their service or backend; applied later */
	__u64 drop_no_service, drop_no_backend, drop_stale, drop_peer_slow, drop_error;
	__u64 bad_input, truncated, unknown_peer, auth_rejected;
	__u64 dumps_sent, dumps_received;
};
const struct sync_counters *sync_counters(void);

#endif /* CHLBD_SYNC_H */
