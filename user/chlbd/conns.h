/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection table, read for operators: `conns` and the per-backend
 * "conns" of `backend list` are each one walk of the table
 * (user/lib/dp/dp_conns.c; its cost: docs/performance.md), during which
 * chlbd's event loop answers nothing else: deliberate operator commands.
 * The table pressure in `stats` and the conntrack gauges of /metrics come
 * from a background walk instead (conns_tally_step()), so neither costs
 * more than O(services + backends) however full the table is.
 */
#ifndef CHLBD_CONNS_H
#define CHLBD_CONNS_H

#include "chlbd.h"
#include "engine/conn_tally.h"

/* One walk of the connection table into t (chlb_ct_tally_free() it). 0 or -errno. */
int conns_tally(struct chlb_ct_tally *t);
/* Its two steps: an empty tally of chlbd's state and timeouts, then the walk (t kept on failure). */
int conns_tally_init(struct chlb_ct_tally *t);
int conns_tally_walk(struct chlb_ct_tally *t);

/*
 * The background tally: a pass over the table a batch (CHLB_DP_CONNS_BATCH
 * entries, about a millisecond) per step, from the event loop's timer,
 * requests answered between steps. A pass starts 5 s after the previous
 * one ended, sooner after a change (chlb_rt.changes); a `conns` walk
 * counts as a pass too.
 */
struct conns_pass {
	struct chlb_state st;	    /* D.state when the pass started (a copy) */
	struct chlb_ct_tally t;	    /* the pass's counts, against st */
	__u64 started_ns, ended_ns; /* CLOCK_MONOTONIC */
	__u64 inserts;		    /* ct_insert when it ended */
	bool have_inserts;
	__u32 steps;  /* batches it took */
	__u64 cpu_ns; /* chlbd's CPU time in them */
};

/* From the loop's timer: one step when a pass is due or going on; the next deadline. */
__u64 conns_tally_step(__u64 now);
/*
 * The last complete pass, or NULL before the first. On a table one step
 * covers cheaply (the last pass: one batch, under 5 ms of CPU), the pass is run
 * here first, so a small table's counts are current; otherwise no walk.
 */
const struct conns_pass *conns_tally_last(void);
/* Seconds since p ended. */
double conns_pass_age_s(const struct conns_pass *p);
/* The index in p->st of D.state.svc[i] (same VIP), or -1: not in the pass. */
int conns_pass_svc(const struct conns_pass *p, __u32 i);
/*
 * The pass's counts for D.state.svc[i].be[j] (in p's service ps, slot its
 * slot now), or NULL: not in the pass.
 */
const struct chlb_ct_be *conns_pass_be(const struct conns_pass *p, int ps, __u32 i, __u32 j,
				       int slot);
/* A complete walk of D.state (started at started_ns) becomes the last pass; t is emptied. */
void conns_tally_adopt(struct chlb_ct_tally *t, __u64 started_ns);

/*
 * `stats`: the table's pressure into o: ct_size, ct_inserts (the ct_insert
 * counter, given), ct_memory_bytes, ct_bytes_per_entry; from the last
 * background pass (none before the first): ct_entries, ct_evictions
 * (inserts when it ended - its entries) and ct_tally_age_s. Nothing is
 * added when the table can't be read.
 */
void conns_stats(json_object *o, __u64 inserts);

#endif /* CHLBD_CONNS_H */
