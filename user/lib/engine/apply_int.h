/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by apply.c (services, views, timers) and apply_be.c (backend slots). */
#ifndef CHLB_APPLY_INT_H
#define CHLB_APPLY_INT_H

#include "engine/apply.h"

#define rt_log(rt, lvl, ...)                         \
	do {                                         \
		if ((rt)->log)                       \
			(rt)->log(lvl, __VA_ARGS__); \
	} while (0)

/* Slot of addr in service svc (LIVE or DEAD), or -1; an unowned adopted slot stands for any. */
int chlb_be_find(const struct chlb_rt *rt, int svc, const struct chlb_addr *a);
/* Enter slot under its address in the index. */
void chlb_be_link(struct chlb_rt *rt, __u32 slot);
/* Write the slot from its bookkeeping (see apply_be.c). */
int chlb_be_write(struct chlb_rt *rt, __u32 slot);
/*
 * Slot for addr in service svc, LIVE: the one the pair holds (a DEAD one
 * comes back with gen + 1), else a free one (gen + 1); either way a new
 * occupant starts with zeroed counters. -ENOSPC when none is free, or the
 * write's -errno.
 */
int chlb_be_acquire(struct chlb_rt *rt, int svc, const struct chlb_addr *a, __u64 now);
/* A round of next-hop re-resolution, at most once a second. */
void chlb_be_refresh_nexthops(struct chlb_rt *rt, __u64 now);

#endif /* CHLB_APPLY_INT_H */
