/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Clocks. */
#ifndef CHLB_BASE_TIME_H
#define CHLB_BASE_TIME_H

#include <linux/types.h>

/* CLOCK_MONOTONIC in ns: deadlines, durations, the timerfd's clock. */
__u64 chlb_now_ns(void);

/* CLOCK_MONOTONIC_COARSE in ns: the clock the data plane stamps connection entries with. */
__u64 chlb_coarse_now_ns(void);

#endif /* CHLB_BASE_TIME_H */
