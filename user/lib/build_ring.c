// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ring builder. Backend i at weight w gets K = vnodes * w / 100 vnodes
 * (rounded, at least 1 when w > 0) at positions
 * fmix32(crc32c("<name>#<replica>")). Vnodes are sorted by (hash, name,
 * replica): a function of the set alone, so every host and every insertion
 * order gives the same ring, and equal hashes (birthday collisions happen at
 * ~1e5 vnodes) still sort the same way everywhere.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "build_int.h"

/*
 * Sorting: the hashes are uniform, and the directory splits them by their top
 * `bits` bits into about one vnode per bucket. So the vnodes are counted per
 * bucket straight into the directory words (their prefix sums are the
 * directory), scattered into their bucket's pairs in generation order
 * (backends in name order, replicas ascending), and the pairs are then
 * insertion-sorted by hash: buckets are already in order, so only the few
 * pairs sharing a bucket move. Both steps are stable, so equal hashes stay in
 * (name, replica) order: the same table as a comparison sort on (hash, name,
 * replica), in O(count + 2^bits).
 */
static void sort_nearly_sorted(__u32 *pair, __u32 count)
{
	for (__u32 i = 1; i < count; i++) {
		__u32 h = pair[2 * i], s, j = i;

		if (pair[2 * (i - 1)] <= h)
			continue;
		s = pair[2 * i + 1];
		for (; j > 0 && pair[2 * (j - 1)] > h; j--) {
			pair[2 * j] = pair[2 * (j - 1)];
			pair[2 * j + 1] = pair[2 * (j - 1) + 1];
		}
		pair[2 * j] = h;
		pair[2 * j + 1] = s;
	}
}

/*
 * Scratch for the vnode positions in generation order, kept per thread and
 * grown, never shrunk: a fresh 640 KB (at 160k vnodes) per build cost as
 * many page faults as the table itself. At most CHLB_RING_MAX_VNODES (4 MB).
 */
static __thread __u32 *scratch;
static __thread __u32 scratch_n;

static __u32 *scratch_get(__u32 n)
{
	__u32 *p;

	if (n <= scratch_n)
		return scratch;
	p = realloc(scratch, (size_t)n * sizeof(*p));
	if (!p)
		return NULL;
	scratch = p;
	scratch_n = n;
	return p;
}

static __u32 ring_dir_bits(__u32 count)
{
	__u32 bits = 0;

	/* ceil(log2(count)): about one vnode per directory bucket */
	while (bits < 32 && (1ull << bits) < count)
		bits++;
	if (bits < 1)
		bits = 1;
	if (bits > CHLB_RING_MAX_DIR_BITS)
		bits = CHLB_RING_MAX_DIR_BITS;
	return bits;
}

int build_ring(const struct chlb_table_spec *spec, const struct chlb_be *be, __u32 n,
	       const __u32 *byname, struct chlb_table *out, char *err, size_t errlen)
{
	__u32 vnodes = spec->vnodes ? spec->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 *hash, *dir, *pair, count, live = 0, bits, shift, nb, base, g, d;
	struct chlb_table_hdr *hdr;
	__u64 total = 0;
	int rc;

	if (vnodes > CHLB_RING_MAX_VNODES)
		return build_err(err, errlen, -E2BIG, "%u vnodes per backend: at most %u", vnodes,
				 CHLB_RING_MAX_VNODES);
	for (__u32 i = 0; i < n; i++) {
		__u64 k = ((__u64)vnodes * be[i].weight + 50) / 100;

		if (be[i].weight)
			total += k ? k : 1;
	}
	if (total > CHLB_RING_MAX_VNODES)
		return build_err(err, errlen, -E2BIG,
				 "ring of %llu vnodes: at most %u (lower --vnodes or weights)",
				 (unsigned long long)total, CHLB_RING_MAX_VNODES);
	if (total == 0)
		return build_alloc(out, CHLB_ALGO_RING, CHLB_TBL_HDR_WORDS, err, errlen);

	count = (__u32)total;
	bits = ring_dir_bits(count);
	shift = 32 - bits;
	nb = 1u << bits;
	base = chlb_ring_base(bits);
	hash = scratch_get(count);
	if (!hash)
		return build_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	rc = build_alloc(out, CHLB_ALGO_RING, base + 2 * count, err, errlen);
	if (rc)
		return rc;
	hdr = (struct chlb_table_hdr *)out->words;
	dir = out->words + CHLB_TBL_HDR_WORDS; /* zeroed: 2^bits + 1 words */
	pair = out->words + base;

	/*
	 * Hashes in generation order; bucket d's count goes to dir[d + 2] so that
	 * after the prefix sums dir[d + 1] is bucket d's first pair, the cursor of
	 * the scatter, which leaves it at bucket d + 1's first pair: the
	 * directory. The last bucket's count is not needed (dir[nb] = count).
	 */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_be *b = &be[byname[r]];
		__u64 k = ((__u64)vnodes * b->weight + 50) / 100;

		if (!b->weight)
			continue;
		k = k ? k : 1;
		live++;
		build_vnode_hashes(b->name, (__u32)k, hash + g);
		for (__u32 e = g + (__u32)k; g < e; g++) {
			d = hash[g] >> shift;
			if (d + 2 <= nb)
				dir[d + 2]++;
		}
	}
	for (d = 2; d <= nb; d++)
		dir[d] += dir[d - 1];
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_be *b = &be[byname[r]];
		__u64 k = ((__u64)vnodes * b->weight + 50) / 100;

		if (!b->weight)
			continue;
		for (__u32 e = g + (__u32)(k ? k : 1); g < e; g++) {
			__u32 at = dir[(hash[g] >> shift) + 1]++;

			pair[2 * at] = hash[g];
			pair[2 * at + 1] = b->slot;
		}
	}
	sort_nearly_sorted(pair, count);
	hdr->count = count;
	hdr->dir_bits = bits;
	hdr->nbackends = live;
	return 0;
}
