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

/*
 * Converges the data plane to x (consumed) and makes it D.state: it describes
 * what serves even after a partial failure. health_apply_desired()'s result.
 */
static int serve(struct chlb_state *x, char *err, size_t errlen)
{
	int r = health_apply_desired(&D.state, x, err, errlen);

	chlb_state_free(&D.state);
	D.state = *x;
	chlb_state_init(x);
	return r;
}

/*
 * Durability and atomicity: a change is written, then applied, then
 * published, so it is durable before it is acknowledged, or not applied at
 * all:
 *   1. capacity: every backend slot and service id the change needs is
 *      counted first (chlb_rt_capacity()): none missing halfway;
 *   2. write: the new state goes to STATE.tmp (page cache). This is the
 *      step that fails in practice (a full or read-only state directory):
 *      it fails before anything is touched, so no flow moves and no backend
 *      slot changes generation, which an apply undone afterwards would do;
 *   3. apply: the data plane converges (the swap does not wait for the disk)
 *      to next's effective form: its weights as health checks have them
 *      (health/health_apply.c), so a commit and the checker never fight;
 *   4. publish: STATE.tmp fsynced and renamed over STATE (STATE kept as
 *      STATE.prev), directory fsynced. Only then is the change acknowledged.
 * If 3 or 4 fails, the data plane is put back to what it was (an apply of
 * the old state) and STATE.tmp removed: the file and the data plane agree
 * on the old state. A crash before 4 leaves STATE as it was: the next
 * chlbd adopts the pinned maps and converges them back to it (the change
 * was never acknowledged); a crash after 4 leaves the new state in both.
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
	int r = serve(next, err, errlen);

	if (chlb_state_save_file(&D.state, D.state_path, perr, sizeof(perr)))
		pr_err("state not written back at start (what serves came from it or from -c): %s",
		       perr);
	return r;
}

/* After a failed step 3 or 4: converge back to `old` (consumed); 0 if all of it serves. */
static int roll_back(struct chlb_state *old)
{
	char err[CHLB_ERR_MAX * 2];
	int r = serve(old, err, sizeof(err));

	if (r)
		pr_err("rolling back: %s", err);
	return r;
}

int chlbd_check_capacity(const struct chlb_state *next, char *err, size_t errlen)
{
	return chlb_rt_capacity(D.rt, next, err, errlen);
}

int chlbd_commit(struct chlb_state *next, char *err, size_t errlen)
{
	char perr[CHLB_ERR_MAX * 2];
	struct chlb_state_pending pend;
	struct chlb_state old;
	int r;

	if (D.rt->defer_adopted)
		return commit_start(next, err, errlen);
	if (chlbd_check_capacity(next, perr, sizeof(perr))) {
		chlb_state_free(next);
		snprintf(err, errlen, "%s; nothing changed", perr);
		return -1;
	}
	if (chlb_state_prepare(next, D.state_path, &pend, perr, sizeof(perr))) {
		chlb_state_free(next);
		pr_err("state not persisted: %s; nothing changed", perr);
		snprintf(err, errlen, "%s: nothing changed", perr);
		return -1;
	}
	if (chlb_state_copy(&old, &D.state)) {
		chlb_state_abort(&pend);
		chlb_state_free(next);
		snprintf(err, errlen, "out of memory; nothing changed");
		return -1;
	}
	D.rt->yield =
	    D.answer_readonly; /* read-only requests are answered meanwhile (ctl/ctl_server.c) */
	r = serve(next, perr, sizeof(perr));
	D.rt->yield = NULL;
	if (!r && chlb_state_publish(&pend, perr, sizeof(perr))) {
		pr_err("state not persisted: %s; rolling back", perr);
		r = -1;
	} else if (r) {
		chlb_state_abort(&pend);
	}
	if (r) {
		bool mixed = roll_back(&old) != 0;

		snprintf(err, errlen, "%s; %s", perr,
			 mixed ? "rolling back failed too: see the log"
			       : "rolled back: nothing changed");
		/* neither old nor new serves: the file says what does, if it can */
		if (mixed && chlb_state_save_file(&D.state, D.state_path, perr, sizeof(perr)))
			pr_err("state not persisted after a failed roll back: %s", perr);
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
