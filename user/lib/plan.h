/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --dry-run: what a change would do, without doing it. For every service
 * the change touches, both tables are built with the real builders and
 * 2^18 uniformly spread flow hashes are decided in each: the share of the
 * keyspace each backend holds before and after, and the share that moves.
 */
#ifndef CHLB_PLAN_H
#define CHLB_PLAN_H

#include <json-c/json.h>
#include "state.h"

#define CHLB_PLAN_SAMPLES (1u << 18)

/* {"dry_run": true, "services": [{service, action, moved, backends: [...]}]} */
json_object *chlb_plan(const struct chlb_state *cur, const struct chlb_state *next);

#endif /* CHLB_PLAN_H */
