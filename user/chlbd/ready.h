/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Readiness (docs/operations.md, "Readiness: when a starting LB is
 * announced"): whether this chlbd may be announced to the routers. A
 * starting chlbd is not ready until its configuration is loaded (-c, a
 * non-empty state file, or the first `apply` or SIGHUP that commits), every
 * --sync-peer is synced or in error and the entries that waited for a
 * configured backend are applied (sync_ready()), and a settle time
 * (--ready-settle-ms) has passed since both first held. Changes typed one
 * statement at a time do not load a configuration: an operator building a
 * host by hand is never announced halfway; `chlbctl route announce` forces
 * readiness when done. Once ready, a chlbd stays ready for the life of the
 * process (like keepalived's and BIRD's start-up gating: a peer lost later
 * says nothing about this host's data plane, and withdrawing it would move
 * every flow it carries).
 *
 * Route export (routes.c) adds routes only when ready; the event loop
 * re-evaluates (chlbd_routes_tick() -> chlbd_ready_tick()) and syncs the
 * routes when it becomes so.
 */
#ifndef CHLBD_READY_H
#define CHLBD_READY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define CHLBD_READY_SETTLE_MS  2000 /* --ready-settle-ms default */
#define CHLBD_READY_SETTLE_MAX 3600000

/* How the configuration came to be loaded. */
enum chlbd_loaded_by {
	CHLBD_LOADED_CONFIG, /* -c FILE at start */
	CHLBD_LOADED_STATE,  /* a non-empty state file at start */
	CHLBD_LOADED_APPLY,  /* `chlbctl apply` committed */
	CHLBD_LOADED_SIGHUP, /* SIGHUP converged to -c FILE */
};

/* --ready-settle-ms (main.c, before the start). */
void chlbd_ready_set_settle_ms(__u64 ms);

/* The configuration is loaded (the first call counts; later ones are no-ops). */
void chlbd_ready_loaded(enum chlbd_loaded_by by);

/*
 * Loaded at start (-c or the state file) on an adopted data plane: the
 * routes a previous chlbd left (killed, crashed) are kept while this one is
 * not ready yet, and no other is added (routes.c); its program forwarded
 * all along, so withdrawing them would only move flows away and back.
 */
bool chlbd_ready_keeps_adopted(void);

/* `chlbctl route announce`: ready now, whatever it waited for (the caller syncs the routes). */
void chlbd_ready_force(void);

/* Is this chlbd ready? When not, *why (static text) says what it waits for. */
bool chlbd_ready(const char **why);
/* The same without the why (metrics, stats). */
bool chlbd_is_ready(void);

/*
 * From the event loop (chlbd_routes_tick()), every iteration: records when
 * the conditions first held; once the settle time has passed, becomes ready
 * (logged, systemd told) and sets *became: the caller syncs the routes. The
 * next deadline (ns) or 0.
 */
__u64 chlbd_ready_tick(__u64 now, bool *became);

/*
 * systemd's STATUS= text: "serving N services, ready" or "serving N
 * services; not announced: WHY" (without --route-table: "not ready"), in a
 * static buffer.
 */
const char *chlbd_ready_status(void);
/*
 * Sends STATUS= (sd_notify) when it changed since the last one sent, or
 * always after first ("READY=1\n" at start; NULL: none). sd_notify()'s
 * result (0 without NOTIFY_SOCKET or when nothing changed).
 */
int chlbd_ready_notify(const char *first);

#endif /* CHLBD_READY_H */
