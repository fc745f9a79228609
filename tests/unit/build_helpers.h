/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by the builder tests: backend sets, a PRNG, table access. */
#ifndef CHLB_TEST_BUILD_HELPERS_H
#define CHLB_TEST_BUILD_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chlb_build.h"

static inline __u64 t_rand(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* n backends "10.9.<i/250>.<i%250+1>", slot 1000 + i, weight w (0: 100) */
static inline struct chlb_be *t_backends(__u32 n, __u32 w)
{
	struct chlb_be *be = calloc(n ? n : 1, sizeof(*be));

	for (__u32 i = 0; i < n; i++) {
		snprintf(be[i].name, sizeof(be[i].name), "10.9.%u.%u", i / 250, i % 250 + 1);
		be[i].slot = 1000 + i;
		be[i].weight = w ? w : 100;
	}
	return be;
}

static inline void t_shuffle(struct chlb_be *be, __u32 n, __u64 *seed)
{
	for (__u32 i = n; i > 1; i--) {
		__u32 j = t_rand(seed) % i;
		struct chlb_be tmp = be[i - 1];

		be[i - 1] = be[j];
		be[j] = tmp;
	}
}

static inline const struct chlb_table_hdr *t_hdr(const struct chlb_table *t)
{
	return (const struct chlb_table_hdr *)t->words;
}

static inline struct chlb_table t_build(__u32 algo, const struct chlb_be *be, __u32 n)
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

#endif /* CHLB_TEST_BUILD_HELPERS_H */
