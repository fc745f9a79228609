/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control socket (ctl/): the Unix socket chlbctl talks to, one request
 * per connection (ctl_server.c), its requests dispatched to their handlers
 * (ctl_handlers.c), and the JSON replies (ctl_reply.c builds every one; the
 * read-only requests' in ctl_read_replies.c and ctl_conns_reply.c). The
 * daemon's core (loop.c, main.c) drives it; health/, sync/ and metrics/
 * never include this header (scripts/check_layers.sh): they report through
 * their own headers, and ctl/ asks them.
 */
#ifndef CHLBD_CTL_H
#define CHLBD_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include <linux/types.h>
#include "config/grammar.h"

/* ctl_server.c */
int server_open(const char *path);
void server_accept(void);
void server_client_event(void *client, unsigned int events);
void server_expire(__u64 now);
void server_close_all(void);
/*
 * During a long change (chlb_rt->yield): accept clients and answer those
 * whose request is read-only (chlbd_request_read_only()); any other request
 * waits until the change is done (server_run_deferred(), from the loop).
 */
void server_poll_readonly(void);
void server_run_deferred(void);
/* Did a poll run since the last call? (the loop's batch of events is stale then) */
bool server_polled(void);

/* ctl_handlers.c: one request (text) -> one JSON reply (malloc'd); the handler table */
char *handle_request(const char *req, size_t len);
/* Does the request only read (a list, stats, which, conns, save, version, or an error)? */
bool chlbd_request_read_only(const char *req);

/* ctl_reply.c: every reply is built there */
/* {"error": msg} */
json_object *chlbd_jerr(const char *msg);
/*
 * {"error": msg, "kind": kind}: what chlbctl's exit code says. "usage": the
 * request is wrong whatever the state (grammar, a bad value: exit 2);
 * "conflict": it does not fit the state (no such service, already
 * there); "refused": it needs `force`; "failed": it could not be done. An
 * error without a kind counts as failed (exit 1).
 */
#define CHLBD_ERR_USAGE	   "usage"
#define CHLBD_ERR_CONFLICT "conflict"
#define CHLBD_ERR_REFUSED  "refused"
#define CHLBD_ERR_FAILED   "failed"
json_object *chlbd_jerr_kind(const char *msg, const char *kind);
/* o as one line of JSON text (malloc'd); consumes o */
char *chlbd_reply(json_object *o);
/* o as reply text with LIST, len bytes of JSON values, spliced in as "KEY":[LIST]; frees o. */
char *chlbd_reply_splice(json_object *o, const char *key, const char *list, size_t len);
/* chlbd_jerr_kind() as text (malloc'd) */
char *chlbd_error_reply(const char *msg, const char *kind);
/* "too many clients" as text, for a client refused without an allocation */
extern const char chlbd_busy_reply[];

/* ctl_read_replies.c: the replies of the read-only requests */
json_object *reply_services(const struct chlb_cmd *c);
json_object *reply_backends(const struct chlb_cmd *c);
json_object *reply_stats(const struct chlb_cmd *c); /* c->reset: zero first */
json_object *reply_which(const struct chlb_cmd *c);

/* ctl_conns_reply.c: `conns [VIP] [backend ADDR] [list]`, the reply text (malloc'd) */
char *reply_conns(const struct chlb_cmd *c);
/* conns ... persist: the client affinity entries (ctl_persist_reply.c) */
char *reply_persist(const struct chlb_cmd *c);
/*
 * Does affinity entry c (of service cfg, last used age ns ago) still send
 * new flows to its backend, as bpf/chlb_persist.h persist_follow decides?
 */
bool chlbd_persist_holds(const struct chlb_conn *c, const struct chlb_svc_cfg *cfg, __u64 age);

#endif /* CHLBD_CTL_H */
