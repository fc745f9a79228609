// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What every table shares, whatever built it: allocation (for the builders),
 * the canonical backend order, the fingerprint, the decision through the
 * shared lookup of include/chlb_table.h, and freeing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

/* Header of a fresh table at out->words (NULL: out of memory). */
static int alloc_words(struct chlb_table *out, __u32 algo, __u32 nwords, char *err, size_t errlen)
{
	struct chlb_table_hdr *hdr;

	if (!out->words)
		return chlb_err(err, errlen, -ENOMEM, "out of memory for a %u-word table", nwords);
	out->nwords = nwords;
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->magic = CHLB_TABLE_MAGIC;
	hdr->algo = algo;
	hdr->fallback = CHLB_TOMBSTONE;
	hdr->words = nwords;
	return 0;
}

int build_alloc(struct chlb_table *out, __u32 algo, __u32 nwords, char *err, size_t errlen)
{
	out->words = calloc(nwords, sizeof(__u32));
	return alloc_words(out, algo, nwords, err, errlen);
}

/*
 * Only words [0, zero_words) zeroed: for a builder that writes every word
 * past them. chlbd keeps freed tables in its heap, so calloc memsets the
 * whole reused chunk; the ring's pairs (1.3 MB at 160k vnodes) are all
 * written by the scatter anyway, and zeroing them first costs time (docs/performance.md).
 */
int build_alloc_prefix(struct chlb_table *out, __u32 algo, __u32 nwords, __u32 zero_words,
		       char *err, size_t errlen)
{
	out->words = malloc((size_t)nwords * sizeof(__u32));
	if (out->words)
		memset(out->words, 0, (size_t)zero_words * sizeof(__u32));
	return alloc_words(out, algo, nwords, err, errlen);
}

/* A Maglev-format (direct-indexed) table of m entries naming nlive backends. */
int build_alloc_direct(struct chlb_table *out, __u32 m, __u32 nlive, __u32 **entry, char *err,
		       size_t errlen)
{
	struct chlb_table_hdr *hdr;
	int rc = build_alloc(out, CHLB_ALGO_MAGLEV, CHLB_TBL_HDR_WORDS + m, err, errlen);

	if (rc)
		return rc;
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->count = m;
	hdr->nbackends = nlive;
	*entry = out->words + CHLB_TBL_HDR_WORDS;
	return 0;
}

static int cmp_name_idx(const void *a, const void *b, void *ctx)
{
	const struct chlb_table_be *be = ctx;

	return strcmp(be[*(const __u32 *)a].name, be[*(const __u32 *)b].name);
}

void build_sort_by_name(const struct chlb_table_be *be, __u32 n, __u32 *idx)
{
	for (__u32 i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_name_idx, (void *)be);
}

#if defined(__x86_64__)
/*
 * Three streams at once: the instruction's latency is three times its
 * throughput, so one stream runs it at a third of its speed. Blocks of
 * STREAM bytes A, B, C from state s: crc(s, ABC) = Z(Z(crc(s, A)) ^
 * crc(0, B)) ^ crc(0, C), where Z, the state after STREAM zero bytes, is
 * linear: a table per state byte (zero_tab, made once).
 */
#define STREAM 4096
static __u32 zero_tab[4][256];
static pthread_once_t zero_tab_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static void zero_tab_make(void)
{
	for (__u32 k = 0; k < 4; k++)
		for (__u32 b = 0; b < 256; b++) {
			__u64 c = (__u64)b << (8 * k);

			for (__u32 i = 0; i < STREAM / 8; i++)
				c = __builtin_ia32_crc32di(c, 0);
			zero_tab[k][b] = (__u32)c;
		}
}

static __u32 after_zeros(__u32 c)
{
	return zero_tab[0][c & 0xff] ^ zero_tab[1][(c >> 8) & 0xff] ^
	       zero_tab[2][(c >> 16) & 0xff] ^ zero_tab[3][c >> 24];
}

/*
 * The same raw CRC32C update as chlb_crc32c_update() with the SSE4.2 crc32
 * instruction: a ring's words are MBs, and the table-driven CRC over them
 * cost as much as building the ring.
 */
__attribute__((target("sse4.2"))) static __u32 crc32c_update_hw(__u32 crc, const void *buf,
								size_t len)
{
	const __u8 *p = buf;
	__u64 c = crc;

	if (len >= 3 * STREAM)
		pthread_once(&zero_tab_once, zero_tab_make);
	for (; len >= 3 * STREAM; p += 3 * STREAM, len -= 3 * STREAM) {
		__u64 c1 = 0, c2 = 0;

		for (size_t i = 0; i < STREAM; i += 8) {
			__u64 a, b, d;

			memcpy(&a, p + i, 8);
			memcpy(&b, p + STREAM + i, 8);
			memcpy(&d, p + 2 * STREAM + i, 8);
			c = __builtin_ia32_crc32di(c, a);
			c1 = __builtin_ia32_crc32di(c1, b);
			c2 = __builtin_ia32_crc32di(c2, d);
		}
		c = after_zeros(after_zeros((__u32)c) ^ (__u32)c1) ^ (__u32)c2;
	}
	for (; len >= 8; p += 8, len -= 8) {
		__u64 v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	for (; len; p++, len--)
		c = __builtin_ia32_crc32qi((__u32)c, *p);
	return (__u32)c;
}
#endif

__u32 build_crc32c_update(__u32 crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return crc32c_update_hw(crc, buf, len);
#endif
	for (; len > (1u << 30); buf = (const __u8 *)buf + (1u << 30), len -= 1u << 30)
		crc = chlb_crc32c_update(crc, buf, 1u << 30);
	return chlb_crc32c_update(crc, buf, (__u32)len);
}

__u32 chlb_table_fingerprint(const __u32 *words, __u32 nwords)
{
	if (nwords <= CHLB_TBL_HDR_WORDS)
		return chlb_crc32c("", 0);
	return build_crc32c_update(CHLB_CRC32C_INIT, words + CHLB_TBL_HDR_WORDS,
				   (size_t)(nwords - CHLB_TBL_HDR_WORDS) * 4) ^
	       0xffffffffu;
}

void chlb_table_free(struct chlb_table *t)
{
	free(t->words);
	t->words = NULL;
	t->nwords = 0;
}

int chlb_table_decide(const struct chlb_table *t, __u32 crc, __u32 *slot)
{
	const struct chlb_table_hdr *hdr;
	struct chlb_flat_table ft;

	if (!t->words || t->nwords < CHLB_TBL_HDR_WORDS)
		return -EINVAL;
	hdr = chlb_table_header(t);
	if (hdr->magic != CHLB_TABLE_MAGIC || hdr->words != t->nwords)
		return -EINVAL;
	if (hdr->count == 0 || (hdr->algo == CHLB_ALGO_JUMP && hdr->nbackends == 0))
		return -ENOENT;
	ft.w = t->words;
	ft.nwords = t->nwords;
	return chlb_table_lookup(&ft, hdr, crc, slot) ? -EINVAL : 0;
}
