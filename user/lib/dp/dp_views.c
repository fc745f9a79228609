// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data plane's VIP index: vip_index + views (include/chlb_maps.h), two
 * mmapable arrays the program reads inline. A view change writes the new
 * view into a free views slot, then publishes it with one release store of
 * its number into the key's index slot: a packet sees the old view or the
 * new one. The old views slot is rewritten only CHLB_VIEW_GRACE_MS later
 * (a program holds it for nanoseconds), the same rule as table slots.
 *
 * The `vips` hash stays the registry userspace reads and iterates:
 * chlb_dp_set_service() and chlb_dp_del_service() write the index first,
 * then the registry. dp_views_open() maps the arrays at every open and
 * brings an adopted index in step with the registry (pins from a version
 * without an index, or a crash between the two writes).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "dp/dp_int.h"
#include "base/time.h"

#define INDEX_BYTES (CHLB_VIP_SLOTS * sizeof(__u64))
#define VIEWS_BYTES (CHLB_VIEW_SLOTS * sizeof(struct chlb_vip_view))

static void *map_mem(struct chlb_dp *dp, enum chlb_dp_map m, size_t len)
{
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, chlb_dp_map_fd(dp, m), 0);

	return mem == MAP_FAILED ? NULL : mem;
}

static __u32 index_get(const struct chlb_dp *dp, __u32 s)
{
	return (__u32)__atomic_load_n(&dp->vip_index[s], __ATOMIC_ACQUIRE);
}

/* Publish: everything written before (the view) is visible before the index. */
static void index_put(struct chlb_dp *dp, __u32 s, __u32 v)
{
	__atomic_store_n(&dp->vip_index[s], v, __ATOMIC_RELEASE);
}

static bool is_view(__u32 ix)
{
	return ix && ix != CHLB_VIP_TOMB && ix - 1 < CHLB_VIEW_SLOTS;
}

/*
 * The index slot holding key, or -ENOENT. *avail: the first slot of the
 * key's window a new key may take (removed or empty), or -1.
 */
static int find_slot(const struct chlb_dp *dp, const struct chlb_vip_key *key, int *avail)
{
	__u32 h = chlb_vip_hash(key), i;

	*avail = -1;
	for (i = 0; i < CHLB_VIP_PROBES; i++) {
		__u32 s = (h + i) & (CHLB_VIP_SLOTS - 1), ix = index_get(dp, s);

		if (!is_view(ix)) {
			if (*avail < 0)
				*avail = (int)s;
			if (!ix)
				return -ENOENT;
		} else if (!memcmp(&dp->views[ix - 1].key, key, sizeof(*key))) {
			return (int)s;
		}
	}
	return -ENOENT;
}

static void view_release(struct chlb_dp *dp, __u32 ix)
{
	if (!is_view(ix))
		return;
	dp->view_used[ix - 1] = false;
	dp->view_free_ns[ix - 1] = chlb_now_ns() + CHLB_VIEW_GRACE_MS * 1000000ull;
}

/* A views slot nobody can be reading; waits out a grace period if it must. */
static int view_alloc(struct chlb_dp *dp)
{
	__u64 now = chlb_now_ns(), soonest = ~0ull;
	int best = -1;

	for (__u32 v = 0; v < CHLB_VIEW_SLOTS; v++) {
		if (dp->view_used[v])
			continue;
		if (dp->view_free_ns[v] <= now)
			return (int)v;
		if (dp->view_free_ns[v] < soonest) {
			soonest = dp->view_free_ns[v];
			best = (int)v;
		}
	}
	if (best < 0)
		return -ENOSPC;
	/* more than CHLB_VIEW_SLOTS / 2 changes within one grace period */
	struct timespec ts = { .tv_sec = (time_t)((soonest - now) / 1000000000ull),
			       .tv_nsec = (long)((soonest - now) % 1000000000ull) };
	nanosleep(&ts, NULL);
	return best;
}

int dp_views_set(struct chlb_dp *dp, const struct chlb_vip_key *key, const struct chlb_service *svc)
{
	int avail, s = find_slot(dp, key, &avail), v;
	__u32 old;

	if (s < 0)
		s = avail;
	if (s < 0)
		return -ENOSPC; /* CHLB_VIP_PROBES keys share this window */
	v = view_alloc(dp);
	if (v < 0)
		return v;
	dp->views[v] = (struct chlb_vip_view){ .key = *key, .svc = *svc };
	dp->view_used[v] = true;
	old = index_get(dp, (__u32)s);
	index_put(dp, (__u32)s, (__u32)v + 1);
	view_release(dp, old);
	return 0;
}

int dp_views_del(struct chlb_dp *dp, const struct chlb_vip_key *key)
{
	int avail, s = find_slot(dp, key, &avail);
	__u32 old;

	if (s < 0)
		return s;
	old = index_get(dp, (__u32)s);
	index_put(dp, (__u32)s, CHLB_VIP_TOMB);
	view_release(dp, old);
	/*
	 * Removed slots just before an empty one end no probe that could find
	 * anything past them (a key never sits beyond an empty slot of its
	 * window): empty them, so misses stay short after churn.
	 */
	while (index_get(dp, (__u32)s) == CHLB_VIP_TOMB &&
	       !index_get(dp, ((__u32)s + 1) & (CHLB_VIP_SLOTS - 1))) {
		index_put(dp, (__u32)s, 0);
		s = (s - 1) & (CHLB_VIP_SLOTS - 1);
	}
	return 0;
}

/* Bring the index in step with the registry: it decides what is served. */
static int views_sync(struct chlb_dp *dp)
{
	int vfd = chlb_dp_map_fd(dp, CHLB_MAP_VIPS), rc, avail;
	struct chlb_vip_key key, next;
	struct chlb_service svc;
	void *prev = NULL;
	__u32 s;

	/* indexed, not registered: a crash between the two writes of a removal */
	for (s = 0; s < CHLB_VIP_SLOTS; s++) {
		__u32 ix = index_get(dp, s);

		if (!is_view(ix))
			continue;
		key = dp->views[ix - 1].key;
		if (bpf_map_lookup_elem(vfd, &key, &svc)) {
			if (errno != ENOENT)
				return -errno;
			rc = dp_views_del(dp, &key);
			if (rc)
				return rc;
		}
	}
	/* registered: indexed with the same view (rewritten only if it differs) */
	while (!bpf_map_get_next_key(vfd, prev, &next)) {
		memset(&svc, 0, sizeof(svc));
		if (bpf_map_lookup_elem(vfd, &next, &svc))
			return -errno;
		svc.vip_crc = chlb_vip_crc(next.addr); /* absent from older registries */
		rc = find_slot(dp, &next, &avail);
		if (rc < 0 ||
		    memcmp(&dp->views[index_get(dp, (__u32)rc) - 1].svc, &svc, sizeof(svc)))
			rc = dp_views_set(dp, &next, &svc);
		else
			rc = 0;
		if (rc)
			return rc;
		key = next;
		prev = &key;
	}
	return 0;
}

int dp_views_open(struct chlb_dp *dp)
{
	__u64 now = chlb_now_ns();
	__u32 s;

	dp->vip_index = map_mem(dp, CHLB_MAP_VIP_INDEX, INDEX_BYTES);
	dp->views = map_mem(dp, CHLB_MAP_VIEWS, VIEWS_BYTES);
	if (!dp->vip_index || !dp->views)
		return -errno;
	/*
	 * In use: what the index names. Everything else may have been named a
	 * moment ago by the process before us: its grace starts now.
	 */
	for (s = 0; s < CHLB_VIEW_SLOTS; s++)
		dp->view_free_ns[s] = now + CHLB_VIEW_GRACE_MS * 1000000ull;
	for (s = 0; s < CHLB_VIP_SLOTS; s++) {
		__u32 ix = index_get(dp, s);

		if (ix && !is_view(ix) && ix != CHLB_VIP_TOMB)
			index_put(dp, s, CHLB_VIP_TOMB); /* out of range: never served */
		else if (is_view(ix))
			dp->view_used[ix - 1] = true;
	}
	return views_sync(dp);
}

void dp_views_close(struct chlb_dp *dp)
{
	if (dp->vip_index)
		munmap(dp->vip_index, INDEX_BYTES);
	if (dp->views)
		munmap(dp->views, VIEWS_BYTES);
	dp->vip_index = NULL;
	dp->views = NULL;
}
