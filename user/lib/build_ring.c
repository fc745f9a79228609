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
 * Sorting: the hashes are uniform, and a directory splits them by their top
 * `bits` bits into about one vnode per bucket. The vnodes, in generation
 * order (backends in name order, replicas ascending), are first partitioned
 * by their top PART_BITS bits (32 sequential streams), then each partition
 * -- a contiguous run of directory words and of pairs, small enough to stay
 * in L2 -- is counted per bucket straight into a directory (its prefix sums
 * are each bucket's first pair), scattered into its buckets' pairs, and
 * insertion-sorted by hash (buckets are already in order, so only the few
 * pairs sharing one move). Every step is stable, so equal hashes stay in
 * (name, replica) order: the same table as a comparison sort on (hash, name,
 * replica), in O(count + 2^bits), without random access to the whole
 * directory. (Buckets as coarse as the lines, ~5 vnodes each, made the
 * insertion sort 2 ms of a 5 ms build.) The lines are then written from the
 * directory and the sorted pairs in one sequential pass.
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
 * Scratch, kept per thread and grown, never shrunk: fresh arrays per build
 * cost as many page faults as the table itself. At most 24 MB (the 1M-vnode
 * limit): the vnodes' hashes in generation order, partitioned {hash, slot},
 * sorted {hash, slot} pairs (then RING_WRAP more: ring_line), and the
 * directory.
 */
#define RING_WRAP (CHLB_RING_LINE_HASHES + 2)

static __thread struct {
	__u32 *hash, *pair, *dir;
	__u64 *part;
	__u32 n, ndir;
} scratch;

static int grow(void *arrp, size_t size)
{
	void *p = realloc(*(void **)arrp, size);

	if (!p)
		return -1;
	*(void **)arrp = p;
	return 0;
}

static int scratch_get(__u32 n, __u32 ndir)
{
	if (ndir > scratch.ndir) {
		if (grow(&scratch.dir, (size_t)ndir * 4))
			return -1;
		scratch.ndir = ndir;
	}
	if (n <= scratch.n)
		return 0;
	if (grow(&scratch.hash, (size_t)n * 4) ||
	    grow(&scratch.pair, ((size_t)n + RING_WRAP) * 8) || grow(&scratch.part, (size_t)n * 8))
		return -1;
	scratch.n = n;
	return 0;
}

/* Sort buckets for count vnodes: ceil(log2(count)), about one vnode each. */
static __u32 ring_sort_bits(__u32 count)
{
	__u32 bits = 1;

	while (bits < CHLB_RING_MAX_DIR_BITS && (1u << bits) < count)
		bits++;
	return bits;
}

/*
 * Lines for count vnodes (never more than sort buckets): the fewest with at most 5 vnodes per line on
 * average. Per line the count is about Poisson(2.5-5): more than
 * CHLB_RING_LINE_HASHES, a spill, for ~1% of lines at 5, ~0.01% at 2.5;
 * 160k vnodes (1000 backends) take 32768 lines, 2 MB.
 */
static __u32 ring_line_bits(__u32 count)
{
	__u32 bits = 1;

	while (bits < CHLB_RING_MAX_DIR_BITS && (5ull << bits) < count)
		bits++;
	return bits;
}

/*
 * The line of the sorted vnodes [first, first + c). pair[] holds them as
 * {hash, slot} and, past the last, the first CHLB_RING_LINE_HASHES + 1 again
 * (the ring wraps; RING_WRAP covers every pair the loops read): so pair first + c is always the vnode after the line, and
 * the common case is a fixed-length loop with selects, no branch on c (which
 * varies from line to line and would be mispredicted). A spilled line's
 * vnodes go to spill from pair *nspill on.
 */
static void ring_line(__u32 *line, const __u32 *pair, __u32 first, __u32 c, __u32 *spill,
		      __u32 *nspill)
{
	const __u32 *v = pair + 2 * first;
	__u32 j;

	if (c > CHLB_RING_LINE_HASHES) {
		memset(line, 0, CHLB_RING_LINE_WORDS * sizeof(*line));
		line[0] = *nspill;
		line[1] = c;
		line[2] = v[2 * c + 1];
		line[CHLB_RING_LINE_WORDS - 1] = CHLB_RING_LINE_SPILL << 16;
		memcpy(spill + 2 * *nspill, v, (size_t)c * 8);
		*nspill += c;
		return;
	}
	for (j = 0; j < CHLB_RING_LINE_HASHES; j++)
		line[j] = j < c ? v[2 * j] : 0xffffffffu;
	/* halves 2k and 2k + 1: the slots of vnodes j <= c, else 0 */
	for (j = 0; j < CHLB_RING_LINE_WORDS - CHLB_RING_LINE_HASHES; j++)
		line[CHLB_RING_LINE_HASHES + j] =
		    (2 * j <= c ? v[4 * j + 1] : 0) | (2 * j + 1 <= c ? v[4 * j + 3] : 0) << 16;
	line[CHLB_RING_LINE_WORDS - 1] |= c << 16;
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
	__u32 *hash, *dir, *pair, count, live = 0, bits, shift, nb, g, d, pb, p, nspill = 0;
	__u32 lbits, step, first, c;
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
	bits = ring_sort_bits(count);
	lbits = ring_line_bits(count);
	step = 1u << (bits - lbits); /* sort buckets per line */
	shift = 32 - bits;
	nb = 1u << bits;
	if (scratch_get(count, nb + 1))
		return build_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	hash = scratch.hash;
	part = scratch.part;
	pair = scratch.pair;
	dir = scratch.dir;
	memset(dir, 0, (nb + 1) * sizeof(*dir));
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
	for (g = 0; g < RING_WRAP; g++)
		memcpy(pair + 2 * (count + g), pair + 2 * (g % count), 8);
	/* the table: header, lines, the spilled lines' vnodes; line d = buckets [d, d + 1) * step */
	for (d = 0; d < nb; d += step)
		if (dir[d + step] - dir[d] > CHLB_RING_LINE_HASHES)
			nspill += dir[d + step] - dir[d];
	rc = build_alloc_prefix(out, CHLB_ALGO_RING, chlb_ring_base(lbits) + 2 * nspill,
				CHLB_RING_LINES, err, errlen);
	if (rc)
		return rc;
	nspill = 0;
	for (d = 0; d < nb; d += step) {
		first = dir[d];
		c = dir[d + step] - first;
		ring_line(out->words + CHLB_RING_LINES + d / step * CHLB_RING_LINE_WORDS, pair,
			  first, c, out->words + chlb_ring_base(lbits), &nspill);
	}
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->count = count;
	hdr->dir_bits = lbits;
	hdr->nbackends = live;
	return 0;
}

int chlb_ring_vnodes(const struct chlb_table *t, __u32 *hash, __u32 *slot)
{
	const struct chlb_table_hdr *h = chlb_table_header(t);
	__u32 base, v = 0;

	if (t->nwords < CHLB_RING_LINES || h->algo != CHLB_ALGO_RING || !h->dir_bits ||
	    h->dir_bits > CHLB_RING_MAX_DIR_BITS || chlb_ring_base(h->dir_bits) > t->nwords)
		return h->count ? -EINVAL : 0;
	base = chlb_ring_base(h->dir_bits);
	for (__u32 d = 0; d < 1u << h->dir_bits; d++) {
		const __u32 *line = t->words + CHLB_RING_LINES + d * CHLB_RING_LINE_WORDS;
		__u32 c = line[CHLB_RING_LINE_WORDS - 1] >> 16, spilled = c == CHLB_RING_LINE_SPILL;
		const __u32 *at = spilled ? t->words + base + 2 * (__u64)line[0] : NULL;

		if (spilled)
			c = line[1];
		if (c > h->count - v || (spilled && ((__u64)line[0] + c) * 2 > t->nwords - base))
			return -EINVAL;
		for (__u32 j = 0; j < c; j++, v++) {
			if (hash)
				hash[v] = spilled ? at[2 * j] : line[j];
			if (slot)
				slot[v] =
				    spilled ? at[2 * j + 1]
					    : line[CHLB_RING_LINE_HASHES + j / 2] >> (j & 1) * 16 &
						  0xffff;
		}
	}
	return v == h->count ? 0 : -EINVAL;
}
