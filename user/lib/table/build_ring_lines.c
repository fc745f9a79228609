// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ring's lines (the layout: include/chlb_table.h, above chlb_ring_base),
 * written from sorted vnodes, and the scratch the ring builders share.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_ring_int.h"

__thread struct build_ring_stats ring_stats;
__thread struct ring_scratch ring_scratch;

void build_ring_stats(struct build_ring_stats *st)
{
	*st = ring_stats;
}

int ring_grow(void *arrp, __u32 *have, __u32 want, size_t size)
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
void ring_line(struct ring_out *o, __u32 l, const __u32 *v, __u32 c)
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
void ring_patch_after(struct ring_out *o, __u32 from, __u32 to, __u32 slot)
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
__u32 ring_bits(__u32 count, __u32 per)
{
	__u32 bits = 1;

	while (bits < CHLB_RING_MAX_DIR_BITS && ((__u64)per << bits) < count)
		bits++;
	return bits;
}

/* Vnodes of a backend: vnodes per weight 100, at least 1 unless drained (weight 0). */
__u64 ring_vnode_count(__u32 vnodes, __u32 weight)
{
	__u64 k = ((__u64)vnodes * weight + 50) / 100;

	return weight && !k ? 1 : k;
}

/*
 * The table for 2^lbits lines of per_line[] vnodes each: the header and
 * lines' words zeroed, room for the spilled vnodes after them (o->base).
 */
int ring_alloc(struct ring_out *o, const __u32 *per_line, __u32 lbits, char *err, size_t errlen)
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
void ring_finish(struct chlb_table *out, __u32 count, __u32 lbits, __u32 live)
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
int ring_write_sorted(struct chlb_table *out, const __u32 *pair, __u32 count, __u32 lbits,
		      __u32 live, char *err, size_t errlen)
{
	const __u32 *per_line = ring_scratch.per_line;
	struct ring_out o = { .t = out };
	__u32 first = 0, pending = RING_NONE;
	int rc;

	rc = ring_alloc(&o, per_line, lbits, err, errlen);
	if (rc)
		return rc;
	for (__u32 l = 0; l < 1u << lbits; l++) {
		__u32 c = per_line[l];

		if (first + c >= count && pending == RING_NONE)
			pending = l; /* the vnode after it is the ring's first */
		ring_line(&o, l, pair + 2 * first, c);
		first += c;
	}
	if (pending != RING_NONE)
		ring_patch_after(&o, pending, 1u << lbits, pair[1]);
	ring_finish(out, count, lbits, live);
	return 0;
}

/* Vnode g of the ring being written: {hash, slot}, counted in its line. */
void ring_put_vnode(__u32 g, __u32 hash, __u32 slot, __u32 lbits)
{
	ring_scratch.pair[2 * g] = hash;
	ring_scratch.pair[2 * g + 1] = slot;
	ring_scratch.per_line[hash >> (32 - lbits)]++;
}
