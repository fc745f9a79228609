// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A restart asked for another connection-table size (--ct-size) than the
 * pinned table has. A map's size is fixed at creation, so the load makes a
 * table of the new size, and the entries move across:
 *
 *  1. chlb_dp_open(): the pinned table is not adopted; after the load every
 *     entry is copied into the new one, its flow's bits set in the
 *     connection filter first (as the data plane writes them), and the new
 *     table is pinned over the old pin. The old program still runs on the
 *     old table meanwhile.
 *  2. The caller attaches: the pinned link swaps the new program in, and
 *     it uses the new table.
 *  3. chlb_dp_conns_resize_finish(): entries the old program wrote between
 *     the copy and the swap are copied too (entries the new table lacks,
 *     and when not all fitted, only of flows the copy did not see), then
 *     the old table is let go.
 *
 * It delays the start by seconds for a million entries (docs/performance.md);
 * the old program forwards meanwhile.
 *
 * When the new table is smaller than the entries, the kept ones are the
 * connections that have not ended (no FIN or RST seen) before those that
 * have, the most recently refreshed first (last_ns: UDP flows, and TCP
 * connections under --tcp-timeout-ms; other TCP entries carry no time and
 * come in the old table's hash order). The LRU's own recency is not
 * readable from userspace. They are inserted in reverse order, so that if
 * the LRU evicts while filling (it keeps free entries per CPU) it evicts
 * the least valuable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "dp/dp_conns.h"
#include "dp/dp_int.h"

#define BATCH 4096 /* entries per BPF_MAP_UPDATE_BATCH */

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's "operation not supported" for map ops */
#endif

struct entry {
	struct chlb_flow f;
	struct chlb_conn c;
};

struct entries {
	struct entry *e;
	size_t n, cap;
};

static int collect(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct entries *v = ctx;

	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4096;
		struct entry *p = realloc(v->e, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		v->e = p;
		v->cap = cap;
	}
	v->e[v->n].f = *f;
	v->e[v->n].c = *c;
	v->n++;
	return 0;
}

/* Most worth keeping first: not ended, then the latest last_ns. */
static int by_worth(const void *a, const void *b)
{
	const struct chlb_conn *x = &((const struct entry *)a)->c,
			       *y = &((const struct entry *)b)->c;
	int xe = !!(x->flags & CHLB_CONN_F_ENDED), ye = !!(y->flags & CHLB_CONN_F_ENDED);

	if (xe != ye)
		return xe - ye;
	return x->last_ns > y->last_ns ? -1 : x->last_ns < y->last_ns;
}

static int by_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct chlb_flow));
}

static int put(struct chlb_dp *dp, const struct entry *e, __u64 flags)
{
	int rc = chlb_dp_filter_add(dp, &e->f);

	if (rc)
		return rc;
	if (bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), &e->f, &e->c, flags))
		return errno == EEXIST ? 0 : -errno;
	return 1;
}

/*
 * e[0..n) into the empty new table, the last first (the least worth
 * keeping goes in first, to be evicted first), the filter bits of each
 * batch before it: BPF_MAP_UPDATE_BATCH, 4096 entries a call (one update
 * per entry is much slower: docs/performance.md), or one at a time on kernels
 * without batch updates of LRU hashes.
 */
static int put_all(struct chlb_dp *dp, const struct entry *e, size_t n)
{
	struct bpf_map_batch_opts bo = { .sz = sizeof(bo), .elem_flags = BPF_ANY };
	struct chlb_flow *keys = malloc(BATCH * sizeof(*keys));
	struct chlb_conn *vals = malloc(BATCH * sizeof(*vals));
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS), rc = 0;
	bool batch = true;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	while (n && !rc) {
		__u32 k = n < BATCH ? (__u32)n : BATCH, count = k;

		for (__u32 i = 0; i < k; i++) {
			keys[i] = e[n - 1 - i].f;
			vals[i] = e[n - 1 - i].c;
			rc = chlb_dp_filter_add(dp, &keys[i]);
			if (rc)
				break;
		}
		if (!rc && batch && bpf_map_update_batch(fd, keys, vals, &count, &bo)) {
			if (errno != EINVAL && errno != ENOTSUPP && errno != EOPNOTSUPP)
				rc = -errno;
			batch = false;
		}
		for (__u32 i = 0; !rc && !batch && i < k; i++)
			if (bpf_map_update_elem(fd, &keys[i], &vals[i], BPF_ANY))
				rc = -errno;
		n -= k;
	}
	free(keys);
	free(vals);
	return rc;
}

int dp_conns_resize_begin(struct chlb_dp *dp)
{
	struct entries v = { 0 };
	struct chlb_flow *keys;
	__u32 max;
	size_t keep;
	int rc;

	rc = chlb_dp_conn_size(dp, &max, NULL);
	if (rc)
		return rc;
	dp->rs.new_max = max;
	rc = chlb_dp_conns_walk_fd(dp->rs.old_fd, 0, false, collect, &v);
	if (rc) {
		free(v.e);
		return rc < 0 ? rc : -EIO;
	}
	dp->rs.entries = v.n;
	keep = v.n < max ? v.n : max;
	if (keep < v.n)
		qsort(v.e, v.n, sizeof(v.e[0]), by_worth);
	rc = put_all(dp, v.e, keep);
	if (rc < 0) {
		free(v.e);
		return rc;
	}
	dp->rs.copied = keep;
	if (keep == v.n) { /* all copied: the second pass copies what the new table lacks */
		free(v.e);
		return 0;
	}
	/* every flow seen here, copied or not: the second pass copies only the others */
	keys = malloc((v.n ? v.n : 1) * sizeof(*keys));
	if (!keys) {
		free(v.e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v.n; i++)
		keys[i] = v.e[i].f;
	free(v.e);
	qsort(keys, v.n, sizeof(*keys), by_key);
	dp->rs.seen = keys;
	dp->rs.nseen = v.n;
	return 0;
}

struct late {
	struct chlb_dp *dp;
	__u64 n;
};

static int copy_late(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct late *l = ctx;
	struct entry e = { .f = *f, .c = *c };
	int rc;

	if (l->dp->rs.nseen && bsearch(f, l->dp->rs.seen, l->dp->rs.nseen, sizeof(*f), by_key))
		return 0;
	rc = put(l->dp, &e, BPF_NOEXIST); /* the new program may have written it already */
	if (rc < 0)
		return rc;
	l->n += (__u64)rc;
	return 0;
}

int chlb_dp_conns_resize_finish(struct chlb_dp *dp)
{
	struct late l = { .dp = dp };
	int rc;

	if (dp->rs.old_fd < 0)
		return 0;
	chlb_dp_grace(dp); /* old program runs that may still write the old table */
	rc = chlb_dp_conns_walk_fd(dp->rs.old_fd, 0, false, copy_late, &l);
	dp->rs.late = l.n;
	dp_conns_resize_free(dp);
	return rc;
}

bool chlb_dp_conns_resized(const struct chlb_dp *dp, struct chlb_dp_resize *out)
{
	if (!dp->rs.old_max)
		return false;
	out->old_max = dp->rs.old_max;
	out->new_max = dp->rs.new_max;
	out->entries = dp->rs.entries;
	out->copied = dp->rs.copied;
	out->late = dp->rs.late;
	return true;
}

void dp_conns_resize_free(struct chlb_dp *dp)
{
	if (dp->rs.old_fd >= 0)
		close(dp->rs.old_fd);
	dp->rs.old_fd = -1;
	free(dp->rs.seen);
	dp->rs.seen = NULL;
	dp->rs.nseen = 0;
}
