/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fresh decision: the flow's CRC32C (include/chlb_hash.h) looked up in one
 * table (include/chlb_table.h) held in an inner map of `tables`. The lookup
 * code is the same text userspace runs, so decisions are bit-identical.
 */
#ifndef CHLB_SELECT_H
#define CHLB_SELECT_H

#include "chlb_maps.bpf.h"

/*
 * What chlb_tbl_word() and chlb_tbl_line() read through: one inner map of
 * `tables`, plus the last chunk they looked up. Inner-map lookups are helper
 * calls (the verifier cannot inline them), and a decision reads the header
 * in chunk 0 and then, for small tables, more words of that same chunk.
 */
struct chlb_tbl_ref {
	void *inner;
	__u32 *cur;
	__u32 cur_idx;
};

/* Chunk `chunk` of the table, looked up only when it is not the last one. */
static __always_inline __u32 *chlb_tbl_chunk(struct chlb_tbl_ref *ref, __u32 chunk)
{
	__u32 *c = ref->cur;

	if (chunk != ref->cur_idx || !c) {
		c = bpf_map_lookup_elem(ref->inner, &chunk);
		if (!c)
			return NULL;
		ref->cur = c;
		ref->cur_idx = chunk;
	}
	return c;
}

/* Word i of the table: chunk i / CHLB_CHUNK_WORDS, index masked for the verifier. */
static __always_inline int chlb_tbl_word(const void *t, __u32 i, __u32 *out)
{
	__u32 *c = chlb_tbl_chunk((struct chlb_tbl_ref *)t, i / CHLB_CHUNK_WORDS);

	if (!c)
		return -1;
	*out = c[i & (CHLB_CHUNK_WORDS - 1)];
	return 0;
}

/* The CHLB_RING_LINE_WORDS words from word i, i a multiple of them: one chunk. */
static __always_inline const __u32 *chlb_tbl_line(const void *t, __u32 i)
{
	__u32 *c = chlb_tbl_chunk((struct chlb_tbl_ref *)t, i / CHLB_CHUNK_WORDS);

	/* the verifier sees i masked to a line inside the chunk */
	return c ? c + (i & (CHLB_CHUNK_WORDS - CHLB_RING_LINE_WORDS)) : NULL;
}

#include "chlb_table.h"

/*
 * The backend slot table `slot` picks for crc, or -1. A global function:
 * the verifier checks it once, not at each of the (up to CHLB_HISTORY_MAX
 * + 2) call sites of the stickiness logic.
 */
__attribute__((noinline)) int chlb_decide(__u32 slot, __u32 crc)
{
	struct chlb_tbl_ref ref;
	struct chlb_chunk *c0;
	__u32 zero = 0, be;

	ref.inner = bpf_map_lookup_elem(&tables, &slot);
	if (!ref.inner)
		return -1;
	c0 = bpf_map_lookup_elem(ref.inner, &zero);
	if (!c0)
		return -1;
	ref.cur = c0->w;
	ref.cur_idx = 0;
	/* header read from chunk 0 once per decision */
	if (chlb_table_lookup(&ref, (const struct chlb_table_hdr *)c0->w, crc, &be))
		return -1;
	if (be >= CHLB_MAX_BACKENDS)
		return -1;
	return be;
}

#endif /* CHLB_SELECT_H */
