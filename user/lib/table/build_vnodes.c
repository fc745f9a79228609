// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ring vnode positions, fmix32(crc32c("<name>#<replica>")), with a
 * per-process cache by backend name. A membership change rebuilds the whole
 * ring, but all backends except the one that changed hash exactly as
 * before, and hashing is the largest part of a ring build that does not
 * depend on the rest of the set. Replicas 0..k-1 of a name are the first k
 * of any larger count, so one entry per name serves every weight.
 *
 * Bounded: at most VC_MAX_NAMES names and VC_MAX_HASHES cached positions
 * (16 MB); past either the cache is emptied and refills (a set bigger than
 * the cache costs what it did without one). A mutex makes it safe to build
 * from several threads (chlbd is single-threaded; it is uncontended there).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

#define VC_MAX_NAMES  (1u << 16)
#define VC_MAX_HASHES (4u << 20)

struct vc_entry {
	char name[CHLB_BE_NAME_LEN]; /* "" = empty entry */
	__u32 k;		     /* positions cached: replicas 0..k-1 */
	__u32 *h;
};

static pthread_mutex_t vc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vc_entry *vc_tab;
static __u32 vc_size, vc_names, vc_hashes; /* vc_size: power of 2, or 0 */
static struct build_vnode_stats vc_stats;

/*
 * Replicas from..k-1 of name into out[0..k-from). "<name>#" is hashed once
 * and each replica continues with its decimal digits (the same bytes
 * snprintf("%s#%u") gives), counted up in place.
 */
static void hash_replicas(const char *name, __u32 from, __u32 k, __u32 *out)
{
	char prefix[CHLB_BE_NAME_LEN + 1], dig[12];
	size_t len = strnlen(name, CHLB_BE_NAME_LEN - 1);
	__u32 pre, v = from;
	int nd = 0;

	memcpy(prefix, name, len);
	prefix[len] = '#';
	pre = chlb_crc32c_update(CHLB_CRC32C_INIT, prefix, (__u32)len + 1);
	do { /* digits of from, most significant first */
		memmove(dig + 1, dig, (size_t)nd);
		dig[0] = (char)('0' + v % 10);
		nd++;
		v /= 10;
	} while (v);
	for (__u32 rep = from; rep < k; rep++) {
		int i = nd - 1;

		out[rep - from] =
		    chlb_fmix32(chlb_crc32c_update(pre, dig, (__u32)nd) ^ 0xffffffffu);
		while (i >= 0 && dig[i] == '9')
			dig[i--] = '0';
		if (i >= 0) {
			dig[i]++;
		} else {
			memmove(dig + 1, dig, (size_t)nd);
			dig[0] = '1';
			nd++;
		}
	}
}

static void vc_flush_locked(void)
{
	for (__u32 i = 0; i < vc_size; i++)
		free(vc_tab[i].h);
	free(vc_tab);
	vc_tab = NULL;
	vc_size = vc_names = vc_hashes = 0;
	vc_stats.flushes++;
}

/* The entry for name (found, or empty where it goes); NULL without a table. */
static struct vc_entry *vc_find(const char *name, size_t len)
{
	__u32 i;

	if (!vc_size)
		return NULL;
	i = chlb_fmix32(chlb_crc32c(name, (__u32)len)) & (vc_size - 1);
	while (vc_tab[i].name[0] && strcmp(vc_tab[i].name, name))
		i = (i + 1) & (vc_size - 1);
	return &vc_tab[i];
}

/* Room for one more name at load <= 1/2; false on no memory. */
static int vc_reserve(void)
{
	struct vc_entry *old = vc_tab;
	__u32 osize = vc_size, size = vc_size ? vc_size * 2 : 1024;

	if (vc_size && (vc_names + 1) * 2 <= vc_size)
		return 1;
	vc_tab = calloc(size, sizeof(*vc_tab));
	if (!vc_tab) {
		vc_tab = old;
		return 0;
	}
	vc_size = size;
	for (__u32 i = 0; i < osize; i++) {
		if (old[i].name[0]) {
			struct vc_entry *e = vc_find(old[i].name, strlen(old[i].name));

			*e = old[i];
		}
	}
	free(old);
	return 1;
}

void build_vnode_hashes(const char *name, __u32 k, __u32 *out)
{
	size_t len = strnlen(name, CHLB_BE_NAME_LEN - 1);
	struct vc_entry *e;
	int known;
	__u32 *h;

	pthread_mutex_lock(&vc_lock);
	e = vc_find(name, len);
	known = e && e->name[0];
	if (known && e->k >= k) {
		memcpy(out, e->h, (size_t)k * sizeof(*out));
		vc_stats.hits++;
		goto out;
	}
	vc_stats.misses++;
	if (k > VC_MAX_HASHES / 4) /* not worth holding */
		goto uncached;
	if (known ? vc_hashes - e->k + k > VC_MAX_HASHES
		  : vc_names + 1 > VC_MAX_NAMES || vc_hashes + k > VC_MAX_HASHES) {
		vc_flush_locked();
		known = 0;
	}
	if (!known && !vc_reserve())
		goto uncached;
	e = vc_find(name, len); /* the table may have moved */
	if (!e)
		goto uncached;
	/* a known name at a larger count: its first e->k positions are kept */
	h = realloc(known ? e->h : NULL, (size_t)k * sizeof(*h));
	if (!h)
		goto uncached;
	if (!known) {
		memcpy(e->name, name, len);
		e->name[len] = 0;
		e->k = 0;
		vc_names++;
	}
	hash_replicas(name, e->k, k, h + e->k);
	vc_hashes += k - e->k;
	e->h = h;
	e->k = k;
	memcpy(out, h, (size_t)k * sizeof(*out));
	goto out;
uncached:
	hash_replicas(name, 0, k, out);
out:
	pthread_mutex_unlock(&vc_lock);
}

void build_vnode_cache_flush(void)
{
	pthread_mutex_lock(&vc_lock);
	vc_flush_locked();
	pthread_mutex_unlock(&vc_lock);
}

void build_vnode_cache_stats(struct build_vnode_stats *st)
{
	pthread_mutex_lock(&vc_lock);
	*st = vc_stats;
	st->names = vc_names;
	st->hashes = vc_hashes;
	pthread_mutex_unlock(&vc_lock);
}
