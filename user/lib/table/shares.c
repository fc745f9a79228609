// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Exact keyspace shares of a ring and the balance of shares: what
 * `chlbctl sim` reports and what `vnodes auto` picks K by (one computation
 * for both; outside sim.c so chlbd and the fuzzer link it without the
 * planner).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table/vnodes_auto.h"

#define KEYSPACE 4294967296.0

int chlb_ring_shares(const struct chlb_table *t, double *share, __u32 nslots)
{
	__u32 n = chlb_table_header(t)->count, *h, *sl;
	__u64 prev = 0;

	memset(share, 0, nslots * sizeof(*share));
	if (!n)
		return 0;
	h = malloc((size_t)n * sizeof(*h));
	sl = malloc((size_t)n * sizeof(*sl));
	if (!h || !sl) {
		free(h);
		free(sl);
		return -ENOMEM;
	}
	if (chlb_ring_vnodes(t, h, sl)) {
		free(h);
		free(sl);
		return -EINVAL;
	}
	for (__u32 i = 0; i < n; i++) {
		/* equal hashes: the first in ring order owns the arc, the rest get 0 */
		__u64 end = (__u64)h[i] + 1, len = end - prev;

		if (sl[i] < nslots)
			share[sl[i]] += len / KEYSPACE;
		prev = end;
	}
	if (sl[0] < nslots) /* the wrap: (hash[n-1], 2^32) goes to vnode 0 */
		share[sl[0]] += (KEYSPACE - prev) / KEYSPACE;
	free(h);
	free(sl);
	return 0;
}

void chlb_sim_balance(const struct chlb_table_be *be, __u32 n, const double *share, double *mx,
		      double *mn)
{
	double total = 0;

	for (__u32 i = 0; i < n; i++)
		total += be[i].weight;
	*mx = 0;
	*mn = 1e300;
	for (__u32 i = 0; i < n; i++) {
		double rel;

		if (!be[i].weight)
			continue;
		rel = share[be[i].slot] / (be[i].weight / total);
		if (rel > *mx)
			*mx = rel;
		if (rel < *mn)
			*mn = rel;
	}
	if (*mn > 1e299)
		*mn = 0;
}
