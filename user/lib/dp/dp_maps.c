// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The loaded data plane's maps and programs by name (enum chlb_dp_map):
 * what every other dp_*.c reaches them through.
 */
#include <bpf/libbpf.h>

#include "dp/dp_int.h"

static const char *const map_names[CHLB_MAP_COUNT] = {
	[CHLB_MAP_VIPS] = "vips",
	[CHLB_MAP_TABLES] = "tables",
	[CHLB_MAP_BACKENDS] = "backends",
	[CHLB_MAP_CONNS] = "conns",
	[CHLB_MAP_SVC_STATS] = "svc_stats",
	[CHLB_MAP_BE_STATS] = "be_stats",
	[CHLB_MAP_GLOBAL_STATS] = "global_stats",
	[CHLB_MAP_CONN_FILTER] = "conn_filter",
	[CHLB_MAP_VIP_INDEX] = "vip_index",
	[CHLB_MAP_VIEWS] = "views",
	[CHLB_MAP_FILTER_BANK] = "filter_bank",
	[CHLB_MAP_ALLOW] = "allow",
	[CHLB_MAP_PERSIST_CFG] = "persist_cfg",
	[CHLB_MAP_PERSIST] = "persist",
};

const char *chlb_dp_map_name(enum chlb_dp_map m)
{
	return (unsigned)m < CHLB_MAP_COUNT ? map_names[m] : NULL;
}

struct bpf_map *dp_map(struct chlb_dp *dp, enum chlb_dp_map m)
{
	switch (m) {
	case CHLB_MAP_VIPS:
		return dp->skel->maps.vips;
	case CHLB_MAP_TABLES:
		return dp->skel->maps.tables;
	case CHLB_MAP_BACKENDS:
		return dp->skel->maps.backends;
	case CHLB_MAP_CONNS:
		return dp->skel->maps.conns;
	case CHLB_MAP_SVC_STATS:
		return dp->skel->maps.svc_stats;
	case CHLB_MAP_BE_STATS:
		return dp->skel->maps.be_stats;
	case CHLB_MAP_GLOBAL_STATS:
		return dp->skel->maps.global_stats;
	case CHLB_MAP_CONN_FILTER:
		return dp->skel->maps.conn_filter;
	case CHLB_MAP_VIP_INDEX:
		return dp->skel->maps.vip_index;
	case CHLB_MAP_VIEWS:
		return dp->skel->maps.views;
	case CHLB_MAP_FILTER_BANK:
		return dp->skel->maps.filter_bank;
	case CHLB_MAP_ALLOW:
		return dp->skel->maps.allow;
	case CHLB_MAP_PERSIST_CFG:
		return dp->skel->maps.persist_cfg;
	case CHLB_MAP_PERSIST:
		return dp->skel->maps.persist;
	default:
		return NULL;
	}
}

int chlb_dp_map_fd(struct chlb_dp *dp, enum chlb_dp_map m)
{
	struct bpf_map *map = dp_map(dp, m);

	return map ? bpf_map__fd(map) : -1;
}

int chlb_dp_prog_fd(struct chlb_dp *dp, enum chlb_dp_prog which)
{
	switch (which) {
	case CHLB_PROG_TC:
		return bpf_program__fd(dp->skel->progs.chlb_tc);
	case CHLB_PROG_PROBE:
		return bpf_program__fd(dp->skel->progs.chlb_probe_steer);
	default:
		return bpf_program__fd(dp->skel->progs.chlb_xdp);
	}
}

bool chlb_dp_adopted(const struct chlb_dp *dp)
{
	return dp->adopted;
}

bool chlb_dp_persist_restarted(const struct chlb_dp *dp)
{
	return dp->map_recreated[CHLB_MAP_PERSIST];
}

bool chlb_dp_counters_restarted(const struct chlb_dp *dp)
{
	return dp->map_recreated[CHLB_MAP_GLOBAL_STATS] || dp->map_recreated[CHLB_MAP_SVC_STATS] ||
	       dp->map_recreated[CHLB_MAP_BE_STATS];
}

unsigned int chlb_dp_syn_clock_hz(const struct chlb_dp *dp)
{
	return dp->skel->kconfig ? dp->skel->kconfig->CONFIG_HZ : 0;
}
