/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Entry sync's parts and what they share (sync.h is the interface to the
 * rest of chlbd):
 *   sync.c        options, the listening socket, the event and timer
 *                 dispatch, status (stats, readiness);
 *   sync_conn.c   what the others share: the peers, counters, socket helpers;
 *   sync_send.c   the accepting side: handshakes of connecting peers, the
 *                 dump (in slices, paced by the peer), the live records;
 *   sync_recv.c   the connecting side: connect, handshake, check and parse
 *                 the peer's messages;
 *   sync_apply.c  received entries into the data plane, or waiting (held)
 *                 for their service or backend;
 *   sync_auth.c   keys, proofs, message tags; sync_wire.c the bytes.
 */
#ifndef CHLBD_SYNC_INT_H
#define CHLBD_SYNC_INT_H

#include <stdbool.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include "chlbd.h"
#include "loop_ev.h"
#include "sync/sync.h"
#include "sync/sync_auth.h"
#include "wire/sync_wire.h"

#define SYNC_MAX_PEERS	  16
#define SYNC_HANDSHAKE_NS 5000000000ull	 /* a handshake not done by then: the connection goes */
#define SYNC_LOG_EVERY_NS 60000000000ull /* network-caused log lines: one a minute per source */

enum sync_conn_kind {
	K_LISTEN,
	K_RING,
	K_IN,	   /* we connected: we receive */
	K_OUT,	   /* the peer connected and proved the key: we send */
	K_PENDING, /* the peer connected, its handshake not done */
};

enum sync_in_state {
	IN_DOWN,
	IN_CONNECTING,
	IN_HANDSHAKE,
	IN_DUMP,
	IN_SYNCED
};

struct sync_conn {
	struct loop_ev ev; /* first: epoll data points here */
	enum sync_conn_kind kind;
	int fd;
	struct sync_peer *peer;
	__u8 *buf; /* bytes received, not yet a whole message; or bytes to send */
	size_t len, off, cap;
	struct sync_session ses; /* K_IN: checks the peer's tags; K_OUT: tags ours */
};

/* A rate-limited log line's state: when it was last said, and how often since. */
struct sync_ratelog {
	__u64 at;
	__u64 suppressed;
};

struct sync_peer {
	struct sockaddr_storage addr;
	socklen_t alen;
	char name[INET6_ADDRSTRLEN + 8];
	/* receiving: the connection we open */
	struct sync_conn in;
	enum sync_in_state in_state;
	__u64 retry_at, backoff_ms, handshake_until;
	struct sync_key in_key; /* the key this handshake proves */
	__u8 nonce_c[SYNC_NONCE_LEN];
	__u64 dump_entries; /* entries in the dump being received (or the last one) */
	__u64 received, sent;
	char error[64]; /* why the receiving connection last failed ("": it has not) */
	/* sending: the connection the peer opened to us */
	struct sync_conn out;
	bool dumping;			 /* its dump is being sent */
	__u64 dump_at;			 /* the dump starts then (one per SYNC_DUMP_GAP_NS) */
	__u64 last_dump_ns;		 /* when the last one started */
	__u64 prev_dump_ns;		 /* when the one before it started */
	struct chlb_dp_conns_cursor cur; /* where the dump stands */
	__u64 dump_sent, dump_t0;
	struct sync_ratelog auth_log;
};

/* --sync-listen: our address, the one peers know us by (the source of our connections) */
struct sync_listen {
	struct sockaddr_storage addr;
	socklen_t alen; /* 0: not given */
	char name[INET6_ADDRSTRLEN + 8];
};

extern struct sync_listen sync_listen;
extern struct sync_peer sync_peers[SYNC_MAX_PEERS];
extern int sync_npeers;
extern struct sync_counters sync_c;

/* sync_conn.c */
void sync_conn_watch(struct sync_conn *c, unsigned int events, int op);
void sync_conn_close(struct sync_conn *c);
void sync_keepalive(int fd);
/* Say it now, or count it to say with the next one a minute later. true: say it. */
bool sync_ratelog(struct sync_ratelog *l, __u64 now);
/* A connection failed authentication: counted; logged at most once a minute per peer. */
void sync_auth_rejected(struct sync_peer *p, const char *side, const char *why);
/* Send a whole small message at once (handshakes, on an empty socket): 0 or -1. */
int sync_send_now(int fd, const void *b, size_t n);

/* sync_send.c */
void sync_send_accept(int lfd);
void sync_send_pending_event(struct sync_conn *c, unsigned int events);
void sync_send_out_event(struct sync_peer *p, unsigned int events);
void sync_send_ring_drain(void);
/* The ring buffer watched, no handshake under way. */
int sync_send_open(void);
/* Dumps due, handshakes timed out: the next deadline or 0. */
__u64 sync_send_tick(__u64 now);
void sync_send_close(void);
size_t sync_send_pending(void);

/* sync_recv.c */
void sync_recv_connect(struct sync_peer *p);
void sync_recv_event(struct sync_peer *p, unsigned int events);
/* Reconnects and handshake timeouts: the next deadline or 0. */
__u64 sync_recv_tick(struct sync_peer *p, __u64 now);

/* sync_apply.c */
/* An entry a peer sent: applied, or waiting (its flow held) for its service or backend. */
void sync_apply_entry(const struct sync_entry *e, __u64 coarse_now);
/* The waiting entries are retried: a pass, a slice per tick. */
void sync_apply_retry(void);
/* A slice of the retry pass, expiries: the next deadline or 0. */
__u64 sync_apply_tick(__u64 now);
size_t sync_apply_waiting(void);
/* Is a retry after a configuration change still going? */
bool sync_apply_retrying(void);
void sync_apply_close(void);

#endif /* CHLBD_SYNC_INT_H */
