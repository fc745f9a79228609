/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection-table walk on a bare map fd, with its knobs exposed so
 * tests/bpf/test_conns.c can drive the paths a real table rarely takes
 * (a batch too small for one bucket: ENOSPC; no batch ops: get_next_key).
 * Everyone else uses chlb_dp_conns_foreach() or the cursor,
 * chlb_dp_conns_next_batch() (dp/dp.h).
 */
#ifndef CHLB_DP_CONNS_H
#define CHLB_DP_CONNS_H

#include <stdbool.h>
#include <linux/types.h>
#include "chlb_maps.h"

#define CHLB_DP_CONNS_BATCH 4096 /* entries per BPF_MAP_LOOKUP_BATCH call */

typedef int (*chlb_dp_conn_cb)(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx);

/*
 * Walk the LRU hash `fd` (key struct chlb_flow, value struct chlb_conn):
 * batch entries per call (0 = CHLB_DP_CONNS_BATCH, doubled on ENOSPC), or
 * one key at a time when keys_only. Returns 0, the callback's non-zero
 * return (which stops the walk), or a negative errno.
 */
int chlb_dp_conns_walk_fd(int fd, __u32 batch, bool keys_only, chlb_dp_conn_cb cb, void *ctx);

/* chlb_dp_conns_next_batch() (dp/dp.h) on a bare map fd; -EBADF for fd < 0. */
struct chlb_dp_conns_cursor;
int chlb_dp_conns_next_batch_fd(int fd, struct chlb_dp_conns_cursor *cur, struct chlb_flow *keys,
				struct chlb_conn *vals, __u32 *count);

#endif /* CHLB_DP_CONNS_H */
