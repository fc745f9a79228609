// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A ring from the previous one (spec.prev): after a change of a few
 * backends most vnodes stay where they were. The lines the change touches
 * are patched and the rest copied (ring_patch_prev); where that does not
 * apply, the previous ring's vnodes are merged with the added ones and
 * every line written (merge_vnodes). Either way the table is the same
 * word for word as build_ring writes from nothing
 * (tests/unit/test_build_ring.c compares).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_ring_int.h"

static int cmp_added(const void *a, const void *b)
{
	const struct added_vnode *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->replica < y->replica ? -1 : x->replica > y->replica;
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
	const struct added_vnode *add = ring_scratch.added;

	if (sl >= CHLB_MAX_BACKENDS || m->rank_of[sl] < 0)
		return; /* a backend that left or changed */
	while (*a < m->nadd && *g < m->count &&
	       (add[*a].hash < h || (add[*a].hash == h && add[*a].rank < (__u32)m->rank_of[sl]))) {
		ring_put_vnode((*g)++, add[*a].hash, add[*a].slot, m->lbits);
		(*a)++;
	}
	if (*g < m->count)
		ring_put_vnode((*g)++, h, sl, m->lbits);
}

/*
 * The previous ring's vnodes, read from its lines and spill in order (as
 * chlb_ring_vnodes reads them, without a copy: the table is read once), of
 * the backends kept merged with the added ones into ring_scratch.pair: at most
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
		ring_put_vnode(g++, ring_scratch.added[a].hash, ring_scratch.added[a].slot,
			       m->lbits);
	m->g = g;
	m->a = a;
	return seen == hdr->count ? 0 : -EINVAL;
}

/*
 * At most this many vnodes added to a previous ring (and, for a patch, removed
 * from it); past it a build from nothing is as fast.
 */
#define PREV_MAX_ADDED 8192

/*
 * Patching the previous ring (ring_patch_prev). A change of a few backends
 * moves a few hundred of the ring's vnodes, which fall in as many of its
 * 32,768 lines: those lines are written from their vnodes, every other one
 * is the previous table's line, copied, with its spilled vnodes moved to
 * their new place and its "after" half rewritten when the next non-empty
 * line changed. The table is the same word for word as a merge of all the
 * vnodes (ring_write_sorted) would write; reading and writing every vnode
 * cost most of a ring swap (docs/performance.md).
 */
struct patch {
	const struct chlb_table *pt; /* the previous table */
	const __s32 *rank_of;	     /* kept backends' slots -> name rank, else -1 */
	const __u32 *spill;	     /* its spilled pairs */
	__u32 nlines, pspill;	     /* lines (the same for both), previous spilled pairs */
	__u32 ntouched;		     /* ring_scratch.touched[], ascending */
};

/* Line d of the previous table: its count and vnodes (spilled: pairs), or -1 if malformed. */
static inline __attribute__((always_inline)) int
prev_line(const struct patch *p, __u32 d, const __u32 **line, const __u32 **spill, __u32 *c)
{
	*line = p->pt->words + chlb_ring_line_at(d);
	*c = chlb_ring_half(*line, CHLB_RING_COUNT_HALF);
	*spill = NULL;
	if (*c == CHLB_RING_LINE_SPILL) {
		*c = (*line)[1];
		if ((__u64)(*line)[0] + *c > p->pspill)
			return -1;
		*spill = p->spill + 2 * (*line)[0];
	} else if (*c > CHLB_RING_LINE_HASHES) {
		return -1;
	}
	return 0;
}

/* Index of line d in ring_scratch.touched, or -1. */
static int touched_at(const struct patch *p, __u32 d)
{
	__u32 lo = 0, hi = p->ntouched;

	while (lo < hi) {
		__u32 mid = (lo + hi) / 2;

		if (ring_scratch.touched[mid] < d)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->ntouched && ring_scratch.touched[lo] == d ? (int)lo : -1;
}

/* The slot of line d's first vnode in the new ring, or RING_NONE for an empty line. */
static __u32 first_slot(const struct patch *p, __u32 d)
{
	const __u32 *line, *spill;
	int t = touched_at(p, d);
	__u32 c;

	if (t >= 0)
		return ring_scratch.tcount[t] ? ring_scratch.pair[2 * ring_scratch.tfirst[t] + 1]
					      : RING_NONE;
	if (prev_line(p, d, &line, &spill, &c) || !c)
		return RING_NONE;
	return spill ? spill[1] : chlb_ring_half(line, 0);
}

/* The slot of the first vnode after line d, wrapping (the ring is not empty). */
static __u32 slot_after(const struct patch *p, __u32 d)
{
	for (__u32 i = 1; i <= p->nlines; i++) {
		__u32 s = first_slot(p, (d + i) & (p->nlines - 1));

		if (s != RING_NONE)
			return s;
	}
	return RING_NONE;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The lines the added vnodes (ring_scratch.added[0, nadd), sorted) and the
 * removed backends' vnodes fall in, into ring_scratch.touched, ascending and
 * once each; *removed: how many vnodes leave. -1: more than a patch is for.
 */
static int touched_lines(const struct chlb_table_prev *pv, const __s32 *rank_of, __u32 nadd,
			 __u32 lbits, __u32 *removed)
{
	__u32 pvnodes = pv->vnodes ? pv->vnodes : CHLB_RING_DEFAULT_VNODES, n = 0, r = 0;

	for (__u32 j = 0; j < pv->n; j++) {
		__u32 k = (__u32)ring_vnode_count(pvnodes, pv->be[j].weight);

		if (k && pv->be[j].slot < CHLB_MAX_BACKENDS && rank_of[pv->be[j].slot] < 0)
			r += k;
	}
	if (r > PREV_MAX_ADDED || ring_grow(&ring_scratch.touched, &ring_scratch.ntouched,
					    nadd + r + 1, sizeof(*ring_scratch.touched)))
		return -1;
	for (__u32 a = 0; a < nadd; a++)
		ring_scratch.touched[n++] = ring_scratch.added[a].hash >> (32 - lbits);
	for (__u32 j = 0; j < pv->n; j++) {
		__u32 k = (__u32)ring_vnode_count(pvnodes, pv->be[j].weight);

		if (!k || pv->be[j].slot >= CHLB_MAX_BACKENDS || rank_of[pv->be[j].slot] >= 0)
			continue;
		if (ring_grow(&ring_scratch.hash, &ring_scratch.nhash, k, 4))
			return -1;
		build_vnode_hashes(pv->be[j].name, k, ring_scratch.hash);
		for (__u32 e = 0; e < k; e++)
			ring_scratch.touched[n++] = ring_scratch.hash[e] >> (32 - lbits);
	}
	qsort(ring_scratch.touched, n, sizeof(*ring_scratch.touched), cmp_u32);
	*removed = n - nadd;
	r = 0; /* now the lines, once each */
	for (__u32 i = 0; i < n; i++)
		if (!r || ring_scratch.touched[i] != ring_scratch.touched[r - 1])
			ring_scratch.touched[r++] = ring_scratch.touched[i];
	return (int)r;
}

/*
 * Each touched line's new vnodes into ring_scratch.pair: its previous vnodes of
 * kept backends merged with the added ones that fall in it, as merge_one
 * orders them. *spilled: the new ring's spilled pairs. -1: the previous
 * table does not hold what its backends say (vnodes to remove not found).
 */
static int touched_vnodes(const struct patch *p, __u32 nadd, __u32 lbits, __u32 removed,
			  __u32 *spilled)
{
	const struct added_vnode *add = ring_scratch.added;
	__u32 g = 0, a = 0, dropped = 0, bound = nadd + LINE_READ, sp = p->pspill;

	for (__u32 t = 0; t < p->ntouched; t++) {
		const __u32 *line, *spill;
		__u32 c;

		if (prev_line(p, ring_scratch.touched[t], &line, &spill, &c))
			return -1;
		bound += c;
	}
	if (ring_grow(&ring_scratch.pair, &ring_scratch.npair, bound, 8) ||
	    ring_grow(&ring_scratch.tfirst, &ring_scratch.ntfirst, p->ntouched, 4) ||
	    ring_grow(&ring_scratch.tcount, &ring_scratch.ntcount, p->ntouched, 4))
		return -1;
	for (__u32 t = 0; t < p->ntouched; t++) {
		__u32 d = ring_scratch.touched[t], c, start = g;
		const __u32 *line, *spill;

		prev_line(p, d, &line, &spill, &c);
		if (c > CHLB_RING_LINE_HASHES) {
			if (c > sp)
				return -1; /* spilled lines that overlap: malformed */
			sp -= c;
		}
		for (__u32 j = 0; j < c; j++) {
			__u32 h = spill ? spill[2 * j] : line[j];
			__u32 sl = spill ? spill[2 * j + 1] : chlb_ring_half(line, j);

			if (sl >= CHLB_MAX_BACKENDS || p->rank_of[sl] < 0) {
				dropped++;
				continue;
			}
			for (; a < nadd && add[a].hash >> (32 - lbits) == d &&
			       (add[a].hash < h ||
				(add[a].hash == h && add[a].rank < (__u32)p->rank_of[sl]));
			     a++, g++) {
				ring_scratch.pair[2 * g] = add[a].hash;
				ring_scratch.pair[2 * g + 1] = add[a].slot;
			}
			ring_scratch.pair[2 * g] = h;
			ring_scratch.pair[2 * g + 1] = sl;
			g++;
		}
		for (; a < nadd && add[a].hash >> (32 - lbits) == d; a++, g++) {
			ring_scratch.pair[2 * g] = add[a].hash;
			ring_scratch.pair[2 * g + 1] = add[a].slot;
		}
		ring_scratch.tfirst[t] = start;
		ring_scratch.tcount[t] = g - start;
		if (g - start > CHLB_RING_LINE_HASHES)
			sp += g - start;
	}
	*spilled = sp;
	return dropped == removed && a == nadd ? 0 : -1;
}

/* Touched line t written from its vnodes, the slot after them `after`. */
static int patch_touched(struct ring_out *o, __u32 t, __u32 after)
{
	__u32 c = ring_scratch.tcount[t], need = 2 * (c + LINE_READ);

	if (ring_grow(&ring_scratch.vbuf, &ring_scratch.nvbuf, need, 4))
		return -1;
	memcpy(ring_scratch.vbuf, ring_scratch.pair + 2 * ring_scratch.tfirst[t], (size_t)c * 8);
	memset(ring_scratch.vbuf + 2 * c, 0, (size_t)(need - 2 * c) * 4);
	ring_scratch.vbuf[2 * c + 1] = after;
	ring_line(o, ring_scratch.touched[t], ring_scratch.vbuf, c);
	return 0;
}

/*
 * The ring for the new backends from the previous one by patching the
 * lines that change (above). -EAGAIN when it does not apply (another line
 * count, too many vnodes moving, a previous table that does not hold what
 * its backends say): the caller merges all the vnodes instead.
 */
static int ring_patch_prev(const struct chlb_table_prev *pv, const __s32 *rank_of, __u32 nadd,
			   __u32 count, __u32 live, struct chlb_table *out, char *err,
			   size_t errlen)
{
	const struct chlb_table_hdr *ph = chlb_table_header(pv->t);
	struct patch p = { .pt = pv->t, .rank_of = rank_of };
	__u32 lbits = ring_bits(count, 5), base, removed, spilled, t = 0;
	struct ring_out o = { .t = out };
	int n, rc;

	if (ph->dir_bits != lbits || chlb_ring_base(lbits) > pv->t->nwords ||
	    (pv->t->nwords - chlb_ring_base(lbits)) % 2)
		return -EAGAIN;
	base = chlb_ring_base(lbits);
	p.nlines = 1u << lbits;
	p.pspill = (pv->t->nwords - base) / 2;
	p.spill = pv->t->words + base;
	n = touched_lines(pv, rank_of, nadd, lbits, &removed);
	if (n < 0 || (__u64)ph->count + nadd != (__u64)count + removed)
		return -EAGAIN;
	p.ntouched = (__u32)n;
	if (touched_vnodes(&p, nadd, lbits, removed, &spilled))
		return -EAGAIN;
	rc = build_alloc_prefix(out, CHLB_ALGO_RING, base + 2 * spilled, CHLB_RING_LINES, err,
				errlen);
	if (rc)
		return rc;
	o.base = base;
	for (__u32 d = 0; d < p.nlines; d++) {
		const __u32 *line, *spill;
		__u32 c, *to = out->words + chlb_ring_line_at(d), next = (d + 1) & (p.nlines - 1);

		if (t < p.ntouched && ring_scratch.touched[t] == d) {
			if (ring_scratch.tcount[t] > CHLB_RING_LINE_HASHES &&
			    o.nspill + ring_scratch.tcount[t] > spilled)
				goto bad;
			if (patch_touched(&o, t++, slot_after(&p, d)))
				goto bad;
			continue;
		}
		if (prev_line(&p, d, &line, &spill, &c))
			goto bad;
		memcpy(to, line, CHLB_RING_LINE_WORDS * 4);
		if (spill) {
			if (o.nspill + c > spilled)
				goto bad;
			to[0] = o.nspill;
			memcpy(out->words + base + 2 * o.nspill, spill, (size_t)c * 8);
			o.nspill += c;
		}
		/* the slot after it changes only with the next non-empty line */
		if ((next ? t < p.ntouched && ring_scratch.touched[t] == next
			  : p.ntouched && ring_scratch.touched[0] == 0) ||
		    !chlb_ring_half(p.pt->words + chlb_ring_line_at(next), CHLB_RING_COUNT_HALF))
			ring_patch_after(&o, d, d + 1, slot_after(&p, d));
	}
	if (o.nspill != spilled)
		goto bad;
	ring_finish(out, count, lbits, live);
	return 0;
bad:
	chlb_table_free(out);
	return -EAGAIN;
}

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
int ring_from_prev(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		   const __u32 *byname, __u32 count, struct chlb_table *out, char *err,
		   size_t errlen)
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
	if (!ring_scratch.slot_prev) {
		ring_scratch.slot_prev =
		    malloc(CHLB_MAX_BACKENDS * sizeof(*ring_scratch.slot_prev));
		ring_scratch.slot_rank =
		    malloc(CHLB_MAX_BACKENDS * sizeof(*ring_scratch.slot_rank));
		if (!ring_scratch.slot_prev || !ring_scratch.slot_rank) {
			free(ring_scratch.slot_prev);
			free(ring_scratch.slot_rank);
			ring_scratch.slot_prev = ring_scratch.slot_rank = NULL;
			return -EAGAIN;
		}
		memset(ring_scratch.slot_prev, 0xff,
		       CHLB_MAX_BACKENDS * sizeof(*ring_scratch.slot_prev));
		memset(ring_scratch.slot_rank, 0xff,
		       CHLB_MAX_BACKENDS * sizeof(*ring_scratch.slot_rank));
	}
	prev_of = ring_scratch.slot_prev;
	rank_of = ring_scratch.slot_rank;
	for (__u32 i = 0; i < pv->n; i++) {
		if (pv->be[i].slot >= CHLB_MAX_BACKENDS || prev_of[pv->be[i].slot] >= 0)
			goto out;
		prev_of[pv->be[i].slot] = (__s32)i;
	}
	/* kept: same slot, name and vnodes (rank_of >= 0); the others' vnodes are added */
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)ring_vnode_count(vnodes, b->weight);
		__s32 j;

		if (!k)
			continue;
		live++;
		if (b->slot >= CHLB_MAX_BACKENDS || rank_of[b->slot] >= 0)
			goto out;
		j = prev_of[b->slot];
		if (j >= 0 && !strcmp(pv->be[j].name, b->name) &&
		    ring_vnode_count(pvnodes, pv->be[j].weight) == k) {
			rank_of[b->slot] = (__s32)r;
			kept += k;
		} else {
			nadd += k;
		}
	}
	if (nadd > PREV_MAX_ADDED)
		goto out;
	/* the previous ring's vnodes, then the kept ones merged with the added, sorted */
	if (ring_grow(&ring_scratch.added, &ring_scratch.nadded, nadd + 1,
		      sizeof(*ring_scratch.added)) ||
	    ring_grow(&ring_scratch.hash, &ring_scratch.nhash, nadd + 1,
		      4) || /* one added backend's */
	    ring_grow(&ring_scratch.pair, &ring_scratch.npair, count + LINE_READ, 8))
		goto out;
	for (__u32 r = 0, na = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];
		__u32 k = (__u32)ring_vnode_count(vnodes, b->weight);

		if (!k || rank_of[b->slot] >= 0)
			continue;
		build_vnode_hashes(b->name, k, ring_scratch.hash);
		for (__u32 e = 0; e < k; e++)
			ring_scratch.added[na++] =
			    (struct added_vnode){ ring_scratch.hash[e], r, e, b->slot };
	}
	qsort(ring_scratch.added, nadd, sizeof(*ring_scratch.added), cmp_added);
	rc = ring_patch_prev(pv, rank_of, nadd, count, live, out, err, errlen);
	if (rc != -EAGAIN) {
		ring_stats.patched += !rc;
		goto out;
	}
	m = (struct merge){
		.rank_of = rank_of, .nadd = nadd, .count = count, .lbits = ring_bits(count, 5)
	};
	if (ring_grow(&ring_scratch.per_line, &ring_scratch.nlines, 1u << m.lbits,
		      sizeof(*ring_scratch.per_line)))
		goto out;
	memset(ring_scratch.per_line, 0, (sizeof(*ring_scratch.per_line)) << m.lbits);
	if (merge_vnodes(pv->t, &m) || m.g != count || m.a != nadd || m.g - nadd != kept)
		goto out; /* the previous table did not hold its backends' vnodes */
	rc = ring_write_sorted(out, ring_scratch.pair, count, m.lbits, live, err, errlen);
out:
	for (__u32 i = 0; i < pv->n; i++)
		if (pv->be[i].slot < CHLB_MAX_BACKENDS)
			prev_of[pv->be[i].slot] = -1;
	for (__u32 i = 0; i < n; i++)
		if (be[i].slot < CHLB_MAX_BACKENDS)
			rank_of[be[i].slot] = -1;
	return rc;
}
