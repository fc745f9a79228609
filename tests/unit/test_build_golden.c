// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Regression gate for the ring and maglev builders: the tables other hosts
 * and the data plane already hold must come out word for word the same
 * whatever the builders do internally (sorting, caching, fill loop). The
 * expected values were recorded from the straightforward builders (snprintf
 * + qsort ring, modulo maglev walk) before they were optimized. The ring's
 * directory changed format since (DIRECT entries, 4 buckets per vnode): its
 * nwords, dir_bits and fingerprint were re-recorded then, while `pairs` (the
 * vnode pairs alone, which make every decision) came out the same from the
 * old builder and the new.
 * CHLB_GOLDEN_PRINT=1 prints the current values in the table's format.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

enum names {
	V4,
	V6,
	LONG
};

struct golden {
	const char *what;
	__u32 algo, n, vnodes, m;
	enum names names;
	__u32 weights; /* 0: all 100; 1: mixed incl. drained; 2: extremes */
	__u64 seed;    /* insertion order */
	/* expected */
	__u32 nwords, count, nbackends, dir_bits, fingerprint;
	__u32 pairs; /* ring: CRC32C of the vnode pairs alone (the decisions); else 0 */
};

static const struct golden cases[] = {
	{ "ring n0", CHLB_ALGO_RING, 0, 0, 0, V4, 0, 1, 8, 0, 0, 0, 0, 0 },
	{ "ring n1", CHLB_ALGO_RING, 1, 0, 0, V4, 0, 1, 1352, 160, 1, 10, 0x76ab088b, 0x49fe2f8d },
	{ "ring n3 k1", CHLB_ALGO_RING, 3, 1, 0, V4, 0, 2, 30, 3, 3, 4, 0x655b54c1, 0x82b3227b },
	{ "ring n10", CHLB_ALGO_RING, 10, 0, 0, V4, 0, 3, 11400, 1600, 10, 13, 0xa718adea,
	  0x1d41bc86 },
	{ "ring n10 mixed weights", CHLB_ALGO_RING, 10, 0, 0, V4, 1, 4, 10710, 1255, 8, 13,
	  0x98494955, 0xb12dbe4b },
	{ "ring n9 extreme weights", CHLB_ALGO_RING, 9, 0, 0, V6, 2, 5, 390158, 64003, 7, 18,
	  0x2623f8dc, 0x23230e65 },
	{ "ring n1000 k160", CHLB_ALGO_RING, 1000, 0, 0, V4, 0, 6, 1368584, 160000, 1000, 20,
	  0xb5343523, 0xd3bed238 },
	{ "ring n1000 k160 ipv6 mixed", CHLB_ALGO_RING, 1000, 160, 0, V6, 1, 7, 767706, 121705, 778,
	  19, 0x484980a7, 0x85027851 },
	{ "ring n1000 k37 long names", CHLB_ALGO_RING, 1000, 37, 0, LONG, 0, 8, 336152, 37000, 1000,
	  18, 0x7861acfb, 0x60cf7646 },
	{ "ring n1000 k1", CHLB_ALGO_RING, 1000, 1, 0, V4, 0, 9, 6104, 1000, 1000, 12, 0xff0c8c93,
	  0x4669cb02 },
	{ "ring n100 k100 extreme weights", CHLB_ALGO_RING, 100, 100, 0, V6, 2, 10, 1848664, 400040,
	  80, 20, 0xfd53f26d, 0x384ca2d4 },
	{ "ring n4096 k256 (1M vnodes, ties)", CHLB_ALGO_RING, 4096, 256, 0, V4, 0, 11, 3145736,
	  1048576, 4096, 20, 0x22fea8f1, 0x2b602735 },
	{ "ring n2000 k500 long (ties)", CHLB_ALGO_RING, 2000, 500, 0, LONG, 1, 12, 2568064, 759740,
	  1555, 20, 0x0a8fefe2, 0x400b1dee },
	{ "maglev n0", CHLB_ALGO_MAGLEV, 0, 0, 0, V4, 0, 1, 8, 0, 0, 0, 0, 0 },
	{ "maglev n1", CHLB_ALGO_MAGLEV, 1, 0, 0, V4, 0, 1, 65545, 65537, 1, 0, 0x09589292, 0 },
	{ "maglev n10 m13", CHLB_ALGO_MAGLEV, 10, 0, 13, V4, 0, 2, 21, 13, 10, 0, 0x8d03f66b, 0 },
	{ "maglev n10", CHLB_ALGO_MAGLEV, 10, 0, 0, V6, 0, 3, 65545, 65537, 10, 0, 0xd6f7d1c2, 0 },
	{ "maglev n10 mixed weights", CHLB_ALGO_MAGLEV, 10, 0, 251, V4, 1, 4, 259, 251, 8, 0,
	  0x9515a6fa, 0 },
	{ "maglev n1000", CHLB_ALGO_MAGLEV, 1000, 0, 0, V4, 0, 5, 65545, 65537, 1000, 0, 0xcc20a746,
	  0 },
	{ "maglev n1000 ipv6 mixed", CHLB_ALGO_MAGLEV, 1000, 0, 65537, V6, 1, 6, 65545, 65537, 778,
	  0, 0xd12a9f1a, 0 },
	{ "maglev n1000 long extreme weights", CHLB_ALGO_MAGLEV, 1000, 0, 10007, LONG, 2, 7, 10015,
	  10007, 800, 0, 0x2076e6ad, 0 },
	{ "maglev n4096 m1048573", CHLB_ALGO_MAGLEV, 4096, 0, 1048573, V4, 0, 8, 1048581, 1048573,
	  4096, 0, 0x936b9d62, 0 },
	{ "maglev n4096 m4099 mixed", CHLB_ALGO_MAGLEV, 4096, 0, 4099, V6, 1, 9, 4107, 4099, 3186,
	  0, 0x2601c38a, 0 },
};

static struct chlb_be *make_set(const struct golden *g)
{
	struct chlb_be *be = calloc(g->n ? g->n : 1, sizeof(*be));
	__u64 s = g->seed;

	for (__u32 i = 0; i < g->n; i++) {
		if (g->names == V4)
			snprintf(be[i].name, sizeof(be[i].name), "10.%u.%u.%u", i / 62500,
				 i / 250 % 250, i % 250 + 1);
		else if (g->names == V6)
			snprintf(be[i].name, sizeof(be[i].name), "2001:db8:%x::%x", i / 100,
				 i * 7919 % 65536);
		else /* 47 characters: the longest name a backend can have */
			snprintf(be[i].name, sizeof(be[i].name),
				 "2001:db8:ffff:ffff:ffff:ffff:%04x:%04x-%08u", i & 0xffff,
				 ~i & 0xffff, i % 100000000u);
		be[i].slot = 7 + i * 3;
		if (g->weights == 0)
			be[i].weight = 100;
		else if (g->weights == 1)
			be[i].weight =
			    (const __u32[]){ 100, 0, 50, 150, 1, 100, 33, 0, 250 }[i % 9];
		else
			be[i].weight = (const __u32[]){ 10000, 1, 0, 9999, 2 }[i % 5];
	}
	t_shuffle(be, g->n, &s);
	return be;
}

static void test_golden(void **state)
{
	int print = getenv("CHLB_GOLDEN_PRINT") != NULL;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct golden *g = &cases[c];
		struct chlb_table_spec spec = { .algo = g->algo,
						.vnodes = g->vnodes,
						.table_size = g->m };
		struct chlb_be *be = make_set(g);
		struct chlb_table t, again;
		const struct chlb_table_hdr *h;
		char err[256] = "";
		__u32 pairs = 0;

		assert_int_equal(chlb_table_build(&spec, be, g->n, &t, err, sizeof(err)), 0);
		h = t_hdr(&t);
		if (g->algo == CHLB_ALGO_RING && h->count)
			pairs = chlb_crc32c(t.words + chlb_ring_base(h->dir_bits), h->count * 8);
		if (print)
			printf("\t{ \"%s\", %s, %u, %u, %u, %s, %u, %llu, %u, %u, %u, %u, %#010x, "
			       "%#010x },\n",
			       g->what,
			       g->algo == CHLB_ALGO_RING ? "CHLB_ALGO_RING" : "CHLB_ALGO_MAGLEV",
			       g->n, g->vnodes, g->m,
			       (const char *[]){ "V4", "V6", "LONG" }[g->names], g->weights,
			       (unsigned long long)g->seed, t.nwords, h->count, h->nbackends,
			       h->dir_bits, h->fingerprint, pairs);
		else {
			print_message("# %s\n", g->what);
			assert_int_equal(t.nwords, g->nwords);
			assert_int_equal(h->count, g->count);
			assert_int_equal(h->nbackends, g->nbackends);
			assert_int_equal(h->dir_bits, g->dir_bits);
			assert_int_equal(h->fingerprint, g->fingerprint);
			assert_int_equal(pairs, g->pairs);
		}
		/* a second build (warm caches, if any) gives the same words */
		assert_int_equal(chlb_table_build(&spec, be, g->n, &again, err, sizeof(err)), 0);
		assert_int_equal(again.nwords, t.nwords);
		assert_memory_equal(again.words, t.words, (size_t)t.nwords * 4);
		chlb_table_free(&again);
		chlb_table_free(&t);
		free(be);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
