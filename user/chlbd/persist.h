/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The state file written on a second thread while the data plane
 * converges (commit.c): the swap does not wait for the disk, the reply
 * waits for both.
 */
#ifndef CHLBD_PERSIST_H
#define CHLBD_PERSIST_H

#include <pthread.h>
#include <stdbool.h>
#include "config/state.h"

struct chlbd_persist {
	struct chlb_state_pending pend;
	/*
	 * What the thread writes: the caller's state itself, not a copy (~0.3
	 * ms at 3,000 backends, before every swap). Its services must not
	 * change until chlbd_persist_settle() or chlbd_persist_wait().
	 */
	struct chlb_state snap;
	pthread_t th;
	bool threaded; /* th runs (else staged already, on the caller's thread) */
	int rc;
	__u64 t0, staged_ns;
	char err[CHLB_ERR_MAX * 2];
};

/*
 * Checks that path's directory can take st (chlb_state_check(): nothing
 * touched, no disk waited for), then stages st (formatted, written,
 * fsynced as path.tmp) on a thread of its own, reading st in place: st's
 * services stay as they are until chlbd_persist_settle() (moving the
 * struct itself is fine). 0, or -errno with err and nothing left behind.
 */
int chlbd_persist_start(struct chlbd_persist *w, const struct chlb_state *st, const char *path,
			char *err, size_t errlen);

/* Waits until the thread no longer reads st (its result kept for chlbd_persist_wait()). */
void chlbd_persist_settle(struct chlbd_persist *w);
/*
 * Waits for the staging: 0 and w->pend ready for chlb_state_publish() or
 * chlb_state_abort(), or its error (in err) with everything undone.
 */
int chlbd_persist_wait(struct chlbd_persist *w, char *err, size_t errlen);

#endif
