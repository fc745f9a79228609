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
 * `bits` bits into about one vnode per bucket. The vnodes, in generation
 * order (backends in name order, replicas ascending), are first partitioned
 * by their top PART_BITS bits (32 sequential streams), then each partition
 * -- a contiguous run of directory words and of pairs, small enough to stay
 * in L2 -- is counted per bucket straight into the directory words (their
 * prefix sums are the directory), scattered into its buckets' pairs, and
 * insertion-sorted by hash (buckets are already in order, so only the few
 * pairs sharing one move). Every step is stable, so equal hashes stay in
 * (name, replica) order: the same table as a comparison sort on (hash, name,
 * replica), in O(count + 2^bits), without random access to a 1 MB directory.
 */
/*
 * 32 partitions, not 256: chlbd builds after sitting idle, with its caches
 * gone cold, and 256 write streams into the partition array defeat the
 * hardware prefetcher (a 1000-backend, 160k-vnode build after a 150 ms sleep:
 * ~4.0 ms at 8 bits, ~2.8 ms at 5; warm, both ~2 ms). Any width gives the
 * same table: every step is stable.
 */
#define PART_BITS 5

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
 * Scratch for the vnodes in generation order and partitioned, kept per
 * thread and grown, never shrunk: fresh arrays per build cost as many page
 * faults as the table itself. At most 12 MB (the 1M-vnode limit).
 */
static __thread __u32 *scratch_h;
static __thread __u64 *scratch_v;
static __thread __u32 scratch_n;

static int scratch_get(__u32 n)
{
	__u32 *h;
	__u64 *v;

	if (n <= scratch_n)
		return 0;
	h = realloc(scratch_h, (size_t)n * sizeof(*h));
	if (h)
		scratch_h = h;
	v = realloc(scratch_v, (size_t)n * sizeof(*v));
	if (v)
		scratch_v = v;
	if (!h || !v)
		return -1;
	scratch_n = n;
	return 0;
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

/* Vnodes of a backend: vnodes per weight 100, at least 1 unless drained (weight 0). */
static __u64 vnode_count(__u32 vnodes, __u32 weight)
{
	__u64 k = ((__u64)vnodes * weight + 50) / 100;

	return weight && !k ? 1 : k;
}

int build_ring(const struct chlb_table_spec *spec, const struct chlb_be *be, __u32 n,
	       const __u32 *byname, struct chlb_table *out, char *err, size_t errlen)
{
	__u32 vnodes = spec->vnodes ? spec->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 pstart[(1u << PART_BITS) + 1] = { 0 }, pcur[(1u << PART_BITS) + 1];
	__u32 *hash, *dir, *pair, count, live = 0, bits, shift, nb, base, g, d, pb, p;
	__u64 *part;
	struct chlb_table_hdr *hdr;
	__u64 total = 0;
	int rc;

	if (vnodes > CHLB_RING_MAX_VNODES)
		return build_err(err, errlen, -E2BIG, "%u vnodes per backend: at most %u", vnodes,
				 CHLB_RING_MAX_VNODES);
	for (__u32 i = 0; i < n; i++)
		total += vnode_count(vnodes, be[i].weight);
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
	if (scratch_get(count))
		return build_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	hash = scratch_h;
	part = scratch_v;
	/* header and directory zeroed; the scatter writes all 2 * count pair words */
	rc = build_alloc_prefix(out, CHLB_ALGO_RING, base + 2 * count, base, err, errlen);
	if (rc)
		return rc;
	hdr = (struct chlb_table_hdr *)out->words;
	dir = out->words + CHLB_TBL_HDR_WORDS; /* zeroed: 2^bits + 1 words */
	pair = out->words + base;
	pb = bits < PART_BITS ? bits : PART_BITS;

	/* positions in generation order, counted per partition */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_be *b = &be[byname[r]];
		__u32 k = (__u32)vnode_count(vnodes, b->weight); /* <= total */

		if (!k)
			continue;
		live++;
		build_vnode_hashes(b->name, k, hash + g);
		for (__u32 e = g + k; g < e; g++)
			pstart[(hash[g] >> (32 - pb)) + 1]++;
	}
	for (p = 1; p <= (1u << pb); p++)
		pstart[p] += pstart[p - 1];
	memcpy(pcur, pstart, sizeof(pcur));
	/* partitioned, stably: {hash, slot} */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_be *b = &be[byname[r]];
		__u32 k = (__u32)vnode_count(vnodes, b->weight); /* <= total */

		for (__u32 e = g + k; g < e; g++)
			part[pcur[hash[g] >> (32 - pb)]++] = (__u64)hash[g] << 32 | b->slot;
	}
	/*
	 * Per partition (buckets [lo, hi)): bucket d's count goes to dir[d + 2], so
	 * after the prefix sums dir[d + 1] is bucket d's first pair, the cursor of
	 * the scatter, which leaves it at bucket d + 1's first pair: the
	 * directory. dir[lo + 1] is final from the partition before (dir[1] = 0);
	 * the last bucket's count is not needed (dir[nb] = count).
	 */
	for (p = 0; p < (1u << pb); p++) {
		__u32 lo = p << (bits - pb), hi = lo + (1u << (bits - pb));
		__u32 top = hi + 1 < nb ? hi + 1 : nb;

		for (g = pstart[p]; g < pstart[p + 1]; g++) {
			d = (__u32)(part[g] >> 32) >> shift;
			if (d + 2 <= nb)
				dir[d + 2]++;
		}
		for (d = lo + 2; d <= top; d++)
			dir[d] += dir[d - 1];
		for (g = pstart[p]; g < pstart[p + 1]; g++) {
			__u32 h = (__u32)(part[g] >> 32), at = dir[(h >> shift) + 1]++;

			pair[2 * at] = h;
			pair[2 * at + 1] = (__u32)part[g];
		}
		sort_nearly_sorted(pair + 2 * pstart[p], pstart[p + 1] - pstart[p]);
	}
	hdr->count = count;
	hdr->dir_bits = bits;
	hdr->nbackends = live;
	return 0;
}
