// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Committing a new desired state: the one place a change is made durable
 * and applied (chlbd_commit()), whoever asked for it: a request
 * (ctl/ctl_handlers.c), SIGHUP (loop.c), the start (main.c).
 */
#include <stdio.h>
#include "chlbd.h"
#include "sync/sync.h"
#include "health/health.h"
#include "ready.h"
#include "routes.h"
#include "persist.h"

/*
 * Converges the data plane to x (consumed) and makes it D.state: it describes
 * what serves even after a partial failure. The state it replaces goes to
 * *was (moved, not copied: 0.2-0.3 ms at 3,000 backends), or is freed.
 * health_apply_desired()'s result.
 */
static int serve(struct chlb_state *x, struct chlb_state *was, char *err, size_t errlen)
{
	int r = health_apply_desired(&D.state, x, err, errlen);

	if (was)
		*was = D.state;
	else
		chlb_state_free(&D.state);
	D.state = *x;
	chlb_state_init(x);
	return r;
}

/*
 * Durability and atomicity: a change is durable before it is acknowledged,
 * or not applied at all; the swap waits for no disk:
 *   1. capacity: every backend slot and service id the change needs is
 *      counted first (chlb_rt_capacity()): none missing halfway;
 *   2. check: the state directory can take the new state: not read-only,
 *      writable, room for an upper bound on its text (chlb_state_check():
 *      mount flags and the superblock's counters, nothing written, no
 *      disk waited for). A full or read-only directory, what fails in
 *      practice, fails here, before anything is touched: no flow moves and
 *      no backend slot changes generation, as an apply undone afterwards
 *      would make them;
 *   3. stage, on a second thread (persist.c), while 4 runs: the new state
 *      (read in place: a failed apply settles the thread before it puts
 *      services back) formatted into STATE.tmp, written, fsynced;
 *   4. apply: the data plane converges to next's effective form: its
 *      weights as health checks have them (health/health_apply.c), so a
 *      commit and the checker never fight. The swap happens here: it waits
 *      neither for the format nor for the disk;
 *   5. publish, once 3 and 4 are both done: STATE kept as STATE.prev,
 *      STATE.tmp renamed over STATE, the directory fsynced. Only then is
 *      the change acknowledged.
 * If 3, 4 or 5 fails (3 only if the file system fills or fails between
 * 2 and 3), the data plane is put back to what it was (an apply of the old
 * state) and STATE.tmp removed: the file and the data plane agree on the
 * old state. A crash before the rename in 5 leaves STATE as it was, though
 * the new tables may have served meanwhile: the next chlbd adopts the
 * pinned maps and converges them back to STATE (the change was never
 * acknowledged, so its sender knows no more than that it may or may not
 * have been made); a crash after it leaves the new state in both.
 *
 * At start (main.c, adopted services deferred) the state comes from the
 * state file or -c FILE, which a restart reads again: it is applied even
 * if it cannot be written back, and the failure is logged.
 *
 * The new deadlines a change brings (history retirement, slot grace) are
 * taken up by the event loop, which re-arms its timer after every batch of
 * events (loop.c), the start included.
 */
static int commit_start(struct chlb_state *next, char *err, size_t errlen)
{
	char perr[CHLB_ERR_MAX * 2];
	int r = serve(next, NULL, err, errlen);

	if (chlb_state_save_file(&D.state, D.state_path, perr, sizeof(perr)))
		pr_err("state not written back at start (what serves came from it or from -c): %s",
		       perr);
	return r;
}

/* After a failed step 3 or 4: converge back to `old` (consumed); 0 if all of it serves. */
static int roll_back(struct chlb_state *old)
{
	char err[CHLB_ERR_MAX * 2];
	int r = serve(old, NULL, err, sizeof(err));

	if (r)
		pr_err("rolling back: %s", err);
	return r;
}

/* The staging under way (its thread reads the new state in place) and its settle hook. */
static struct chlbd_persist *staging;

static void settle_staging(void)
{
	chlbd_persist_settle(staging);
}

int chlbd_check_capacity(const struct chlb_state *next, char *err, size_t errlen)
{
	return chlb_rt_capacity(D.rt, &D.state, next, err, errlen);
}

int chlbd_commit(struct chlb_state *next, char *err, size_t errlen)
{
	char perr[CHLB_ERR_MAX * 2], serr[CHLB_ERR_MAX * 2];
	struct chlbd_persist w;
	struct chlb_state old;
	__u64 t0 = chlb_now_ns(), t_served, t_staged;
	int r, rs;

	if (D.rt->defer_adopted)
		return commit_start(next, err, errlen);
	r = chlbd_check_capacity(next, perr, sizeof(perr));
	if (r) {
		chlb_state_free(next);
		snprintf(err, errlen, "%s; nothing changed", perr);
		return r;
	}
	r = chlbd_persist_start(&w, next, D.state_path, perr, sizeof(perr));
	if (r) {
		chlb_state_free(next);
		pr_err("state not persisted: %s; nothing changed", perr);
		snprintf(err, errlen, "%s: nothing changed", perr);
		return r;
	}
	D.rt->yield =
	    D.answer_readonly; /* read-only requests are answered meanwhile (ctl/ctl_server.c) */
	staging = &w;
	D.rt->settle = settle_staging; /* a failed apply rewrites next: not while w reads it */
	r = serve(next, &old, perr, sizeof(perr)); /* old: what served, for a roll back */
	D.rt->yield = NULL;
	D.rt->settle = NULL;
	staging = NULL;
	t_served = chlb_now_ns();
	rs = chlbd_persist_wait(&w, serr, sizeof(serr));
	t_staged = chlb_now_ns();
	if (rs) {
		if (!r) {
			pr_err("state not persisted: %s; rolling back", serr);
			snprintf(perr, sizeof(perr), "%s", serr);
		}
		r = -1;
	} else if (!r && chlb_state_publish(&w.pend, perr, sizeof(perr))) {
		pr_err("state not persisted: %s; rolling back", perr);
		r = -1;
	} else if (r) {
		chlb_state_abort(&w.pend);
	}
	if (r) {
		bool mixed = roll_back(&old) != 0;

		snprintf(err, errlen, "%s; %s", perr,
			 mixed ? "rolling back failed too: see the log"
			       : "rolled back: nothing changed");
		/* neither old nor new serves: the file says what does, if it can */
		if (mixed && chlb_state_save_file(&D.state, D.state_path, perr, sizeof(perr)))
			pr_err("state not persisted after a failed roll back: %s", perr);
	} else {
		/* tests/bench/control.sh reads this split */
		pr_info("committed: applied %.3f ms, durable %.3f ms (staged on a second thread "
			"%.3f, waited for it %.3f, published %.3f)",
			(double)(t_served - t0) / 1e6, (double)(chlb_now_ns() - t0) / 1e6,
			(double)w.staged_ns / 1e6, (double)(t_staged - t_served) / 1e6,
			(double)(chlb_now_ns() - t_staged) / 1e6);
	}
	chlb_state_free(&old);
	/* whatever serves now (new, old, or a mix): its VIPs are routed, and no other */
	chlbd_routes_sync();
	/* peers' entries that waited for a service or backend this commit may have added */
	sync_config_changed();
	/* `systemctl status`: what serves now, and whether announced (no-op without systemd) */
	chlbd_ready_notify(NULL);
	return r;
}
