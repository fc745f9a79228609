/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Entry sync between LB hosts (docs/design.md, "Several LB hosts"): every
 * connection entry the data plane inserts, rewrites or marks ENDED is also
 * written to sync_ring, from which chlbd streams it to its peers. Off
 * (cfg_sync 0, a load-time constant) unless chlbd has sync peers.
 */
#ifndef CHLB_SYNC_H
#define CHLB_SYNC_H

#include "chlb_stats.h"

static __always_inline void sync_emit(const struct chlb_flow *f, __u32 slot, __u32 gen, __u32 flags)
{
	struct chlb_sync_rec r;

	if (!cfg_sync)
		return;
	__builtin_memcpy(&r.flow, f, sizeof(r.flow));
	r.backend = (__u16)slot;
	r.flags = (__u16)flags;
	r.gen = gen;
	/* flags 0: the kernel wakes chlbd only when it has caught up (adaptive) */
	if (bpf_ringbuf_output(&sync_ring, &r, sizeof(r), 0))
		stat_reason(CHLB_R_SYNC_DROP);
}

#endif /* CHLB_SYNC_H */
