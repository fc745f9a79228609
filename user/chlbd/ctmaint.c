// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connection-table upkeep from the event loop: the connection filter's bits
 * are only ever set by the data plane, so as connections come and go it
 * fills up and more SYNs pay an LRU probe. Every few seconds chlbd reads
 * how full the filter is and rebuilds it from the entries (user/lib/dp/dp_filter.c)
 * once it has grown by a quarter since the last rebuild, and once right
 * after a start that could not adopt the pinned filter.
 */
#include <string.h>
#include "chlbd.h"

#define FILTER_CHECK_NS 5000000000ull
#define FILTER_MIN_FILL 0.05 /* below this a probe is rare (fill^3 < 0.013%) */
#define FILTER_GROWTH	1.25

static __u64 next_check;
static double base_fill;

void ct_maintain(__u64 now)
{
	__u64 t0;
	double fill, after;
	int rc;

	if (now < next_check)
		return;
	next_check = now + FILTER_CHECK_NS;
	if (chlb_dp_filter_fill(D.dp, &fill))
		return;
	/* stale: the first check after start rebuilds whatever the fill */
	if (!chlb_dp_filter_stale(D.dp) &&
	    (fill < FILTER_MIN_FILL || fill < base_fill * FILTER_GROWTH))
		return;
	t0 = chlb_now_ns();
	rc = chlb_dp_filter_rebuild(D.dp);
	if (rc) {
		pr_err("connection filter rebuild failed: %s", strerror(-rc));
		return;
	}
	if (chlb_dp_filter_fill(D.dp, &after))
		after = fill;
	base_fill = after;
	pr_info("connection filter rebuilt from the entries: %.1f%% -> %.1f%% of bits set, %llu ms",
		fill * 100, after * 100, (unsigned long long)((chlb_now_ns() - t0) / 1000000));
}
