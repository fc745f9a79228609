/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Internal state of a struct chlb_dp, shared by the dp_*.c files. */
#ifndef CHLB_DP_INT_H
#define CHLB_DP_INT_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "base/err.h"
#include "dp/dp.h"
#include "chlb.skel.h"

/* Our cls_bpf filter on clsact ingress: fixed, so detach removes only ours. */
#define CHLB_DP_TC_HANDLE 0xc1a
#define CHLB_DP_TC_PRIO	  0xc1a

struct chlb_dp {
	struct chlb_bpf *skel;
	char pin_dir[PATH_MAX / 2];
	bool adopted;
	bool map_adopted[CHLB_MAP_COUNT];
	/* pinned with another shape and made afresh (counters: restart at zero) */
	bool map_recreated[CHLB_MAP_COUNT];
	int ncpus;
	/* XDP links created by this process without a pin dir: closed on close */
	int link_fd[16];
	int link_ifindex[16];
	/* the data plane's VIP index, mapped (dp_views.c) */
	__u64 *vip_index; /* 8-byte elements; values fit 32 bits */
	struct chlb_vip_view *views;
	bool view_used[CHLB_VIEW_SLOTS];
	__u64 view_free_ns[CHLB_VIEW_SLOTS]; /* rewritable from then on */
	/* the one-slot map-in-map whose update is an RCU grace period (dp_grace.c); 0: none yet */
	int grace_outer, grace_inner;
	/*
	 * Each table slot's inner map as last mapped (dp_state.c), kept: a fresh
	 * mapping faults on every page at its first write, ~5 ms for a 2 MiB
	 * ring on this VM, against ~0.1 ms into one already faulted in.
	 */
	struct {
		__u32 id; /* the inner map's id; 0: nothing mapped */
		void *mem;
		size_t size;
	} tmap[CHLB_TABLE_SLOTS];
	/* conn_filter, mapped (dp_filter.c) */
	struct chlb_conn_filter *filter;
	/* filled from adopted entries at open, not rebuilt since (chlb_dp_filter_stale) */
	bool filter_from_open;
	/* a connection table resized at open (dp_resize.c) */
	struct {
		int old_fd;		/* the pinned table, until the copy is finished; -1 */
		__u32 old_max, new_max; /* old_max 0: no resize */
		__u64 entries, copied, late;
		struct chlb_flow
		    *seen; /* flows the first copy saw, when some did not fit; sorted */
		size_t nseen;
	} rs;
};

/* dp_views.c: the data plane's VIP index, written before the vips registry. */
int dp_views_open(struct chlb_dp *dp);
void dp_views_close(struct chlb_dp *dp);
int dp_views_set(struct chlb_dp *dp, const struct chlb_vip_key *key,
		 const struct chlb_service *svc);
int dp_views_del(struct chlb_dp *dp, const struct chlb_vip_key *key);

/* dp_state.c: unmap the table slots' kept mappings. */
void dp_tables_unmap(struct chlb_dp *dp);

/* dp_filter.c: the connection filter, mapped at open. */
int dp_filter_open(struct chlb_dp *dp);
void dp_filter_close(struct chlb_dp *dp);

struct bpf_map *dp_map(struct chlb_dp *dp, enum chlb_dp_map m);

/* dp_grace.c: the grace-period maps, closed */
void dp_grace_close(struct chlb_dp *dp);

/* dp_sync.c: before load: the sync flag and ring size (0: off, one page) */
int dp_sync_configure(struct chlb_dp *dp, __u32 ring_bytes);

/* dp_resize.c: the entries of the pinned table (rs.old_fd) into the new one. */
int dp_conns_resize_begin(struct chlb_dp *dp);
void dp_conns_resize_free(struct chlb_dp *dp);

#endif /* CHLB_DP_INT_H */
