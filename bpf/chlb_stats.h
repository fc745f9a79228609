/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Per-CPU counters: global by enum chlb_reason, per service, per backend. */
#ifndef CHLB_STATS_H
#define CHLB_STATS_H

#include "chlb_maps.bpf.h"

static __always_inline void stat_reason(__u32 r)
{
	__u32 zero = 0;
	struct chlb_global_stats *g = bpf_map_lookup_elem(&global_stats, &zero);

	if (g && r < CHLB_R_MAX)
		g->reason[r]++;
}

static __always_inline void stat_count(void *map, __u32 idx, __u32 bytes, __u32 new_flow)
{
	struct chlb_counters *c = bpf_map_lookup_elem(map, &idx);

	if (!c)
		return;
	c->packets++;
	c->bytes += bytes;
	c->new_flows += new_flow;
}

/* A packet for the backend dropped for want of a route: its service's and its slot's. */
static __always_inline void stat_no_route(void *map, __u32 idx)
{
	struct chlb_counters *c = bpf_map_lookup_elem(map, &idx);

	if (c)
		c->no_route++;
}

/* A packet from a source the service's allow-list leaves out. */
static __always_inline void stat_drop_source(__u32 svc_id)
{
	struct chlb_counters *c = bpf_map_lookup_elem(&svc_stats, &svc_id);

	if (c)
		c->drop_source++;
}

#endif /* CHLB_STATS_H */
