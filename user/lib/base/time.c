// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Clocks (see time.h). */
#include <time.h>
#include "base/time.h"

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

__u64 chlb_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

__u64 chlb_coarse_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_COARSE);
}
