// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Staging the state file on a second thread (persist.h): formatting,
 * writing and fsyncing STATE.tmp cost 1-3 ms on a quiet host and tens of
 * ms when the file system's journal is busy; run by the commit's own
 * thread they came before every swap. The thread reads the committed
 * state in place (the commit changes it only after chlbd_persist_settle()),
 * writes only the pending file (chlb_state_stage()), and logs nothing.
 */
#include <stdio.h>
#include <string.h>
#include "chlbd.h"
#include "persist.h"

static void *stage(void *arg)
{
	struct chlbd_persist *w = arg;

	w->rc = chlb_state_stage(&w->snap, &w->pend, w->err, sizeof(w->err));
	w->staged_ns = chlb_now_ns() - w->t0;
	return NULL;
}

int chlbd_persist_start(struct chlbd_persist *w, const struct chlb_state *st, const char *path,
			char *err, size_t errlen)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->t0 = chlb_now_ns();
	rc = chlb_state_check(st, path, &w->pend, err, errlen);
	if (rc)
		return rc;
	w->snap = *st; /* its services, not a copy: the apply moves the struct only */
	if (!pthread_create(&w->th, NULL, stage, w)) {
		w->threaded = true;
		return 0;
	}
	stage(w); /* no thread: the same steps, before the apply */
	return 0;
}

void chlbd_persist_settle(struct chlbd_persist *w)
{
	if (w->threaded)
		pthread_join(w->th, NULL);
	w->threaded = false;
	chlb_state_init(&w->snap);
}

int chlbd_persist_wait(struct chlbd_persist *w, char *err, size_t errlen)
{
	chlbd_persist_settle(w);
	if (w->rc) {
		chlb_state_abort(&w->pend);
		snprintf(err, errlen, "%s", w->err);
	}
	return w->rc;
}
