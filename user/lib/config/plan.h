/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --dry-run: what a change would do, without doing it. For every service
 * the change touches, both tables are built with the real builders and
 * 2^18 uniformly spread flow hashes are decided in each: the share of the
 * keyspace each backend holds before and after, and the share that moves.
 *
 * A change of the hash fields (`hash 5tuple|src`) gives every flow another
 * hash, so the same hash in both tables would say "nothing moves" while
 * almost every new flow does. Then 2^18 random flows to the VIP are hashed
 * with the old fields into the old table and with the new fields into the
 * new one ("basis": "flows"); "moved" is the share of new flows that go to
 * another backend. Flows with a connection entry (every established TCP
 * connection) keep it: entries are found by the 5-tuple, not the hash.
 */
#ifndef CHLB_PLAN_H
#define CHLB_PLAN_H

#include <json-c/json.h>
#include "config/state.h"

#define CHLB_PLAN_SAMPLES (1u << 18)

/*
 * {"dry_run": true, "services": [{service, action, moved, basis, [hash_from,
 * hash_to], [established: what happens to running flows, for a change],
 * backends: [{address, before, after}], no_backend_after}]}
 */
json_object *chlb_plan(const struct chlb_state *cur, const struct chlb_state *next);

/* How many services and backends a change adds, changes, removes. */
struct chlb_diff_count {
	__u32 svc_add, svc_set, svc_del, be_add, be_set, be_del;
};

typedef void (*chlb_diff_fn)(void *ctx, const char *line);

/*
 * What converging cur to next changes, for the log: fn (may be NULL) gets
 * one line per change, in the grammar's words:
 *   service add VIP algo A ... (then its backends, one `backend add` each)
 *   service set VIP algo ring -> maglev, table 65537
 *   service del VIP (N backends)
 *   backend add VIP ADDR weight W | backend set VIP ADDR weight A -> B | backend del VIP ADDR
 * With base (the state the same source produced last time, or NULL), a
 * change that puts back what base had and cur no longer has ends with
 * " (undoes a change made since the last load)": someone changed it in
 * between (chlbctl, while chlbd runs with -c FILE).
 * Returns the number of lines; *n (optional) counts them by kind.
 */
__u32 chlb_state_diff(const struct chlb_state *cur, const struct chlb_state *next,
		      const struct chlb_state *base, chlb_diff_fn fn, void *ctx,
		      struct chlb_diff_count *n);

#endif /* CHLB_PLAN_H */
