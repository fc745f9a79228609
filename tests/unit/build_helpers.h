/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by the builder tests: backend sets, a PRNG, table access. */
#ifndef CHLB_TEST_BUILD_HELPERS_H
#define CHLB_TEST_BUILD_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build.h"

static inline __u64 t_rand(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* n backends "10.9.<i/250>.<i%250+1>", slot 1000 + i, weight w (0: 100) */
static inline struct chlb_table_be *t_backends(__u32 n, __u32 w)
{
	struct chlb_table_be *be = calloc(n ? n : 1, sizeof(*be));

	for (__u32 i = 0; i < n; i++) {
		snprintf(be[i].name, sizeof(be[i].name), "10.9.%u.%u", i / 250, i % 250 + 1);
		be[i].slot = 1000 + i;
		be[i].weight = w ? w : 100;
	}
	return be;
}

static inline void t_shuffle(struct chlb_table_be *be, __u32 n, __u64 *seed)
{
	for (__u32 i = n; i > 1; i--) {
		__u32 j = t_rand(seed) % i;
		struct chlb_table_be tmp = be[i - 1];

		be[i - 1] = be[j];
		be[j] = tmp;
	}
}

static inline const struct chlb_table_hdr *t_hdr(const struct chlb_table *t)
{
	return (const struct chlb_table_hdr *)t->words;
}

static inline struct chlb_table t_build(__u32 algo, const struct chlb_table_be *be, __u32 n)
{
	struct chlb_table_spec spec = { .algo = algo };
	struct chlb_table t;
	char err[256] = "";
	int rc = chlb_table_build(&spec, be, n, &t, err, sizeof(err));

	if (rc) {
		fprintf(stderr, "build failed: %s\n", err);
		abort();
	}
	return t;
}

/*
 * The ring's lines and spill (include/chlb_table.h) for the sorted vnodes
 * {hash[i], slot[i]}, written the plain way, independent of the builder, into
 * w (chlb_ring_base(bits) + 2 * count words, header left alone). Returns the
 * table's length in words.
 */
static inline __u32 t_ring_lines(__u32 *w, __u32 bits, const __u32 *hash, const __u32 *slot,
				 __u32 count)
{
	__u32 v = 0, base = chlb_ring_base(bits), nspill = 0;

	for (__u64 d = 0; d < (1ull << bits); d++) {
		__u32 *line = w + CHLB_RING_LINES + d * CHLB_RING_LINE_WORDS, first = v, c;
		__u32 half[12] = { 0 };

		while (v < count && hash[v] >> (32 - bits) == d)
			v++;
		c = v - first;
		memset(line, 0, CHLB_RING_LINE_WORDS * 4);
		if (c > CHLB_RING_LINE_HASHES) {
			line[0] = nspill;
			line[1] = c;
			line[2] = slot[v < count ? v : 0];
			for (__u32 j = first; j < v; j++, nspill++) {
				w[base + 2 * nspill] = hash[j];
				w[base + 2 * nspill + 1] = slot[j];
			}
			half[11] = CHLB_RING_LINE_SPILL;
		} else {
			for (__u32 k = 0; k < CHLB_RING_LINE_HASHES; k++)
				line[k] = k < c ? hash[first + k] : 0xffffffffu;
			for (__u32 j = 0; j < c; j++)
				half[j] = slot[first + j];
			half[c] = slot[v < count ? v : 0];
			half[11] = c;
		}
		for (__u32 k = 0; k < 6; k++)
			line[CHLB_RING_LINE_HASHES + k] = half[2 * k] | half[2 * k + 1] << 16;
	}
	return base + 2 * nspill;
}

/* A ring table's vnodes (chlb_ring_vnodes), in arrays the caller frees. */
static inline void t_vnodes(const struct chlb_table *t, __u32 **hash, __u32 **slot)
{
	__u32 n = t_hdr(t)->count;

	*hash = malloc((n + 1) * 4);
	*slot = malloc((n + 1) * 4);
	if (chlb_ring_vnodes(t, *hash, *slot)) {
		fprintf(stderr, "malformed ring\n");
		abort();
	}
}

/*
 * The same ring in the format before the lines (a directory word per
 * 2^(32 - bits) of the hashes, ~1 vnode each, then all vnode pairs), for
 * the golden values recorded in it: its words, *nwords and *bits.
 */
static inline __u32 *t_ring_old_format(const struct chlb_table *t, __u32 *nwords, __u32 *bits)
{
	const struct chlb_table_hdr *h = t_hdr(t);
	__u32 b = 1, dir = CHLB_TBL_HDR_WORDS, base, *w, v = 0, *hash, *slot;

	t_vnodes(t, &hash, &slot);
	while (b < 20 && (1u << b) < h->count)
		b++;
	base = dir + (1u << b) + 1;
	base += base & 1;
	*nwords = base + 2 * h->count;
	*bits = b;
	w = calloc(*nwords, 4);
	memcpy(w, h, sizeof(*h));
	for (__u32 d = 0; d <= (1u << b); d++) {
		while (v < h->count && hash[v] < ((__u64)d << (32 - b)))
			v++;
		w[dir + d] = v;
	}
	for (__u32 i = 0; i < h->count; i++) {
		w[base + 2 * i] = hash[i];
		w[base + 2 * i + 1] = slot[i];
	}
	free(hash);
	free(slot);
	return w;
}

#endif /* CHLB_TEST_BUILD_HELPERS_H */
