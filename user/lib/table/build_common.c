// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb_table_build(): validation and per-algorithm dispatch, plus what every
 * table shares (allocation, fingerprint, the decision through the shared
 * lookup of include/chlb_table.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

/* Header of a fresh table at out->words (NULL: out of memory). */
static int alloc_words(struct chlb_table *out, __u32 algo, __u32 nwords, char *err, size_t errlen)
{
	struct chlb_table_hdr *hdr;

	if (!out->words)
		return build_err(err, errlen, -ENOMEM, "out of memory for a %u-word table", nwords);
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
	const struct chlb_be *be = ctx;

	return strcmp(be[*(const __u32 *)a].name, be[*(const __u32 *)b].name);
}

void build_sort_by_name(const struct chlb_be *be, __u32 n, __u32 *idx)
{
	for (__u32 i = 0; i < n; i++)
		idx[i] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_name_idx, (void *)be);
}

/*
 * Names present, terminated, unique; weights in range; slots not the
 * tombstone. byname[n] gets be[] indices in name order (checking uniqueness
 * sorts them anyway; the ring and maglev builders reuse it).
 */
static int validate(const struct chlb_be *be, __u32 n, __u32 *byname, char *err, size_t errlen)
{
	if (n > CHLB_MAX_SVC_BACKENDS)
		return build_err(err, errlen, -E2BIG, "%u backends: a service holds at most %u", n,
				 CHLB_MAX_SVC_BACKENDS);
	if (n && !be)
		return build_err(err, errlen, -EINVAL, "no backend array");
	for (__u32 i = 0; i < n; i++) {
		if (memchr(be[i].name, 0, sizeof(be[i].name)) == NULL || !be[i].name[0])
			return build_err(err, errlen, -EINVAL,
					 "backend %u: empty or unterminated name", i);
		if (be[i].weight > CHLB_WEIGHT_MAX)
			return build_err(err, errlen, -EINVAL, "backend %s: weight %u > %u",
					 be[i].name, be[i].weight, CHLB_WEIGHT_MAX);
		if (be[i].slot == CHLB_TOMBSTONE)
			return build_err(err, errlen, -EINVAL, "backend %s: slot %#x is reserved",
					 be[i].name, be[i].slot);
	}
	build_sort_by_name(be, n, byname);
	for (__u32 i = 1; i < n; i++)
		if (!strcmp(be[byname[i - 1]].name, be[byname[i]].name))
			return build_err(err, errlen, -EINVAL, "backend %s listed twice",
					 be[byname[i]].name);
	return 0;
}

#if defined(__x86_64__)
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

static __u32 crc32c_fast(const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return crc32c_update_hw(CHLB_CRC32C_INIT, buf, len) ^ 0xffffffffu;
#endif
	return chlb_crc32c(buf, (__u32)len);
}

__u32 chlb_table_fingerprint(const __u32 *words, __u32 nwords)
{
	if (nwords <= CHLB_TBL_HDR_WORDS)
		return chlb_crc32c("", 0);
	return crc32c_fast(words + CHLB_TBL_HDR_WORDS, (size_t)(nwords - CHLB_TBL_HDR_WORDS) * 4);
}

int chlb_table_build(const struct chlb_table_spec *spec, const struct chlb_be *be, __u32 n,
		     struct chlb_table *out, char *err, size_t errlen)
{
	struct chlb_table_hdr *hdr;
	__u32 *byname;
	int rc;

	out->words = NULL;
	out->nwords = 0;
	if (!spec)
		return build_err(err, errlen, -EINVAL, "no table spec");
	if (n > CHLB_MAX_SVC_BACKENDS)
		return build_err(err, errlen, -E2BIG, "%u backends: a service holds at most %u", n,
				 CHLB_MAX_SVC_BACKENDS);
	byname = malloc((n ? n : 1) * sizeof(*byname));
	if (!byname)
		return build_err(err, errlen, -ENOMEM, "out of memory");
	rc = validate(be, n, byname, err, errlen);
	if (rc) {
		free(byname);
		return rc;
	}
	switch (spec->algo) {
	case CHLB_ALGO_RING:
		rc = build_ring(spec, be, n, byname, out, err, errlen);
		break;
	case CHLB_ALGO_JUMP:
		rc = build_jump(spec, be, n, out, err, errlen);
		break;
	case CHLB_ALGO_MAGLEV:
		rc = build_maglev(spec, be, n, byname, out, err, errlen);
		break;
	case CHLB_ALGO_JTABLE:
		rc = build_jtable(spec, be, n, out, err, errlen);
		break;
	default:
		rc = build_err(err, errlen, -EINVAL, "unknown algorithm %u", spec->algo);
		break;
	}
	free(byname);
	if (rc) {
		chlb_table_free(out);
		return rc;
	}
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->fingerprint = chlb_table_fingerprint(out->words, out->nwords);
	return 0;
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
