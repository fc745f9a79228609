// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Readiness (ready.h). Three conditions, then a settle time, then ready for
 * good. chlbd_ready() only reads: what becomes ready is chlbd_ready_tick(),
 * whose caller (chlbd_routes_tick()) syncs the routes in the same step, and
 * chlbd_ready_force(), whose caller does too; so "ready" in a reply means
 * the routes are in the table. Route export calls this file, never the
 * other way round (no cycle: scripts/check_layers.sh).
 */
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include "chlbd.h"
#include "ready.h"
#include "sync/sync.h"

#define EVAL_NS 100000000ull /* while loaded and waiting for sync: look again after 100 ms */

static __u64 settle_ns = CHLBD_READY_SETTLE_MS * 1000000ull;
static bool loaded, at_start, ready;
static __u64 since;	/* when loaded and sync first held together (ns), 0: not yet */
static __u64 next_eval; /* chlbd_ready_tick(): the next look (0: at the next call) */

static const char *const loaded_name[] = {
	[CHLBD_LOADED_CONFIG] = "the config file (-c)",
	[CHLBD_LOADED_STATE] = "the state file",
	[CHLBD_LOADED_APPLY] = "apply",
	[CHLBD_LOADED_SIGHUP] = "SIGHUP",
};

void chlbd_ready_set_settle_ms(__u64 ms)
{
	settle_ns = ms * 1000000ull;
}

void chlbd_ready_loaded(enum chlbd_loaded_by by)
{
	if (loaded)
		return;
	loaded = true;
	at_start = by == CHLBD_LOADED_CONFIG || by == CHLBD_LOADED_STATE;
	next_eval = 0;
	if (!ready)
		pr_info("readiness: configuration loaded from %s; ready once sync is done and "
			"%llu ms have passed",
			loaded_name[by], (unsigned long long)(settle_ns / 1000000));
}

bool chlbd_ready_keeps_adopted(void)
{
	return at_start && D.dp && chlb_dp_adopted(D.dp);
}

/* ready: logged, systemd told (the routes are the caller's: routes.c) */
static void become_ready(const char *how)
{
	ready = true;
	pr_info("readiness: ready (%s)%s", how,
		D.route_table && !D.routes_withdrawn ? ": the VIP routes may be announced" : "");
	chlbd_ready_notify(NULL);
}

void chlbd_ready_force(void)
{
	if (!ready)
		become_ready("forced by `route announce`");
}

/*
 * What the conditions say at now: 1 when loaded and sync hold and the
 * settle time has passed since they first held together; else 0 and *why.
 * record: note that first time (the tick only). A sync that stops holding
 * while settling does not start the settle time again (it counts from
 * "first"), but readiness waits for it to hold again. status: the settle
 * text without the time left (systemd's STATUS= changes only when the
 * reason does).
 */
static int evaluate(__u64 now, bool record, bool status, const char **why)
{
	static char buf[96];
	const char *swhy = "";
	__u64 start = since;

	if (!loaded) {
		*why = "configuration not loaded: apply a config or run `chlbctl route announce`";
		return 0;
	}
	if (!sync_ready(&swhy)) {
		*why = swhy && *swhy ? swhy : "waiting for sync";
		return 0;
	}
	if (!start) {
		start = now ? now : 1;
		if (record)
			since = start;
	}
	if (now >= start + settle_ns)
		return 1;
	if (status)
		snprintf(buf, sizeof(buf), "settling (%llu ms)",
			 (unsigned long long)(settle_ns / 1000000));
	else
		snprintf(buf, sizeof(buf), "settling (%.1f s left)",
			 (double)(start + settle_ns - now) / 1e9);
	*why = buf;
	return 0;
}

bool chlbd_ready(const char **why)
{
	*why = "";
	if (ready)
		return true;
	/* the settle time may be over while the tick has not run yet: still settling */
	if (evaluate(chlb_now_ns(), false, false, why))
		*why = "settling (0.0 s left)";
	return false;
}

bool chlbd_is_ready(void)
{
	return ready;
}

__u64 chlbd_ready_tick(__u64 now, bool *became)
{
	const char *why;

	*became = false;
	if (ready)
		return 0;
	if (now < next_eval)
		return next_eval;
	if (evaluate(now, true, false, &why)) {
		become_ready(D.route_table ? "configuration loaded, sync done, settled"
					   : "configuration loaded, sync done, settled; no "
					     "--route-table: nothing to announce");
		*became = true;
		return 0;
	}
	chlbd_ready_notify(NULL); /* the reason may have changed */
	if (!loaded)
		return 0; /* only a request or SIGHUP loads it, and sets next_eval to 0 */
	next_eval = now + EVAL_NS;
	if (since && since + settle_ns < next_eval)
		next_eval = since + settle_ns;
	return next_eval;
}

const char *chlbd_ready_status(void)
{
	static char buf[256];
	const char *why = "";

	if (ready)
		snprintf(buf, sizeof(buf), "serving %u services, ready", D.state.nsvc);
	else {
		if (evaluate(chlb_now_ns(), false, true, &why))
			why = "settling";
		snprintf(buf, sizeof(buf), "serving %u services; not %s: %s", D.state.nsvc,
			 D.route_table ? "announced" : "ready", why);
	}
	return buf;
}

int chlbd_ready_notify(const char *first)
{
	static char sent[256];
	const char *s = chlbd_ready_status();

	if (!first && !strcmp(s, sent))
		return 0;
	snprintf(sent, sizeof(sent), "%s", s);
	return sd_notifyf(0, "%sSTATUS=%s", first ? first : "", s);
}
