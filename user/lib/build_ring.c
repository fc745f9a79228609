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
 * Sorting: the hashes are uniform, and coarse buckets (the top cbits bits,
 * the directory's bits less RING_DIR_EXTRA_BITS) hold about one vnode each.
 * The vnodes, in generation order (backends in name order, replicas
 * ascending), are first partitioned by their top PART_BITS bits (32
 * sequential streams), then each partition -- a contiguous run of directory
 * words and of pairs, small enough to stay in L2 -- is counted per coarse
 * bucket into cursors kept in its own directory words, scattered into its
 * buckets' pairs, and insertion-sorted by hash (buckets are already in
 * order, so only the few pairs sharing one move). Every step is stable, so
 * equal hashes stay in (name, replica) order: the same table as a comparison
 * sort on (hash, name, replica), in O(count + 2^cbits), without random
 * access to a MB-sized directory. The directory entries then come from one
 * pass over the partition's sorted vnodes (ring_dir_vnodes), not one over
 * its 2^bits buckets: most buckets are empty, and are written 16 at a time.
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

/*
 * ceil(log2(count)) + RING_DIR_EXTRA_BITS, capped: about 2^extra buckets per
 * vnode. A bucket is DIRECT (one word read, no search) when it holds no vnode
 * or only vnodes of its successor's backend, so with many backends the
 * DIRECT share is about the empty share, exp(-count / 2^bits): at 1000
 * backends x 160 vnodes (18 bits before the extra) 74% at one extra bit, 86%
 * at two (the cap of 20 bits: 4 MiB), and three is the same as two. Two:
 * each bit doubles the directory, its page faults and the fill in the
 * build, for a shrinking gain (one bit less costs 1 - 0.74 / 0.86 more
 * second reads).
 */
#define RING_DIR_EXTRA_BITS 2

static __u32 ring_dir_bits(__u32 count)
{
	__u32 bits = 0;

	while (bits < 32 && (1ull << bits) < count)
		bits++;
	bits += RING_DIR_EXTRA_BITS;
	if (bits > CHLB_RING_MAX_DIR_BITS)
		bits = CHLB_RING_MAX_DIR_BITS;
	return bits;
}

/*
 * Entry of a bucket holding vnodes [gs, i), whose successor is a vnode of
 * slot s: DIRECT when all of them are on s (and s fits in 31 bits), else
 * {lo, n}. Branch-free but for buckets of two or more vnodes (~1%): whether
 * a vnode's backend matches its successor's is random.
 */
static inline __u32 ring_dir_group(const __u32 *pair, __u32 gs, __u32 i, __u32 s)
{
	__u32 n = i - gs, same = pair[2 * gs + 1] == s, m;

	if (__builtin_expect(n > 1, 0))
		for (__u32 k = gs + 1; k < i; k++)
			same &= pair[2 * k + 1] == s;
	m = 0u - (same & ~s >> 31);
	CHLB_BARRIER_VAR(m);
	n = n < CHLB_RING_N_REST ? n : CHLB_RING_N_REST;
	return (m & (CHLB_RING_DIRECT | s)) | (~m & (n << CHLB_RING_N_SHIFT | gs));
}

/* Entry of an empty bucket whose successor is vnode i, of slot s. */
static inline __u32 ring_dir_empty(__u32 i, __u32 s)
{
	__u32 m = 0u - (~s >> 31);

	return (m & (CHLB_RING_DIRECT | s)) | (~m & i);
}

/*
 * dir[from, to) = v. Runs of empty buckets are short (~6 at 4 buckets per
 * vnode) and random in length: 16 words stored whatever the length (the
 * ones past `to` are rewritten later) mispredict less than a loop over the
 * run (measured: 16 beat 8 and a loop of 16-word blocks).
 */
static inline void ring_dir_fill(__u32 *dir, __u32 nb, __u32 from, __u32 to, __u32 v)
{
	if (to - from <= 16 && from + 16 <= nb) {
		for (__u32 k = 0; k < 16; k++)
			dir[from + k] = v;
		return;
	}
	for (; from < to; from++)
		dir[from] = v;
}

/*
 * The directory from the sorted vnodes [from, to), in order, continuing from
 * a pending bucket *fin holding vnodes [*gs, from): entries before *fin are
 * final. A bucket's entry is written when the next vnode outside it (its
 * successor) comes; the empty buckets before that vnode's bucket with it.
 */
static void ring_dir_vnodes(__u32 *dir, __u32 nb, __u32 shift, const __u32 *pair, __u32 from,
			    __u32 to, __u32 *fin, __u32 *gs)
{
	__u32 f = *fin, g = *gs;

	for (__u32 i = from; i < to; i++) {
		__u32 b = pair[2 * i] >> shift, s = pair[2 * i + 1];

		if (b == f)
			continue;
		dir[f] = ring_dir_group(pair, g, i, s);
		ring_dir_fill(dir, nb, f + 1, b, ring_dir_empty(i, s));
		f = b;
		g = i;
	}
	*fin = f;
	*gs = g;
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
	__u32 cbits, cshift, fin = 0,
			     gs = 0; /* buckets [0, fin) final; fin holds vnodes [gs, ..) */
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
	/*
	 * Header zeroed; the directory per partition below (in cache, not one
	 * 4 MB memset); the scatter writes all 2 * count pair words.
	 */
	rc = build_alloc_prefix(out, CHLB_ALGO_RING, base + 2 * count, CHLB_TBL_HDR_WORDS, err,
				errlen);
	if (rc)
		return rc;
	if (base > CHLB_TBL_HDR_WORDS + nb)
		out->words[base - 1] = 0; /* padding (never: nb is even) */
	hdr = (struct chlb_table_hdr *)out->words;
	dir = out->words + CHLB_TBL_HDR_WORDS; /* 2^bits words */
	pair = out->words + base;
	cbits = bits > RING_DIR_EXTRA_BITS ? bits - RING_DIR_EXTRA_BITS : 1;
	cshift = 32 - cbits;
	pb = cbits < PART_BITS ? cbits : PART_BITS;

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
	 * Sorting per partition on coarse buckets, the top cbits bits (about one
	 * vnode each): bucket c's count goes to cur[c + 1] (the last bucket's is
	 * not needed), cur[0] = the partition's first vnode, so after the prefix
	 * sums cur[c] is bucket c's first pair, the cursor of the scatter. The
	 * cursors live in the partition's own directory words, which are written
	 * only after its pairs are sorted.
	 */
	for (p = 0; p < (1u << pb); p++) {
		__u32 *cur = dir + (p << (bits - pb)), nc = 1u << (cbits - pb);
		__u32 c0 = p << (cbits - pb), ps = pstart[p], pe = pstart[p + 1];

		memset(cur, 0, (size_t)nc * sizeof(*cur));
		cur[0] = ps;
		for (g = ps; g < pe; g++) {
			d = ((__u32)(part[g] >> 32) >> cshift) - c0;
			if (d + 1 < nc)
				cur[d + 1]++;
		}
		for (d = 1; d < nc; d++)
			cur[d] += cur[d - 1];
		for (g = ps; g < pe; g++) {
			__u32 h = (__u32)(part[g] >> 32), at = cur[(h >> cshift) - c0]++;

			pair[2 * at] = h;
			pair[2 * at + 1] = (__u32)part[g];
		}
		sort_nearly_sorted(pair + 2 * ps, pe - ps);
		if (ps == 0 && pe > 0) {
			/* vnode 0: the empty buckets before it, then its own pending */
			fin = pair[0] >> shift;
			ring_dir_fill(dir, nb, 0, fin, ring_dir_empty(0, pair[1]));
			ps = 1;
		}
		ring_dir_vnodes(dir, nb, shift, pair, ps, pe, &fin, &gs);
	}
	/* the last bucket with vnodes and the empty ones past it: the successor is vnode 0 */
	dir[fin] = ring_dir_group(pair, gs, count, pair[1]);
	ring_dir_fill(dir, nb, fin + 1, nb, ring_dir_empty(0, pair[1]));
	hdr->count = count;
	hdr->dir_bits = bits;
	hdr->nbackends = live;
	return 0;
}
