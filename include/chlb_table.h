/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A service's lookup table, as one array of 32-bit words, and the three
 * lookups over it. Userspace builds the words (user/lib/table/build_*.c); the data
 * plane holds them in an inner map, CHLB_CHUNK_WORDS words per map element.
 * Both sides run the lookups below, so a decision is bit-identical.
 *
 * Word layout (all algorithms):
 *   [0, CHLB_TBL_HDR_WORDS)   struct chlb_table_hdr
 * ring   (count = vnodes, sorted by (hash, backend canonical order, replica)):
 *   lines from CHLB_RING_LINES: 2^dir_bits lines of CHLB_RING_LINE_WORDS words;
 *     line d covers the hashes [d << (32 - dir_bits), (d + 1) << (32 - dir_bits)),
 *     and names the answer for all of them (see chlb_ring_lookup);
 *   spill from chlb_ring_base(): the vnodes of the lines too full to hold
 *     them, pairs {hash, backend slot}, in ring order
 * jump   (count = buckets, one per backend, numbered by the desired state):
 *   bucket[b] at HDR + b: CHLB_JUMP_WORD(slot, threshold), see below
 * maglev (count = M, prime):
 *   entry[i] at HDR + i: backend slot
 *
 * Accessors: before including this header, the includer provides
 *     static __always_inline int chlb_tbl_word(const void *t, __u32 i, __u32 *out);
 * returning 0 and the word, or -1 when i is out of range, and
 *     static __always_inline const __u32 *chlb_tbl_line(const void *t, __u32 i);
 * the CHLB_RING_LINE_WORDS words from i (a multiple of them), or NULL. Without
 * them (host code), flat-array accessors over struct chlb_flat_table are used.
 */
#ifndef CHLB_TABLE_H
#define CHLB_TABLE_H

#include "chlb_common.h"
#include "chlb_hash.h"

/* Keeps the compiler from turning arithmetic on x back into branches. */
#define CHLB_BARRIER_VAR(x) __asm__ volatile("" : "+r"(x))

/*
 * In BPF, a global (non-static, noinline) function is verified once on its
 * own rather than at every call site: the jump loop inside the rehash loop
 * would otherwise multiply into millions of verifier states.
 */
#ifdef __bpf__
#define CHLB_SUBPROG __attribute__((noinline))
#else
#define CHLB_SUBPROG static inline
#endif

#define CHLB_TABLE_MAGIC       0x43484c42u /* "CHLB" */
#define CHLB_TBL_HDR_WORDS     8
#define CHLB_CHUNK_WORDS       4096 /* words per inner-map element (16 KiB) */
#define CHLB_TOMBSTONE	       0xffffffffu
#define CHLB_RING_MAX_DIR_BITS 20
#define CHLB_JUMP_MAX_ITERS    64 /* jump's loop: ~ln(n)+1 expected; past 64 keep the last bucket */
/*
 * Attempts (weight rejections and tombstones) before the fallback backend:
 * a flow reaches the fallback with probability q^64, q = the share of a
 * bucket's keys it rejects (1 - mean threshold / 2^19), and every other
 * backend's share is short by that factor: under 2% while the mean weight is
 * over 6% of the heaviest (docs/algorithms.md).
 */
#define CHLB_JUMP_MAX_REHASH   64

/*
 * A jump bucket word: the backend slot in the low CHLB_JUMP_SLOT_BITS bits,
 * the bucket's acceptance threshold in the high CHLB_JUMP_THR_BITS. A flow
 * landing on the bucket takes it when a second hash of (key, attempt),
 * reduced to CHLB_JUMP_THR_BITS bits, is below the threshold, or always when
 * the threshold is CHLB_JUMP_THR_FULL (the heaviest backends: equal weights
 * never rehash); else it rehashes (chlb_jump_lookup). Threshold 0 = never
 * taken: a tombstone (word 0: slot field 0) or a backend of weight 0, which
 * keeps its bucket (and its slot in the word) so weights never renumber
 * buckets. Threshold = round(2^19 * weight / heaviest weight), at least 1.
 */
#define CHLB_JUMP_SLOT_BITS 13
#define CHLB_JUMP_THR_BITS  (32 - CHLB_JUMP_SLOT_BITS)
#define CHLB_JUMP_SLOT_MASK ((1u << CHLB_JUMP_SLOT_BITS) - 1)
#define CHLB_JUMP_THR_FULL  ((1u << CHLB_JUMP_THR_BITS) - 1)
#define CHLB_JUMP_WORD(slot, thr) \
	(((__u32)(thr) << CHLB_JUMP_SLOT_BITS) | ((slot)&CHLB_JUMP_SLOT_MASK))
#define CHLB_JUMP_WORD_SLOT(w)	 ((w)&CHLB_JUMP_SLOT_MASK)
#define CHLB_JUMP_WORD_THR(w)	 ((w) >> CHLB_JUMP_SLOT_BITS)
#define CHLB_JUMP_TOMBSTONE_WORD 0u
_Static_assert(CHLB_MAX_BACKENDS <= (1u << CHLB_JUMP_SLOT_BITS), "a backend slot fits a jump word");

struct chlb_table_hdr {
	__u32 magic;	   /* CHLB_TABLE_MAGIC */
	__u32 algo;	   /* enum chlb_algo */
	__u32 count;	   /* ring: vnodes; jump: buckets (tombstones included); maglev: M */
	__u32 dir_bits;	   /* ring: the table has 2^dir_bits lines; else 0 */
	__u32 fallback;	   /* jump: backend slot when every attempt was rejected */
	__u32 nbackends;   /* distinct backends the table names */
	__u32 fingerprint; /* CRC32C of all words after the header */
	__u32 words;	   /* total words, header included */
};

/* Ring lines: the layout is described above chlb_ring_base(). */
#define CHLB_RING_LINES	      16 /* header, padded: lines never straddle a chunk */
#define CHLB_RING_LINE_WORDS  16 /* chlb_tbl_line's length */
#define CHLB_RING_LINE_HASHES 10
#define CHLB_RING_LINE_SPILL  0xffffu
_Static_assert(CHLB_MAX_BACKENDS < CHLB_RING_LINE_SPILL, "a backend slot fits half a word");
_Static_assert(CHLB_CHUNK_WORDS % CHLB_RING_LINE_WORDS == 0, "a line lies in one chunk");

#ifndef __bpf__
struct chlb_flat_table {
	const __u32 *w;
	__u32 nwords;
};

static inline int chlb_tbl_word(const void *t, __u32 i, __u32 *out)
{
	const struct chlb_flat_table *ft = (const struct chlb_flat_table *)t;

	if (i >= ft->nwords)
		return -1;
	*out = ft->w[i];
	return 0;
}

static inline const __u32 *chlb_tbl_line(const void *t, __u32 i)
{
	const struct chlb_flat_table *ft = (const struct chlb_flat_table *)t;

	return i < ft->nwords && ft->nwords - i >= CHLB_RING_LINE_WORDS ? ft->w + i : NULL;
}
#endif

/*
 * Ring lines. A 64-byte line per 2^(32 - dir_bits) of the hash space, about
 * 2.5-5 vnodes each (the builder's choice), so a fresh decision reads one
 * cache line: the search the sorted vnode array needs (a directory word,
 * then a vnode and its backend, each a likely cache miss in a 2 MB table)
 * happens only for the ~1% of lines holding more than CHLB_RING_LINE_HASHES.
 *
 * A line with c <= CHLB_RING_LINE_HASHES vnodes:
 *   words [0, 10)   their hashes, ascending; the rest 0xffffffff
 *   words [10, 16)  12 halves, low half first: half j (j <= c) is the backend
 *                   of a flow whose hash exceeds exactly j of them: vnode j's
 *                   for j < c, and for j = c that of the first vnode after
 *                   the line (wrapping to vnode 0); half 11 = c
 * A fuller line: half 11 = CHLB_RING_LINE_SPILL; its c vnodes are pairs
 * [word 0, word 0 + c) of the spill (word 1 = c), and word 2 is the backend
 * of the first vnode after the line. 160k vnodes in 2^15 lines spill ~1%.
 * Backend slots fit a half (CHLB_MAX_BACKENDS < 2^16).
 */
/* First word of line d. */
static __always_inline __u32 chlb_ring_line_at(__u32 d)
{
	return CHLB_RING_LINES + d * CHLB_RING_LINE_WORDS;
}

/* The last half of a line: its count c, or CHLB_RING_LINE_SPILL. */
#define CHLB_RING_COUNT_HALF (2 * (CHLB_RING_LINE_WORDS - CHLB_RING_LINE_HASHES) - 1)

/* Half j of a line: a backend slot (j <= c), or the count (CHLB_RING_COUNT_HALF). */
static __always_inline __u32 chlb_ring_half(const __u32 *line, __u32 j)
{
	return (line[CHLB_RING_LINE_HASHES + j / 2] >> (j & 1) * 16) & 0xffff;
}

/* First word of the spilled vnodes, after the last line (even: pairs never straddle a chunk). */
static __always_inline __u32 chlb_ring_base(__u32 dir_bits)
{
	return chlb_ring_line_at(1u << dir_bits);
}

/*
 * A spilled line: the first of its vnodes with hash >= h, else the backend
 * after them. The search is branch-free (the compare result is arithmetic,
 * hidden from the compiler with a barrier) so the verifier walks one
 * straight path per iteration, not a tree of them.
 */
static __always_inline int chlb_ring_search(const void *t, const struct chlb_table_hdr *hdr,
					    const __u32 *line, __u32 h, __u32 *backend)
{
	__u32 base = chlb_ring_base(hdr->dir_bits), lo = line[0], n = line[1], end, it;

	if (n > CHLB_RING_MAX_VNODES || lo > CHLB_RING_MAX_VNODES)
		return -1;
	end = lo + n;
	for (it = 0; it < 21 && n > 0; it++) {
		__u32 half = n >> 1, v, lt;
		__u64 diff;

		if (chlb_tbl_word(t, base + 2 * (lo + half), &v))
			return -1;
		/* v < h as arithmetic: BPF has no setcc, a plain compare would branch */
		diff = (__u64)v - (__u64)h;
		CHLB_BARRIER_VAR(diff);
		lt = (__u32)(diff >> 63);
		lo += lt * (half + 1);
		n = half - lt * (1 - (n & 1));
	}
	if (lo == end) {
		*backend = line[2];
		return 0;
	}
	return chlb_tbl_word(t, base + 2 * lo + 1, backend);
}

/* Ring: the backend of the first vnode whose hash >= h, wrapping to vnode 0. */
static __always_inline int chlb_ring_lookup(const void *t, const struct chlb_table_hdr *hdr,
					    __u32 h, __u32 *backend)
{
	__u32 bits = hdr->dir_bits, j = 0, k;
	const __u32 *line;

	if (hdr->count == 0 || bits == 0 || bits > CHLB_RING_MAX_DIR_BITS)
		return -1;
	line = chlb_tbl_line(t, chlb_ring_line_at(h >> (32 - bits)));
	if (!line)
		return -1;
	if (chlb_ring_half(line, CHLB_RING_COUNT_HALF) == CHLB_RING_LINE_SPILL)
		return chlb_ring_search(t, hdr, line, h, backend);
	/* j = how many of the line's hashes are < h (padding never is) */
	for (k = 0; k < CHLB_RING_LINE_HASHES; k++) {
		__u64 diff = (__u64)line[k] - (__u64)h;

		CHLB_BARRIER_VAR(diff);
		j += (__u32)(diff >> 63);
	}
	*backend = chlb_ring_half(line, j);
	return 0;
}

/*
 * Lamping-Veach jump consistent hash, integer only (BPF has no floating
 * point): j = floor((b + 1) * 2^31 / ((key >> 33) + 1)), exact in u64 for
 * n <= 2^32. Past CHLB_JUMP_MAX_ITERS iterations (probability ~1e-25 at
 * n = 65536) the last bucket is kept: defined, and the same on both sides.
 *
 * For n <= 2^20 (every table: CHLB_JUMP_MAX_BUCKETS) the same quotients
 * come without a division on the loop's dependency chain, which is what
 * made jump the slowest lookup (one 64-bit divide per iteration, each
 * waiting for the last). Per iteration, with d = (key >> 33) + 1 and
 * N = (b + 1) << 31:
 *   - j >= n  <=>  N >= n * d: the exit test is a multiply;
 *   - otherwise j = floor(N / d) < n, and with m = floor(2^52 / d) (a
 *     division that depends only on the key, so it runs ahead of the
 *     chain) q = ((b + 1) * m) >> 21 is j or j - 1: the error of m is
 *     < 1, times b + 1 <= 2^20, is < 2^21. One compare corrects it.
 *   No overflow: n * d < 2^51, and (b + 1) * m < 2^21 * n <= 2^41 because
 *   d > N / n on this path.
 * tests/unit/test_build_jump.c checks both forms against 128-bit exact
 * arithmetic.
 */
#define CHLB_JUMP_FAST_MAX_N (1u << 20)
_Static_assert(CHLB_JUMP_MAX_BUCKETS <= CHLB_JUMP_FAST_MAX_N, "jump tables take the fast path");

CHLB_SUBPROG __u32 chlb_jump_bucket(__u64 key, __u32 n)
{
	__u64 b = 0, j = 0;
	__u32 i;

	if (n <= CHLB_JUMP_FAST_MAX_N) {
		/* b takes at most MAX_ITERS - 1 values after 0, as in the loop below */
		for (i = 0; i + 1 < CHLB_JUMP_MAX_ITERS; i++) {
			__u64 d, num, q;

			key = key * 2862933555777941757ULL + 1;
			d = (key >> 33) + 1;
			num = (b + 1) << 31;
			if (num >= (__u64)n * d)
				break;
			q = ((b + 1) * ((1ULL << 52) / d)) >> 21;
			q += (q + 1) * d <= num;
			b = q;
		}
		return (__u32)b;
	}
	for (i = 0; i < CHLB_JUMP_MAX_ITERS && j < n; i++) {
		b = j;
		key = key * 2862933555777941757ULL + 1;
		j = ((b + 1) << 31) / ((key >> 33) + 1);
	}
	return (__u32)b;
}

/*
 * Weighted jump: one bucket per backend, buckets in their canonical order
 * (the desired state's `bucket N`). A flow lands on jump(key, count); the
 * bucket takes it when chlb_jump_accept_hash(key) is below the bucket's
 * threshold (CHLB_JUMP_WORD_THR), else the key is rehashed and jumps again,
 * up to CHLB_JUMP_MAX_REHASH attempts, then the fallback (the heaviest
 * backend). Each attempt picks bucket b with probability 1/count and keeps it
 * with probability thr(b) / 2^19, so shares follow the thresholds, i.e. the
 * weights; a threshold change (weight) or a tombstone moves only flows to
 * or from that bucket, and an appended bucket takes flows only from others
 * (jump's monotonicity, attempt by attempt). Equal weights: every threshold
 * is CHLB_JUMP_THR_FULL, one attempt, no second hash.
 */
static __always_inline __u32 chlb_jump_accept_hash(__u64 key)
{
	return (__u32)(chlb_fmix64(key ^ 0x6a756d7077656967ULL) >> (64 - CHLB_JUMP_THR_BITS));
}

static __always_inline int chlb_jump_lookup(const void *t, const struct chlb_table_hdr *hdr,
					    __u64 key, __u32 *backend)
{
	__u32 r;

	if (hdr->count == 0)
		return -1;
	for (r = 0; r < CHLB_JUMP_MAX_REHASH; r++) {
		__u32 b = chlb_jump_bucket(key, hdr->count), v, thr;

		if (chlb_tbl_word(t, CHLB_TBL_HDR_WORDS + b, &v))
			return -1;
		thr = CHLB_JUMP_WORD_THR(v);
		if (thr == CHLB_JUMP_THR_FULL || (thr && chlb_jump_accept_hash(key) < thr)) {
			*backend = CHLB_JUMP_WORD_SLOT(v);
			return 0;
		}
		key = chlb_fmix64(key + 0x9e3779b97f4a7c15ULL);
	}
	if (hdr->fallback == CHLB_TOMBSTONE)
		return -1;
	*backend = hdr->fallback;
	return 0;
}

/* Maglev: one direct index. */
static __always_inline int chlb_maglev_lookup(const void *t, const struct chlb_table_hdr *hdr,
					      __u32 h, __u32 *backend)
{
	__u32 v;

	if (hdr->count == 0)
		return -1;
	if (chlb_tbl_word(t, CHLB_TBL_HDR_WORDS + h % hdr->count, &v) || v == CHLB_TOMBSTONE)
		return -1;
	*backend = v;
	return 0;
}

/*
 * The decision for a flow whose CRC (chlb_flow_crc) is crc. Returns 0 and
 * the backend slot, or -1 when the table names no backend (empty set,
 * all drained, corrupt table).
 */
static __always_inline int chlb_table_lookup(const void *t, const struct chlb_table_hdr *hdr,
					     __u32 crc, __u32 *backend)
{
	if (hdr->magic != CHLB_TABLE_MAGIC)
		return -1;
	switch (hdr->algo) {
	case CHLB_ALGO_RING:
		return chlb_ring_lookup(t, hdr, chlb_hash_fin(crc), backend);
	case CHLB_ALGO_JUMP:
		return chlb_jump_lookup(t, hdr, chlb_jump_key(crc), backend);
	case CHLB_ALGO_MAGLEV:
		return chlb_maglev_lookup(t, hdr, chlb_hash_fin(crc), backend);
	}
	return -1;
}

#endif /* CHLB_TABLE_H */
