// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading the connection table (conns) from userspace: every entry, its
 * count, the table's size and memory. The walk uses BPF_MAP_LOOKUP_BATCH:
 * one syscall per few thousand entries instead of two per entry
 * (get_next_key + lookup): several times less of chlbd not answering
 * (docs/performance.md).
 *
 * A walk is a snapshot only in the weak sense the kernel gives: the hash
 * map is visited bucket by bucket while the data plane keeps inserting and
 * the LRU keeps evicting, so an entry written during the walk may be missed,
 * but none is reported twice (a key lives in one bucket). The cursor
 * (chlb_dp_conns_next_batch) does the same a batch per call, for callers
 * that must not stall: the kernel's bucket cursor only moves forward, so a
 * pass ends whatever is evicted meanwhile. The fallback
 * (kernels without batch ops on LRU hashes, < 5.6) restarts from the first
 * key when the key it stands on is evicted, so it may report duplicates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "dp/dp.h"
#include "dp/dp_conns.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's "operation not supported" for map ops */
#endif

#define BATCH_MAX (1u << 20) /* ENOSPC retries stop growing the buffers here */

/* Fallback: one key at a time. */
static int walk_keys(int fd, chlb_dp_conn_cb cb, void *ctx)
{
	struct chlb_flow key, next;
	struct chlb_conn val;
	bool first = true;
	int rc;

	for (;;) {
		if (bpf_map_get_next_key(fd, first ? NULL : &key, &next))
			return errno == ENOENT ? 0 : -errno;
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &val)) {
			if (errno == ENOENT) /* evicted between the two calls */
				continue;
			return -errno;
		}
		rc = cb(&key, &val, ctx);
		if (rc)
			return rc;
	}
}

static bool no_batch_ops(int rc)
{
	return rc == -EINVAL || rc == -ENOTSUPP || rc == -EOPNOTSUPP;
}

int chlb_dp_conns_next_batch_fd(int fd, struct chlb_dp_conns_cursor *cur, struct chlb_flow *keys,
				struct chlb_conn *vals, __u32 *count)
{
	/* hash maps take a 4-byte bucket cursor, whatever the key size */
	__u32 in = cur->pos, out = 0, n = *count;
	int rc;

	*count = 0;
	if (fd < 0)
		return -EBADF;
	if (!n)
		return -EINVAL;
	if (cur->done)
		return 0;
	rc = bpf_map_lookup_batch(fd, cur->started ? &in : NULL, &out, keys, vals, &n, NULL);
	rc = rc < 0 ? -errno : 0;
	if (rc == -ENOENT) { /* past the last bucket: n entries, maybe 0 */
		cur->done = true;
		*count = n;
		return 0;
	}
	if (rc) /* ENOSPC: one bucket holds more than n; the cursor stays on it */
		return !cur->started && no_batch_ops(rc) ? -EOPNOTSUPP : rc;
	/*
	 * The kernel moves the cursor past every bucket it copied, at least one:
	 * a pass ends after the table's buckets, whatever is evicted meanwhile.
	 */
	cur->pos = out;
	cur->started = true;
	*count = n;
	return 0;
}

int chlb_dp_conns_next_batch(struct chlb_dp *dp, struct chlb_dp_conns_cursor *cur,
			     struct chlb_flow *keys, struct chlb_conn *vals, __u32 *count)
{
	return chlb_dp_conns_next_batch_fd(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), cur, keys, vals,
					   count);
}

int chlb_dp_conns_walk_fd(int fd, __u32 batch, bool keys_only, chlb_dp_conn_cb cb, void *ctx)
{
	struct chlb_dp_conns_cursor cur = { 0 };
	struct chlb_flow *keys = NULL;
	struct chlb_conn *vals = NULL;
	__u32 count;
	int rc = 0;

	if (fd < 0)
		return -EBADF;
	if (keys_only)
		return walk_keys(fd, cb, ctx);
	if (!batch)
		batch = CHLB_DP_CONNS_BATCH;
	while (!cur.done) {
		if (!keys) {
			keys = calloc(batch, sizeof(*keys));
			vals = calloc(batch, sizeof(*vals));
			if (!keys || !vals) {
				rc = -ENOMEM;
				break;
			}
		}
		count = batch;
		rc = chlb_dp_conns_next_batch_fd(fd, &cur, keys, vals, &count);
		if (rc == -ENOSPC && batch < BATCH_MAX) {
			/* one bucket holds more entries than the buffers: grow, same cursor */
			batch *= 2;
			free(keys);
			free(vals);
			keys = NULL;
			vals = NULL;
			continue;
		}
		if (rc == -EOPNOTSUPP) {
			rc = walk_keys(fd, cb, ctx);
			break;
		}
		if (rc)
			break;
		for (__u32 i = 0; i < count && !rc; i++)
			rc = cb(&keys[i], &vals[i], ctx);
		if (rc)
			break;
	}
	free(keys);
	free(vals);
	return rc;
}

int chlb_dp_conns_foreach(struct chlb_dp *dp,
			  int (*cb)(const struct chlb_flow *f, const struct chlb_conn *c,
				    void *ctx),
			  void *ctx)
{
	return chlb_dp_conns_walk_fd(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), 0, false, cb, ctx);
}

static int count_one(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	(void)f;
	(void)c;
	++*(__u64 *)ctx;
	return 0;
}

int chlb_dp_conn_count(struct chlb_dp *dp, __u64 *entries)
{
	*entries = 0;
	return chlb_dp_conns_foreach(dp, count_one, entries);
}

/*
 * The kernel's own account of the map's memory (fdinfo "memlock", which
 * since 6.4 is the map's memory usage: elements, buckets, LRU lists).
 */
static long long fd_memlock(int fd)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "memlock:", 8))
			v = strtoll(line + 8, NULL, 10);
	fclose(f);
	return v < 0 ? -ENOENT : v;
}

int chlb_dp_conn_size(struct chlb_dp *dp, __u32 *max_entries, __u64 *memory)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS);
	long long mem;

	/* the map's own size: an adopted pinned table keeps the size it was made with */
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*max_entries = info.max_entries;
	if (memory) {
		mem = fd_memlock(fd);
		if (mem < 0)
			return (int)mem;
		*memory = (__u64)mem;
	}
	return 0;
}
