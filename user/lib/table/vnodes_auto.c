// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* chlb_vnodes_pick(): the smallest ladder K whose ring meets a balance target (vnodes_auto.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table/vnodes_auto.h"
#include "base/err.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__u64 chlb_ring_total_vnodes(const struct chlb_table_be *be, __u32 n, __u32 k)
{
	__u64 total = 0;

	/* the ring builder's rule: round(K * w / 100), at least 1 when w > 0 */
	for (__u32 i = 0; i < n; i++) {
		__u64 v = ((__u64)k * be[i].weight + 50) / 100;

		total += be[i].weight && !v ? 1 : v;
	}
	return total;
}

/*
 * A rung that cannot pass is not built. A backend of weight share p with k
 * vnodes holds a share whose relative spread is about sqrt((1 - p) / k)
 * (a sum of k arcs); treating backends as independent normals, the chance
 * that none exceeds 1 + eps is prod Phi(eps / spread). Below 1e-6 the rung
 * is skipped: the normal's thin right tail overstates that chance (arcs
 * are skewed right), so a skipped rung is one that would fail. A pure
 * function of the set like the rest: hosts still agree.
 */
static bool hopeless(const struct chlb_table_be *be, __u32 n, __u32 k, double eps)
{
	double wsum = 0, logp = 0;

	for (__u32 i = 0; i < n; i++)
		wsum += be[i].weight;
	for (__u32 i = 0; i < n; i++) {
		double kv = ((__u64)k * be[i].weight + 50) / 100, p, x;

		if (!be[i].weight)
			continue;
		p = be[i].weight / wsum;
		kv = kv < 1 ? 1 : kv;
		if (p >= 1)
			continue; /* one backend: always 1.0 */
		x = eps / sqrt((1 - p) / kv);
		logp += log(0.5 * erfc(-x / M_SQRT2));
	}
	return logp < log(1e-6);
}

/* The balance of the ring of be[0..n) (slots 0..n-1) at K. */
static int ring_balance(const struct chlb_table_be *be, __u32 n, __u32 k, double *share,
			double *bal, char *err, size_t errlen)
{
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = k };
	struct chlb_table t = { 0 };
	double mn;
	int rc;

	rc = chlb_table_build(&spec, be, n, &t, err, errlen);
	if (rc)
		return rc;
	rc = chlb_ring_shares(&t, share, n);
	chlb_table_free(&t);
	if (rc)
		return chlb_syserr(err, errlen, rc, "ring shares");
	chlb_sim_balance(be, n, share, bal, &mn);
	return 0;
}

int chlb_vnodes_pick(const struct chlb_table_be *be, __u32 n, __u32 target,
		     struct chlb_vnodes_pick *p, char *err, size_t errlen)
{
	struct chlb_table_be *b = calloc(n ? n : 1, sizeof(*b));
	double *share = calloc(n ? n : 1, sizeof(*share)), t0 = now_ms(), goal;
	__u32 top = CHLB_VNODES_AUTO_MIN;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	p->vnodes = CHLB_VNODES_AUTO_MIN;
	if (!b || !share) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	goal = (target ? target : CHLB_VNODES_TARGET_DEFAULT) / 1000.0;
	/* our own slots 0..n-1: shares by index, whatever slots the caller's set has */
	memcpy(b, be, n * sizeof(*b));
	for (__u32 i = 0; i < n; i++)
		b[i].slot = i;
	/* the ladder: powers of two up to the largest whose ring fits */
	while (top < CHLB_VNODES_AUTO_MAX &&
	       chlb_ring_total_vnodes(b, n, top * 2) <= CHLB_RING_MAX_VNODES)
		top *= 2;
	if (chlb_ring_total_vnodes(b, n, CHLB_VNODES_AUTO_MIN) == 0) {
		p->met = true; /* nothing to balance: no backend with weight > 0 */
		goto out;
	}
	for (__u32 k = CHLB_VNODES_AUTO_MIN; k <= top; k *= 2) {
		double bal;

		if (k < top && hopeless(b, n, k, goal - 1))
			continue;
		rc = ring_balance(b, n, k, share, &bal, err, errlen);
		if (rc)
			goto out;
		p->tried++;
		p->vnodes = k;
		p->balance = bal;
		/* a hair of slack: a balance equal to the target in decimal is met */
		p->met = bal <= goal + 1e-9;
		if (p->met)
			break;
	}
out:
	p->ms = now_ms() - t0;
	free(b);
	free(share);
	return rc;
}
