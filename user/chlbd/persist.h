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
	struct chlb_state snap; /* the thread's own copy of what it writes */
	pthread_t th;
	bool threaded; /* th runs (else staged already, on the caller's thread) */
	int rc;
	__u64 t0, staged_ns;
	char err[CHLB_ERR_MAX * 2];
};

/*
 * Checks that path's directory can take st (chlb_state_check(): nothing
 * touched, no disk waited for), then stages st (formatted, written,
 * fsynced as path.tmp) on a thread of its own. 0, or -errno with err and
 * nothing left behind.
 */
int chlbd_persist_start(struct chlbd_persist *w, const struct chlb_state *st, const char *path,
			char *err, size_t errlen);

/*
 * Waits for the staging: 0 and w->pend ready for chlb_state_publish() or
 * chlb_state_abort(), or its error (in err) with everything undone.
 */
int chlbd_persist_wait(struct chlbd_persist *w, char *err, size_t errlen);

#endif
