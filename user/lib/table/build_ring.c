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

#include "table/build_ring_int.h"

/*
 * Sorting: the hashes are uniform. The vnodes, in generation order
 * (backends in name order, replicas ascending), are first partitioned by
 * their top PART_BITS bits (32 sequential streams). Each partition is then
 * counted per sort bucket (its top `bits` bits, about one vnode per bucket)
 * into a small directory whose prefix sums are each bucket's first pair,
 * scattered into its buckets' pairs, and insertion-sorted by hash (buckets
 * are already in order, so only the few pairs sharing one move). Every step
 * is stable, so equal hashes stay in (name, replica) order: the same table as
 * a comparison sort on (hash, name, replica), in O(count + 2^bits). A
 * partition's pairs and directory are small enough to stay in L2, and its
 * lines are written from them at once: the table (2 MB at 160k vnodes) is
 * written once, in order, and nothing else of that size is.
 */
/*
 * 32 partitions, not 256: chlbd builds after sitting idle, with its caches
 * gone cold, and 256 write streams into the partition array defeat the
 * hardware prefetcher (docs/performance.md has the timings). Any width gives the
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
 * Partition p's vnodes (part[0, np)), sorted into ring_scratch.pair, then its
 * lines [l0, l0 + nl) written. Lines whose next vnode lies in a later
 * partition wait in [*pending, ...) for the next partition with vnodes.
 */
static void ring_partition(struct ring_out *o, const __u64 *part, __u32 np, __u32 bits, __u32 lbits,
			   __u32 pb, __u32 p, __u32 *pending, __u32 *first_slot)
{
	__u32 nbp = 1u << (bits - pb), lo = p << (bits - pb), shift = 32 - bits;
	__u32 step = 1u << (bits - lbits), l0 = p << (lbits - pb), nl = 1u << (lbits - pb);
	__u32 *dir = ring_scratch.dir, *pair = ring_scratch.pair, g, d;

	/*
	 * Bucket d's count goes to dir[d + 2], so after the prefix sums dir[d + 1]
	 * is bucket d's first pair, the cursor of the scatter, which leaves it at
	 * bucket d + 1's first pair: the directory, dir[nbp] = np.
	 */
	memset(dir, 0, (nbp + 2) * sizeof(*dir));
	for (g = 0; g < np; g++)
		dir[((__u32)(part[g] >> 32) >> shift) - lo + 2]++;
	for (d = 2; d <= nbp; d++)
		dir[d] += dir[d - 1];
	for (g = 0; g < np; g++) {
		__u32 h = (__u32)(part[g] >> 32), at = dir[(h >> shift) - lo + 1]++;

		pair[2 * at] = h;
		pair[2 * at + 1] = (__u32)part[g];
	}
	sort_nearly_sorted(pair, np);
	if (np) {
		if (*pending != RING_NONE)
			ring_patch_after(o, *pending, l0, pair[1]);
		*pending = RING_NONE;
		if (*first_slot == RING_NONE)
			*first_slot = pair[1];
	}
	for (__u32 l = 0; l < nl; l++) {
		__u32 first = dir[l * step], c = dir[(l + 1) * step] - first;

		if (first + c >= np && *pending == RING_NONE)
			*pending = l0 + l; /* the vnode after it is in a later partition */
		ring_line(o, l0 + l, pair + 2 * first, c);
	}
}

int build_ring(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	       const __u32 *byname, struct chlb_table *out, char *err, size_t errlen)
{
	__u32 vnodes = spec->vnodes ? spec->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 pstart[(1u << PART_BITS) + 1] = { 0 }, pcur[(1u << PART_BITS) + 1];
	__u32 *hash, *per_line, count, live = 0, bits, lbits, g, pb, p, biggest = 0;
	__u32 pending = RING_NONE, first_slot = RING_NONE;
	struct ring_out o = { .t = out };
	__u64 *part, total = 0;
	int rc;

	if (vnodes > CHLB_RING_MAX_VNODES)
		return chlb_err(err, errlen, -E2BIG, "%u vnodes per backend: at most %u", vnodes,
				CHLB_RING_MAX_VNODES);
	for (__u32 i = 0; i < n; i++)
		total += ring_vnode_count(vnodes, be[i].weight);
	if (total > CHLB_RING_MAX_VNODES)
		return chlb_err(err, errlen, -E2BIG,
				"ring of %llu vnodes: at most %u (lower --vnodes or weights)",
				(unsigned long long)total, CHLB_RING_MAX_VNODES);
	if (total == 0)
		return build_alloc(out, CHLB_ALGO_RING, CHLB_TBL_HDR_WORDS, err, errlen);

	count = (__u32)total;
	if (spec->prev) {
		rc = ring_from_prev(spec, be, n, byname, count, out, err, errlen);
		if (rc != -EAGAIN) {
			ring_stats.from_prev += !rc;
			return rc;
		}
	}
	/*
	 * Sort buckets: about one vnode each. Lines (never more than sort
	 * buckets): at most 5 vnodes per line on average. Per line the count is
	 * about Poisson(2.5-5): more than CHLB_RING_LINE_HASHES, a spill, for ~1%
	 * of lines at 5, ~0.01% at 2.5; 160k vnodes (1000 backends) take 32768
	 * lines, 2 MB.
	 */
	bits = ring_bits(count, 1);
	lbits = ring_bits(count, 5);
	pb = lbits < PART_BITS ? lbits : PART_BITS; /* whole lines per partition */
	if (ring_grow(&ring_scratch.hash, &ring_scratch.nhash, count, 4) ||
	    ring_grow(&ring_scratch.part, &ring_scratch.npart, count, 8) ||
	    ring_grow(&ring_scratch.per_line, &ring_scratch.nlines, 1u << lbits,
		      sizeof(*ring_scratch.per_line)))
		return chlb_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	hash = ring_scratch.hash;
	part = ring_scratch.part;
	per_line = ring_scratch.per_line;
	memset(per_line, 0, (sizeof(*per_line)) << lbits);

	/* positions in generation order, counted per partition and per line */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)ring_vnode_count(vnodes, b->weight); /* <= total */

		if (!k)
			continue;
		live++;
		build_vnode_hashes(b->name, k, hash + g);
		for (__u32 e = g + k; g < e; g++) {
			pstart[(hash[g] >> (32 - pb)) + 1]++;
			per_line[hash[g] >> (32 - lbits)]++;
		}
	}
	for (p = 1; p <= (1u << pb); p++) {
		if (pstart[p] > biggest)
			biggest = pstart[p];
		pstart[p] += pstart[p - 1];
	}
	if (ring_grow(&ring_scratch.pair, &ring_scratch.npair, biggest + LINE_READ, 8) ||
	    ring_grow(&ring_scratch.dir, &ring_scratch.ndir, (1u << (bits - pb)) + 2, 4))
		return chlb_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	memcpy(pcur, pstart, sizeof(pcur));
	/* partitioned, stably: {hash, slot} */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)ring_vnode_count(vnodes, b->weight); /* <= total */

		for (__u32 e = g + k; g < e; g++)
			part[pcur[hash[g] >> (32 - pb)]++] = (__u64)hash[g] << 32 | b->slot;
	}

	/* the table: header, lines, spilled vnodes */
	rc = ring_alloc(&o, per_line, lbits, err, errlen);
	if (rc)
		return rc;
	ring_stats.from_nothing++;
	for (p = 0; p < (1u << pb); p++)
		ring_partition(&o, part + pstart[p], pstart[p + 1] - pstart[p], bits, lbits, pb, p,
			       &pending, &first_slot);
	/* the last lines wrap around to the ring's first vnode */
	if (pending != RING_NONE)
		ring_patch_after(&o, pending, 1u << lbits, first_slot);
	ring_finish(out, count, lbits, live);
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
		const __u32 *line = t->words + chlb_ring_line_at(d);
		__u32 c = chlb_ring_half(line, CHLB_RING_COUNT_HALF),
		      spilled = c == CHLB_RING_LINE_SPILL;
		const __u32 *at = spilled ? t->words + base + 2 * (__u64)line[0] : NULL;

		if (spilled)
			c = line[1];
		if (c > h->count - v || (spilled && ((__u64)line[0] + c) * 2 > t->nwords - base))
			return -EINVAL;
		for (__u32 j = 0; j < c; j++, v++) {
			if (hash)
				hash[v] = spilled ? at[2 * j] : line[j];
			if (slot)
				slot[v] = spilled ? at[2 * j + 1] : chlb_ring_half(line, j);
		}
	}
	return v == h->count ? 0 : -EINVAL;
}
