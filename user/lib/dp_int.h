/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Internal state of a struct chlb_dp, shared by the dp_*.c files. */
#ifndef CHLB_DP_INT_H
#define CHLB_DP_INT_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "chlb_dp.h"
#include "chlb.skel.h"

/* Our cls_bpf filter on clsact ingress: fixed, so detach removes only ours. */
#define CHLB_DP_TC_HANDLE 0xc1a
#define CHLB_DP_TC_PRIO	  0xc1a

struct chlb_dp {
	struct chlb_bpf *skel;
	char pin_dir[PATH_MAX / 2];
	bool adopted;
	bool map_adopted[CHLB_MAP_COUNT];
	int ncpus;
	/* XDP links created by this process without a pin dir: closed on close */
	int link_fd[16];
	int link_ifindex[16];
};

static inline int dp_err(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline int dp_err(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !len)
		return rc;
	va_start(ap, fmt);
	n = vsnprintf(err, len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < len && rc < 0)
		snprintf(err + n, len - n, ": %s (%d)", strerror(-rc), rc);
	return rc;
}

struct bpf_map *dp_map(struct chlb_dp *dp, enum chlb_dp_map m);

#endif /* CHLB_DP_INT_H */
