// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The decision fingerprint: a CRC32C over what a table decides, position by
 * position, with every backend slot replaced by that backend's canonical
 * address text. The header's word CRC (chlb_table_fingerprint) cannot say
 * whether two LB hosts agree: its words hold backend SLOT numbers, which
 * differ from host to host (they depend on what else each host serves and on
 * its history), so hosts that decide alike showed different CRCs, and hosts
 * that decide differently (the same slots for other addresses, or jump
 * buckets in another order) could show the same one.
 *
 * The stream, in table order (every raw word little-endian; a backend as
 * its name and a NUL; a tombstone or an empty half as a lone NUL, which no
 * name is):
 *   header  "chlb-dfp1", algo, count, dir_bits, nbackends, fallback backend
 *   ring    per line: its count (or CHLB_RING_LINE_SPILL, then the spill
 *           offset and count), its hashes and padding, the backend of each
 *           half j <= c (half c: the first vnode after the line); then every
 *           spilled pair {hash, backend}
 *   maglev  (and jtable, which is Maglev-format) entry i's backend
 *   jump    bucket b's backend and its acceptance threshold (a bucket never
 *           taken as a tombstone: fp_jump_word)
 * Weights need no word of their own: every layout holds them as positions
 * (ring: vnodes per backend; maglev and jtable: entries; jump: each
 * bucket's acceptance threshold). So two tables have the
 * same decision fingerprint exactly when they send every flow hash to the
 * same address (up to CRC collisions), whatever slots each host gave them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

#define FP_BUF	65536
#define FP_NAME CHLB_BE_NAME_LEN /* a name's room in the stream's copy of them */

/*
 * Buffered CRC over the stream. The names are copied into fixed rooms
 * (name[slot], NUL-padded) so that a backend goes into the buffer with a
 * copy of constant length (a few vector moves) and the buffer advances by
 * its real length: a 160k-vnode ring names ~200k backends, and a libc
 * memcpy of variable length per name cost 4x the CRC itself.
 */
struct fp_stream {
	__u32 crc;
	__u32 len;
	__u32 nname;
	__u32 bad_slot;		    /* first slot without a name, or CHLB_TOMBSTONE */
	char (*name)[FP_NAME];	    /* name[slot], NUL-padded */
	__u8 *nlen;		    /* strlen(name[slot]) + 1, 0: no name */
	__u8 buf[FP_BUF + FP_NAME]; /* room for a whole name past FP_BUF */
};

static void fp_flush(struct fp_stream *s)
{
	s->crc = build_crc32c_update(s->crc, s->buf, s->len);
	s->len = 0;
}

static void fp_bytes(struct fp_stream *s, const void *p, __u32 n)
{
	if (s->len + n > FP_BUF)
		fp_flush(s);
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static inline void fp_word(struct fp_stream *s, __u32 w)
{
	if (s->len + 4 > FP_BUF)
		fp_flush(s);
	s->buf[s->len] = (__u8)w;
	s->buf[s->len + 1] = (__u8)(w >> 8);
	s->buf[s->len + 2] = (__u8)(w >> 16);
	s->buf[s->len + 3] = (__u8)(w >> 24);
	s->len += 4;
}

/* A backend slot as its address text; a tombstone as a lone NUL. */
static inline void fp_backend(struct fp_stream *s, __u32 slot)
{
	__u32 n = slot < s->nname ? s->nlen[slot] : 0;

	if (n) {
		if (s->len + n > FP_BUF)
			fp_flush(s);
		memcpy(s->buf + s->len, s->name[slot], FP_NAME); /* constant length */
		s->len += n;
		return;
	}
	if (slot != CHLB_TOMBSTONE && s->bad_slot == CHLB_TOMBSTONE)
		s->bad_slot = slot;
	fp_bytes(s, slot == CHLB_TOMBSTONE ? "" : "?", slot == CHLB_TOMBSTONE ? 1 : 2);
}

static int fp_ring(struct fp_stream *s, const __u32 *w, __u32 nwords,
		   const struct chlb_table_hdr *h)
{
	__u32 base, nlines, j;

	if (!h->dir_bits || h->dir_bits > CHLB_RING_MAX_DIR_BITS ||
	    chlb_ring_base(h->dir_bits) > nwords || (nwords - chlb_ring_base(h->dir_bits)) % 2)
		return -EINVAL;
	base = chlb_ring_base(h->dir_bits);
	nlines = 1u << h->dir_bits;
	for (__u32 d = 0; d < nlines; d++) {
		const __u32 *line = w + chlb_ring_line_at(d);
		__u32 c = chlb_ring_half(line, CHLB_RING_COUNT_HALF);

		fp_word(s, c);
		if (c == CHLB_RING_LINE_SPILL) {
			fp_word(s, line[0]);
			fp_word(s, line[1]);
			fp_backend(s, line[2]);
			continue;
		}
		if (c > CHLB_RING_LINE_HASHES)
			return -EINVAL;
		for (j = 0; j < CHLB_RING_LINE_HASHES; j++)
			fp_word(s, line[j]);
		for (j = 0; j <= c; j++)
			fp_backend(s, chlb_ring_half(line, j));
	}
	for (j = base; j < nwords; j += 2) {
		fp_word(s, w[j]);
		fp_backend(s, w[j + 1]);
	}
	return 0;
}

/*
 * A jump bucket word as chlb_jump_lookup reads it (include/chlb_table.h:
 * the slot in CHLB_JUMP_WORD_SLOT, the acceptance threshold in
 * CHLB_JUMP_WORD_THR). A bucket never taken (threshold 0: a tombstone, or a
 * weight-0 backend keeping its bucket) decides like a tombstone, so it is
 * one, whatever slot it keeps; else the backend and its threshold.
 */
static void fp_jump_word(struct fp_stream *s, __u32 w)
{
	if (!CHLB_JUMP_WORD_THR(w)) {
		fp_backend(s, CHLB_TOMBSTONE);
		return;
	}
	fp_backend(s, CHLB_JUMP_WORD_SLOT(w));
	fp_word(s, CHLB_JUMP_WORD_THR(w));
}

int chlb_table_decision_fp(const __u32 *words, __u32 nwords, const char *const *name, __u32 nname,
			   __u32 *fp, char *err, size_t errlen)
{
	const struct chlb_table_hdr *h = (const struct chlb_table_hdr *)words;
	struct fp_stream *s;
	int rc = 0;

	if (!words || nwords < CHLB_TBL_HDR_WORDS || h->magic != CHLB_TABLE_MAGIC ||
	    h->words != nwords)
		return chlb_err(err, errlen, -EINVAL, "not a table (bad header)");
	if (nname > CHLB_MAX_BACKENDS)
		nname = CHLB_MAX_BACKENDS;
	s = malloc(sizeof(*s) + (size_t)nname * (FP_NAME + 1));
	if (!s)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	s->crc = CHLB_CRC32C_INIT;
	s->len = 0;
	s->nname = nname;
	s->name = (char(*)[FP_NAME])(s + 1);
	s->nlen = (__u8 *)(s->name + nname);
	for (__u32 i = 0; i < nname; i++) {
		size_t l = name[i] ? strnlen(name[i], FP_NAME) : 0;

		/* a name is a C string shorter than CHLB_BE_NAME_LEN; anything else is unknown */
		s->nlen[i] = l && l < FP_NAME ? (__u8)(l + 1) : 0;
		memset(s->name[i], 0, FP_NAME);
		memcpy(s->name[i], name[i] ? name[i] : "", s->nlen[i]);
	}
	s->bad_slot = CHLB_TOMBSTONE;
	fp_bytes(s, "chlb-dfp1", 9);
	fp_word(s, h->algo);
	fp_word(s, h->count);
	fp_word(s, h->dir_bits);
	fp_word(s, h->nbackends);
	fp_backend(s, h->fallback);
	if (h->count) {
		switch (h->algo) {
		case CHLB_ALGO_RING:
			rc = fp_ring(s, words, nwords, h);
			break;
		case CHLB_ALGO_MAGLEV:
		case CHLB_ALGO_JUMP:
			if (h->count > nwords - CHLB_TBL_HDR_WORDS) {
				rc = -EINVAL;
				break;
			}
			for (__u32 i = 0; i < h->count; i++) {
				if (h->algo == CHLB_ALGO_JUMP)
					fp_jump_word(s, words[CHLB_TBL_HDR_WORDS + i]);
				else
					fp_backend(s, words[CHLB_TBL_HDR_WORDS + i]);
			}
			break;
		default:
			rc = -EINVAL;
		}
	}
	fp_flush(s);
	if (rc)
		rc = chlb_err(err, errlen, rc, "malformed %u-word table (algo %u, count %u)",
			      nwords, h->algo, h->count);
	else if (s->bad_slot != CHLB_TOMBSTONE)
		rc = chlb_err(err, errlen, -ENOENT,
			      "the table names backend slot %u, whose address is not known",
			      s->bad_slot);
	else
		*fp = s->crc ^ 0xffffffffu;
	free(s);
	return rc;
}

int chlb_table_decision_fp_be(const struct chlb_table *t, const struct chlb_table_be *be, __u32 n,
			      __u32 *fp, char *err, size_t errlen)
{
	const char **name;
	__u32 nname = 0;
	int rc;

	for (__u32 i = 0; i < n; i++)
		if (be[i].slot < CHLB_MAX_BACKENDS && be[i].slot + 1 > nname)
			nname = be[i].slot + 1;
	name = calloc(nname ? nname : 1, sizeof(*name));
	if (!name)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	for (__u32 i = 0; i < n; i++)
		if (be[i].slot < CHLB_MAX_BACKENDS)
			name[be[i].slot] = be[i].name;
	rc = chlb_table_decision_fp(t->words, t->nwords, name, nname, fp, err, errlen);
	free(name);
	return rc;
}
