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

#include "table/build_int.h"

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
/* ring_line reads the pairs of vnodes first .. first + 11, used or not */
#define LINE_READ (CHLB_RING_LINE_HASHES + 2)
#define NONE	  0xffffffffu

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

static __thread struct build_ring_stats stats;

void build_ring_stats(struct build_ring_stats *st)
{
	*st = stats;
}

/* A vnode of a backend the previous ring did not have (ring_from_prev). */
struct added_vnode {
	__u32 hash, rank, replica, slot; /* rank: the backend's place in name order */
};

/*
 * Scratch, kept per thread and grown, never shrunk: fresh arrays per build
 * cost as many page faults as the table itself. The vnodes' hashes in
 * generation order and partitioned {hash, slot} (at most 12 MB, the
 * 1M-vnode limit); vnodes per line; one partition's sorted pairs and its
 * directory.
 */
static __thread struct {
	__u32 *hash, *pair, *dir, *per_line;
	__u64 *part;
	__u32 nhash, npair, ndir, nlines, npart; /* capacities */
	/* ring_from_prev: the added vnodes, per-slot marks */
	struct added_vnode *added;
	__u32 nadded;
	__s32 *slot_prev, *slot_rank; /* CHLB_MAX_BACKENDS each, -1 where unused */
} scratch;

static int grow(void *arrp, __u32 *have, __u32 want, size_t size)
{
	void *p;

	if (want <= *have)
		return 0;
	p = realloc(*(void **)arrp, want * size);
	if (!p)
		return -ENOMEM;
	*(void **)arrp = p;
	*have = want;
	return 0;
}

/* The table being written: lines, then the spilled vnodes. */
struct ring_out {
	struct chlb_table *t;
	__u32 base, nspill;
};

static __u32 *ring_line_at(struct ring_out *o, __u32 l)
{
	return o->t->words + chlb_ring_line_at(l);
}

/*
 * Line l from its c sorted vnodes v[] (pairs {hash, slot}), v[c] being the
 * vnode after them (or not yet known: ring_patch_after). v[] has LINE_READ
 * readable pairs whatever c is, so the common case is a fixed-length loop
 * with masks, no branch on c (which varies from line to line and would be
 * mispredicted).
 */
static void ring_line(struct ring_out *o, __u32 l, const __u32 *v, __u32 c)
{
	__u32 *line = ring_line_at(o, l), j;

	if (c > CHLB_RING_LINE_HASHES) {
		memset(line, 0, CHLB_RING_LINE_WORDS * sizeof(*line));
		line[0] = o->nspill;
		line[1] = c;
		line[2] = v[2 * c + 1];
		line[CHLB_RING_LINE_WORDS - 1] = CHLB_RING_LINE_SPILL << 16;
		memcpy(o->t->words + o->base + 2 * o->nspill, v, (size_t)c * 8);
		o->nspill += c;
		return;
	}
	/*
	 * hashes j >= c are padding (all ones); halves j > c are 0. Slots are
	 * masked to 16 bits: v[c] may be a pair not yet written (patched later).
	 */
	for (j = 0; j < CHLB_RING_LINE_HASHES; j++)
		line[j] = v[2 * j] | -(__u32)(j >= c);
	for (j = 0; j < 2 * (CHLB_RING_LINE_WORDS - CHLB_RING_LINE_HASHES); j += 2)
		line[CHLB_RING_LINE_HASHES + j / 2] = (v[2 * j + 1] & 0xffff & -(__u32)(j <= c)) |
						      (v[2 * j + 3] & 0xffff & -(__u32)(j + 1 <= c))
							  << 16;
	line[CHLB_RING_LINE_WORDS - 1] |= c << 16;
}

/* Lines [from, to) were written before the vnode after them was known: it is slot's. */
static void ring_patch_after(struct ring_out *o, __u32 from, __u32 to, __u32 slot)
{
	for (__u32 l = from; l < to; l++) {
		__u32 *line = ring_line_at(o, l), c = chlb_ring_half(line, CHLB_RING_COUNT_HALF);

		if (c == CHLB_RING_LINE_SPILL)
			line[2] = slot;
		else
			line[CHLB_RING_LINE_HASHES + c / 2] =
			    (line[CHLB_RING_LINE_HASHES + c / 2] & ~(0xffffu << (c & 1) * 16)) |
			    slot << (c & 1) * 16;
	}
}

/* The fewest bits >= 1 for which count vnodes are at most `per` per 2^bits slices. */
static __u32 ring_bits(__u32 count, __u32 per)
{
	__u32 bits = 1;

	while (bits < CHLB_RING_MAX_DIR_BITS && ((__u64)per << bits) < count)
		bits++;
	return bits;
}

/* Vnodes of a backend: vnodes per weight 100, at least 1 unless drained (weight 0). */
static __u64 vnode_count(__u32 vnodes, __u32 weight)
{
	__u64 k = ((__u64)vnodes * weight + 50) / 100;

	return weight && !k ? 1 : k;
}

/*
 * Partition p's vnodes (part[0, np)), sorted into scratch.pair, then its
 * lines [l0, l0 + nl) written. Lines whose next vnode lies in a later
 * partition wait in [*pending, ...) for the next partition with vnodes.
 */
static void ring_partition(struct ring_out *o, const __u64 *part, __u32 np, __u32 bits, __u32 lbits,
			   __u32 pb, __u32 p, __u32 *pending, __u32 *first_slot)
{
	__u32 nbp = 1u << (bits - pb), lo = p << (bits - pb), shift = 32 - bits;
	__u32 step = 1u << (bits - lbits), l0 = p << (lbits - pb), nl = 1u << (lbits - pb);
	__u32 *dir = scratch.dir, *pair = scratch.pair, g, d;

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
		if (*pending != NONE)
			ring_patch_after(o, *pending, l0, pair[1]);
		*pending = NONE;
		if (*first_slot == NONE)
			*first_slot = pair[1];
	}
	for (__u32 l = 0; l < nl; l++) {
		__u32 first = dir[l * step], c = dir[(l + 1) * step] - first;

		if (first + c >= np && *pending == NONE)
			*pending = l0 + l; /* the vnode after it is in a later partition */
		ring_line(o, l0 + l, pair + 2 * first, c);
	}
}

/*
 * The table for 2^lbits lines of per_line[] vnodes each: the header and
 * lines' words zeroed, room for the spilled vnodes after them (o->base).
 */
static int ring_alloc(struct ring_out *o, const __u32 *per_line, __u32 lbits, char *err,
		      size_t errlen)
{
	__u32 nspill = 0;

	for (__u32 l = 0; l < 1u << lbits; l++)
		if (per_line[l] > CHLB_RING_LINE_HASHES)
			nspill += per_line[l];
	o->base = chlb_ring_base(lbits);
	return build_alloc_prefix(o->t, CHLB_ALGO_RING, o->base + 2 * nspill, CHLB_RING_LINES, err,
				  errlen);
}

/* The header of a ring whose lines are written. */
static void ring_finish(struct chlb_table *out, __u32 count, __u32 lbits, __u32 live)
{
	struct chlb_table_hdr *hdr = (struct chlb_table_hdr *)out->words;

	hdr->count = count;
	hdr->dir_bits = lbits;
	hdr->nbackends = live;
}

/*
 * Lines and spill from all count vnodes, sorted (pair: {hash, slot}, with
 * LINE_READ readable pairs past the last), per_line[] counted: what
 * ring_partition writes, partition by partition, from the same vnodes.
 */
static int ring_write_sorted(struct chlb_table *out, const __u32 *pair, __u32 count, __u32 lbits,
			     __u32 live, char *err, size_t errlen)
{
	const __u32 *per_line = scratch.per_line;
	struct ring_out o = { .t = out };
	__u32 first = 0, pending = NONE;
	int rc;

	rc = ring_alloc(&o, per_line, lbits, err, errlen);
	if (rc)
		return rc;
	for (__u32 l = 0; l < 1u << lbits; l++) {
		__u32 c = per_line[l];

		if (first + c >= count && pending == NONE)
			pending = l; /* the vnode after it is the ring's first */
		ring_line(&o, l, pair + 2 * first, c);
		first += c;
	}
	if (pending != NONE)
		ring_patch_after(&o, pending, 1u << lbits, pair[1]);
	ring_finish(out, count, lbits, live);
	return 0;
}

static int cmp_added(const void *a, const void *b)
{
	const struct added_vnode *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->replica < y->replica ? -1 : x->replica > y->replica;
}

/* Vnode g of the ring being written: {hash, slot}, counted in its line. */
static void put_vnode(__u32 g, __u32 hash, __u32 slot, __u32 lbits)
{
	scratch.pair[2 * g] = hash;
	scratch.pair[2 * g + 1] = slot;
	scratch.per_line[hash >> (32 - lbits)]++;
}

/* Merging a previous ring's vnodes with the added ones (merge_vnodes). */
struct merge {
	const __s32 *rank_of;
	__u32 nadd, count, lbits;
	__u32 g, a; /* vnodes written, added ones taken */
};

/*
 * A previous vnode: the added ones before it (a smaller hash, or the same
 * and a name sorting first), then it. On locals (*g, *a), inlined: through
 * struct merge every store into the pairs could alias them.
 */
static inline __attribute__((always_inline)) void merge_one(const struct merge *m, __u32 *g,
							    __u32 *a, __u32 h, __u32 sl)
{
	const struct added_vnode *add = scratch.added;

	if (sl >= CHLB_MAX_BACKENDS || m->rank_of[sl] < 0)
		return; /* a backend that left or changed */
	while (*a < m->nadd && *g < m->count &&
	       (add[*a].hash < h || (add[*a].hash == h && add[*a].rank < (__u32)m->rank_of[sl]))) {
		put_vnode((*g)++, add[*a].hash, add[*a].slot, m->lbits);
		(*a)++;
	}
	if (*g < m->count)
		put_vnode((*g)++, h, sl, m->lbits);
}

/*
 * The previous ring's vnodes, read from its lines and spill in order (as
 * chlb_ring_vnodes reads them, without a copy: the table is read once), of
 * the backends kept merged with the added ones into scratch.pair: at most
 * m->count, ordered by (hash, name, replica); m->g and m->a say how many
 * were written and taken. -EINVAL: a malformed table.
 */
static int merge_vnodes(const struct chlb_table *t, struct merge *m)
{
	const struct chlb_table_hdr *hdr = chlb_table_header(t);
	__u32 base, seen = 0, g = 0, a = 0;

	if (t->nwords < CHLB_RING_LINES || !hdr->dir_bits ||
	    hdr->dir_bits > CHLB_RING_MAX_DIR_BITS || chlb_ring_base(hdr->dir_bits) > t->nwords)
		return -EINVAL;
	base = chlb_ring_base(hdr->dir_bits);
	for (__u32 d = 0; d < 1u << hdr->dir_bits; d++) {
		const __u32 *line = t->words + chlb_ring_line_at(d);
		__u32 c = chlb_ring_half(line, CHLB_RING_COUNT_HALF);

		if (c == CHLB_RING_LINE_SPILL) {
			const __u32 *at = t->words + base + 2 * (__u64)line[0];

			c = line[1];
			if (c > hdr->count - seen || ((__u64)line[0] + c) * 2 > t->nwords - base)
				return -EINVAL;
			for (__u32 j = 0; j < c; j++)
				merge_one(m, &g, &a, at[2 * j], at[2 * j + 1]);
		} else {
			if (c > hdr->count - seen)
				return -EINVAL;
			for (__u32 j = 0; j < c; j++)
				merge_one(m, &g, &a, line[j], chlb_ring_half(line, j));
		}
		seen += c;
	}
	for (; a < m->nadd && g < m->count; a++)
		put_vnode(g++, scratch.added[a].hash, scratch.added[a].slot, m->lbits);
	m->g = g;
	m->a = a;
	return seen == hdr->count ? 0 : -EINVAL;
}

/* At most this many vnodes added to a previous ring; past it a build from nothing is as fast. */
#define PREV_MAX_ADDED 8192

/*
 * The ring for be[] from spec->prev: its vnodes of the backends kept (same
 * slot, name and vnode count) are already sorted by (hash, name, replica);
 * those of the others leave, the added backends' vnodes are sorted and
 * merged in, and the lines are written as build_ring writes them, so the
 * table is the same word for word (tests/unit/test_build_ring.c compares).
 * -EAGAIN when it does not apply (another algorithm or vnode factor, too many
 * added vnodes, a previous table that does not hold what its backends say):
 * the caller builds from nothing.
 */
static int ring_from_prev(const struct chlb_table_spec *spec, const struct chlb_table_be *be,
			  __u32 n, const __u32 *byname, __u32 count, struct chlb_table *out,
			  char *err, size_t errlen)
{
	const struct chlb_table_prev *pv = spec->prev;
	__u32 vnodes = spec->vnodes ? spec->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 pvnodes = pv->vnodes ? pv->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 kept = 0, nadd = 0, live = 0;
	struct merge m;
	__s32 *prev_of, *rank_of;
	int rc = -EAGAIN;

	if (!pv->t || pv->t->nwords < CHLB_TBL_HDR_WORDS ||
	    chlb_table_header(pv->t)->algo != CHLB_ALGO_RING || vnodes != pvnodes)
		return -EAGAIN;
	if (!scratch.slot_prev) {
		scratch.slot_prev = malloc(CHLB_MAX_BACKENDS * sizeof(*scratch.slot_prev));
		scratch.slot_rank = malloc(CHLB_MAX_BACKENDS * sizeof(*scratch.slot_rank));
		if (!scratch.slot_prev || !scratch.slot_rank) {
			free(scratch.slot_prev);
			free(scratch.slot_rank);
			scratch.slot_prev = scratch.slot_rank = NULL;
			return -EAGAIN;
		}
		memset(scratch.slot_prev, 0xff, CHLB_MAX_BACKENDS * sizeof(*scratch.slot_prev));
		memset(scratch.slot_rank, 0xff, CHLB_MAX_BACKENDS * sizeof(*scratch.slot_rank));
	}
	prev_of = scratch.slot_prev;
	rank_of = scratch.slot_rank;
	for (__u32 i = 0; i < pv->n; i++) {
		if (pv->be[i].slot >= CHLB_MAX_BACKENDS || prev_of[pv->be[i].slot] >= 0)
			goto out;
		prev_of[pv->be[i].slot] = (__s32)i;
	}
	/* kept: same slot, name and vnodes (rank_of >= 0); the others' vnodes are added */
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)vnode_count(vnodes, b->weight);
		__s32 j;

		if (!k)
			continue;
		live++;
		if (b->slot >= CHLB_MAX_BACKENDS || rank_of[b->slot] >= 0)
			goto out;
		j = prev_of[b->slot];
		if (j >= 0 && !strcmp(pv->be[j].name, b->name) &&
		    vnode_count(pvnodes, pv->be[j].weight) == k) {
			rank_of[b->slot] = (__s32)r;
			kept += k;
		} else {
			nadd += k;
		}
	}
	if (nadd > PREV_MAX_ADDED)
		goto out;
	/* the previous ring's vnodes, then the kept ones merged with the added, sorted */
	if (grow(&scratch.added, &scratch.nadded, nadd + 1, sizeof(*scratch.added)) ||
	    grow(&scratch.hash, &scratch.nhash, nadd + 1, 4) || /* one added backend's */
	    grow(&scratch.pair, &scratch.npair, count + LINE_READ, 8))
		goto out;
	for (__u32 r = 0, na = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)vnode_count(vnodes, b->weight);

		if (!k || rank_of[b->slot] >= 0)
			continue;
		build_vnode_hashes(b->name, k, scratch.hash);
		for (__u32 e = 0; e < k; e++)
			scratch.added[na++] =
			    (struct added_vnode){ scratch.hash[e], r, e, b->slot };
	}
	qsort(scratch.added, nadd, sizeof(*scratch.added), cmp_added);
	m = (struct merge){
		.rank_of = rank_of, .nadd = nadd, .count = count, .lbits = ring_bits(count, 5)
	};
	if (grow(&scratch.per_line, &scratch.nlines, 1u << m.lbits, sizeof(*scratch.per_line)))
		goto out;
	memset(scratch.per_line, 0, (sizeof(*scratch.per_line)) << m.lbits);
	if (merge_vnodes(pv->t, &m) || m.g != count || m.a != nadd || m.g - nadd != kept)
		goto out; /* the previous table did not hold its backends' vnodes */
	rc = ring_write_sorted(out, scratch.pair, count, m.lbits, live, err, errlen);
out:
	for (__u32 i = 0; i < pv->n; i++)
		if (pv->be[i].slot < CHLB_MAX_BACKENDS)
			prev_of[pv->be[i].slot] = -1;
	for (__u32 i = 0; i < n; i++)
		if (be[i].slot < CHLB_MAX_BACKENDS)
			rank_of[be[i].slot] = -1;
	return rc;
}

int build_ring(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	       const __u32 *byname, struct chlb_table *out, char *err, size_t errlen)
{
	__u32 vnodes = spec->vnodes ? spec->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 pstart[(1u << PART_BITS) + 1] = { 0 }, pcur[(1u << PART_BITS) + 1];
	__u32 *hash, *per_line, count, live = 0, bits, lbits, g, pb, p, biggest = 0;
	__u32 pending = NONE, first_slot = NONE;
	struct ring_out o = { .t = out };
	__u64 *part, total = 0;
	int rc;

	if (vnodes > CHLB_RING_MAX_VNODES)
		return chlb_err(err, errlen, -E2BIG, "%u vnodes per backend: at most %u", vnodes,
				CHLB_RING_MAX_VNODES);
	for (__u32 i = 0; i < n; i++)
		total += vnode_count(vnodes, be[i].weight);
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
			stats.from_prev += !rc;
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
	if (grow(&scratch.hash, &scratch.nhash, count, 4) ||
	    grow(&scratch.part, &scratch.npart, count, 8) ||
	    grow(&scratch.per_line, &scratch.nlines, 1u << lbits, sizeof(*scratch.per_line)))
		return chlb_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	hash = scratch.hash;
	part = scratch.part;
	per_line = scratch.per_line;
	memset(per_line, 0, (sizeof(*per_line)) << lbits);

	/* positions in generation order, counted per partition and per line */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)vnode_count(vnodes, b->weight); /* <= total */

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
	if (grow(&scratch.pair, &scratch.npair, biggest + LINE_READ, 8) ||
	    grow(&scratch.dir, &scratch.ndir, (1u << (bits - pb)) + 2, 4))
		return chlb_err(err, errlen, -ENOMEM, "out of memory for %u vnodes", count);
	memcpy(pcur, pstart, sizeof(pcur));
	/* partitioned, stably: {hash, slot} */
	g = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)vnode_count(vnodes, b->weight); /* <= total */

		for (__u32 e = g + k; g < e; g++)
			part[pcur[hash[g] >> (32 - pb)]++] = (__u64)hash[g] << 32 | b->slot;
	}

	/* the table: header, lines, spilled vnodes */
	rc = ring_alloc(&o, per_line, lbits, err, errlen);
	if (rc)
		return rc;
	stats.from_nothing++;
	for (p = 0; p < (1u << pb); p++)
		ring_partition(&o, part + pstart[p], pstart[p + 1] - pstart[p], bits, lbits, pb, p,
			       &pending, &first_slot);
	/* the last lines wrap around to the ring's first vnode */
	if (pending != NONE)
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
