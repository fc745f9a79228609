// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An RCU grace period on demand: returns once every XDP and TC program run
 * that had started when it was called has ended.
 *
 * The kernel gives one through the map-in-map update: for an
 * ARRAY_OF_MAPS/HASH_OF_MAPS the bpf() syscall calls synchronize_rcu()
 * before it returns ("wait for any running non-sleepable BPF programs to
 * complete", maybe_wait_bpf_programs in kernel/bpf/syscall.c, since 4.19; the
 * kernel's own selftests use it this way). Our programs are not sleepable
 * and run inside RCU read-side sections (NAPI, softirq), so a program that a
 * preempted vCPU holds for a second makes this wait a second, where a sleep
 * would have ended under it. A private one-slot outer map, made on first
 * use: the tables map is the data plane's, and its updates do this already.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "dp/dp_int.h"

static int grace_maps(struct chlb_dp *dp)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int inner, outer;

	if (dp->grace_outer > 0)
		return 0;
	inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "chlb_grace_in", 4, 4, 1, NULL);
	if (inner < 0)
		return -errno;
	opts.inner_map_fd = inner;
	outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "chlb_grace", 4, 4, 1, &opts);
	if (outer < 0) {
		int rc = -errno;

		close(inner);
		return rc;
	}
	dp->grace_inner = inner;
	dp->grace_outer = outer;
	return 0;
}

int chlb_dp_grace(struct chlb_dp *dp)
{
	__u32 zero = 0;
	int rc = grace_maps(dp);

	if (!rc && !bpf_map_update_elem(dp->grace_outer, &zero, &dp->grace_inner, 0))
		return 0;
	/* no map-in-map here: the sleep that stood for a grace period before */
	nanosleep(&(struct timespec){ .tv_nsec = 10000000L }, NULL);
	return rc ? rc : -errno;
}

void dp_grace_close(struct chlb_dp *dp)
{
	if (dp->grace_outer > 0) {
		close(dp->grace_outer);
		close(dp->grace_inner);
	}
	dp->grace_outer = dp->grace_inner = 0;
}
