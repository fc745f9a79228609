/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `vnodes auto [target B]`: the ring's vnode count K picked from the backend
 * set, the smallest of a fixed ladder whose balance (max over backends of
 * exact keyspace share / weight share, what `chlbctl sim` reports) meets the
 * target.
 *
 * A pure function of the set (names, weights) and the target: every LB host
 * with the same desired state picks the same K, whatever the history of
 * statements and across restarts, so their rings agree. That rules out
 * hysteresis (keeping the last K until the target is missed by a margin):
 * a restarted host, or one given the final set in one go, would pick the
 * smallest passing K where a long-running one kept a larger K, and the two
 * would send the same flows to different backends. The price is that K
 * may change on a change of the set near the boundary; a K change moves
 * about half the flows without connection entries (docs/algorithms.md has
 * the measured rates). Pin `vnodes K` (the K `service list` shows) where
 * that matters more than the balance.
 *
 * The ladder is powers of two, CHLB_VNODES_AUTO_MIN..MAX, cut at the
 * largest K whose ring fits CHLB_RING_MAX_VNODES; when no rung meets the
 * target the largest allowed is taken (met = false). The scan goes up from
 * the smallest rung: each build costs about twice the one before, so the
 * search costs about twice the chosen rung's build, and the answer is the
 * smallest passing rung even though balance is not monotonic in K (a
 * binary search would cost about the same and could skip it).
 */
#ifndef CHLB_TABLE_VNODES_AUTO_H
#define CHLB_TABLE_VNODES_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include "table/build.h"

#define CHLB_VNODES_AUTO_MIN	   16
#define CHLB_VNODES_AUTO_MAX	   4096
#define CHLB_VNODES_TARGET_DEFAULT 1050 /* thousandths: 1.05 */
#define CHLB_VNODES_TARGET_MIN	   1001
#define CHLB_VNODES_TARGET_MAX	   2000

struct chlb_vnodes_pick {
	__u32 vnodes;	/* the K picked */
	double balance; /* its balance max / fair (0: no backend with weight > 0) */
	bool met;	/* balance <= target; false: the largest rung the ring allows */
	__u32 tried;	/* rungs built */
	double ms;	/* wall time of the search */
};

/*
 * Exact keyspace shares of a ring table: share[slot] = the arcs its vnodes
 * own / 2^32 (slots < nslots; share zeroed first). A key goes to the first
 * vnode at or after it in ring order (chlb_ring_lookup), so vnode i owns
 * (hash[i-1], hash[i]] and vnode 0 the wrap too: O(vnodes), no lookups.
 * 0 or -errno.
 */
int chlb_ring_shares(const struct chlb_table *t, double *share, __u32 nslots);

/*
 * The balance of shares: max and min over be[0..n) with weight > 0 of
 * share[slot] / (weight / total weight); both 0 when none has a weight.
 */
void chlb_sim_balance(const struct chlb_table_be *be, __u32 n, const double *share, double *mx,
		      double *mn);

/* Vnodes of a ring of be[0..n) at K per weight 100, as the ring builder counts them. */
__u64 chlb_ring_total_vnodes(const struct chlb_table_be *be, __u32 n, __u32 k);

/*
 * Picks K for be[0..n) (slots ignored) and target (thousandths, 0 =
 * CHLB_VNODES_TARGET_DEFAULT). 0, or -errno with a message in err.
 */
int chlb_vnodes_pick(const struct chlb_table_be *be, __u32 n, __u32 target,
		     struct chlb_vnodes_pick *p, char *err, size_t errlen);

#endif /* CHLB_TABLE_VNODES_AUTO_H */
