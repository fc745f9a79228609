/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Readiness (docs/operations.md, "Readiness"): whether this chlbd may be
 * announced to the routers. A starting chlbd is not ready until its
 * configuration is loaded (-c, the state file, or the first `apply`), every
 * --sync-peer is synced or in error, the entries that waited for a
 * configured backend are applied, and a short settle time has passed.
 * `chlbctl route announce` forces it. Once ready, a chlbd stays ready.
 */
#ifndef CHLBD_READY_H
#define CHLBD_READY_H

#include <stdbool.h>
#include <linux/types.h>

/* Is this chlbd ready? When not, *why (static text) says what it waits for. */
bool chlbd_ready(const char **why);

#endif /* CHLBD_READY_H */
