// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Regression gate for the builders: the tables other hosts
 * and the data plane already hold must come out word for word the same
 * whatever the builders do internally (sorting, caching, fill loop). The
 * expected values were recorded from the straightforward builders (snprintf
 * + qsort ring, modulo maglev walk) before they were optimized.
 * CHLB_GOLDEN_PRINT=1 prints the current values in the table's format.
 * Jump and jtable were recorded when their weights became thresholds and
 * quotas (one bucket per backend); their fresh order is name order, so the
 * shuffled insertion order must not change them.
 *
 * Rings were recorded before the ring's lines replaced its directory: a
 * ring's words are compared in that format (t_ring_old_format), which holds
 * the same sorted vnodes; test_build_ring checks the lines against them.
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
};

static const struct golden cases[] = {
	{ "ring n0", CHLB_ALGO_RING, 0, 0, 0, V4, 0, 1, 8, 0, 0, 0, 0 },
	{ "ring n1", CHLB_ALGO_RING, 1, 0, 0, V4, 0, 1, 586, 160, 1, 8, 0x6a999ab7 },
	{ "ring n3 k1", CHLB_ALGO_RING, 3, 1, 0, V4, 0, 2, 20, 3, 3, 2, 0x0fb6f209 },
	{ "ring n10", CHLB_ALGO_RING, 10, 0, 0, V4, 0, 3, 5258, 1600, 10, 11, 0x7861dcde },
	{ "ring n10 mixed weights", CHLB_ALGO_RING, 10, 0, 0, V4, 1, 4, 4568, 1255, 8, 11,
	  0xf04ac856 },
	{ "ring n9 extreme weights", CHLB_ALGO_RING, 9, 0, 0, V6, 2, 5, 193552, 64003, 7, 16,
	  0x96108d6a },
	{ "ring n1000 k160", CHLB_ALGO_RING, 1000, 0, 0, V4, 0, 6, 582154, 160000, 1000, 18,
	  0xcadb27c8 },
	{ "ring n1000 k160 ipv6 mixed", CHLB_ALGO_RING, 1000, 160, 0, V6, 1, 7, 374492, 121705, 778,
	  17, 0xc2fff08d },
	{ "ring n1000 k37 long names", CHLB_ALGO_RING, 1000, 37, 0, LONG, 0, 8, 139546, 37000, 1000,
	  16, 0xc887caab },
	{ "ring n1000 k1", CHLB_ALGO_RING, 1000, 1, 0, V4, 0, 9, 3034, 1000, 1000, 10, 0x68255420 },
	{ "ring n100 k100 extreme weights", CHLB_ALGO_RING, 100, 100, 0, V6, 2, 10, 1324378, 400040,
	  80, 19, 0x3ffbcefd },
	{ "ring n4096 k256 (1M vnodes, ties)", CHLB_ALGO_RING, 4096, 256, 0, V4, 0, 11, 3145738,
	  1048576, 4096, 20, 0xc9860a9f },
	{ "ring n2000 k500 long (ties)", CHLB_ALGO_RING, 2000, 500, 0, LONG, 1, 12, 2568066, 759740,
	  1555, 20, 0x4acdd6be },
	{ "maglev n0", CHLB_ALGO_MAGLEV, 0, 0, 0, V4, 0, 1, 8, 0, 0, 0, 0 },
	{ "maglev n1", CHLB_ALGO_MAGLEV, 1, 0, 0, V4, 0, 1, 65545, 65537, 1, 0, 0x09589292 },
	{ "maglev n10 m13", CHLB_ALGO_MAGLEV, 10, 0, 13, V4, 0, 2, 21, 13, 10, 0, 0x8d03f66b },
	{ "maglev n10", CHLB_ALGO_MAGLEV, 10, 0, 0, V6, 0, 3, 65545, 65537, 10, 0, 0xd6f7d1c2 },
	{ "maglev n10 mixed weights", CHLB_ALGO_MAGLEV, 10, 0, 251, V4, 1, 4, 259, 251, 8, 0,
	  0x9515a6fa },
	{ "maglev n1000", CHLB_ALGO_MAGLEV, 1000, 0, 0, V4, 0, 5, 65545, 65537, 1000, 0,
	  0xcc20a746 },
	{ "maglev n1000 ipv6 mixed", CHLB_ALGO_MAGLEV, 1000, 0, 65537, V6, 1, 6, 65545, 65537, 778,
	  0, 0xd12a9f1a },
	{ "maglev n1000 long extreme weights", CHLB_ALGO_MAGLEV, 1000, 0, 10007, LONG, 2, 7, 10015,
	  10007, 800, 0, 0x2076e6ad },
	{ "maglev n4096 m1048573", CHLB_ALGO_MAGLEV, 4096, 0, 1048573, V4, 0, 8, 1048581, 1048573,
	  4096, 0, 0x936b9d62 },
	{ "maglev n4096 m4099 mixed", CHLB_ALGO_MAGLEV, 4096, 0, 4099, V6, 1, 9, 4107, 4099, 3186,
	  0, 0x2601c38a },
	/* weighted jump and jtable (one bucket per backend, fresh order = name order) */
	{ "jump n0", CHLB_ALGO_JUMP, 0, 0, 0, V4, 0, 1, 8, 0, 0, 0, 0 },
	{ "jump n10", CHLB_ALGO_JUMP, 10, 0, 0, V4, 0, 2, 18, 10, 10, 0, 0x937c2283 },
	{ "jump n10 mixed weights", CHLB_ALGO_JUMP, 10, 0, 0, V6, 1, 3, 18, 10, 8, 0, 0x42c777b0 },
	{ "jump n1000 extreme weights", CHLB_ALGO_JUMP, 1000, 0, 0, LONG, 2, 4, 1008, 1000, 800, 0,
	  0xda32c235 },
	{ "jtable n10 m251 mixed", CHLB_ALGO_JTABLE, 10, 0, 251, V4, 1, 5, 259, 251, 8, 0,
	  0xedb8370c },
	{ "jtable n1000", CHLB_ALGO_JTABLE, 1000, 0, 0, V6, 0, 6, 65545, 65537, 1000, 0,
	  0x4a8652a0 },
	{ "jtable n1000 mixed", CHLB_ALGO_JTABLE, 1000, 0, 65537, V4, 1, 7, 65545, 65537, 778, 0,
	  0x8bcccf31 },
};

static struct chlb_table_be *make_set(const struct golden *g)
{
	struct chlb_table_be *be = calloc(g->n ? g->n : 1, sizeof(*be));
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
		struct chlb_table_be *be = make_set(g);
		struct chlb_table t, again;
		struct chlb_table_hdr h;
		char err[256] = "";
		__u32 nwords;

		assert_int_equal(chlb_table_build(&spec, be, g->n, &t, err, sizeof(err)), 0);
		h = *t_hdr(&t);
		nwords = t.nwords;
		if (g->algo == CHLB_ALGO_RING && h.count) {
			__u32 *old = t_ring_old_format(&t, &nwords, &h.dir_bits);

			h.fingerprint = chlb_table_fingerprint(old, nwords);
			free(old);
		}
		if (print)
			printf(
			    "\t{ \"%s\", %s, %u, %u, %u, %s, %u, %llu, %u, %u, %u, %u, %#010x },\n",
			    g->what,
			    (const char *[]){ "?", "CHLB_ALGO_RING", "CHLB_ALGO_JUMP",
					      "CHLB_ALGO_MAGLEV", "CHLB_ALGO_JTABLE" }[g->algo],
			    g->n, g->vnodes, g->m, (const char *[]){ "V4", "V6", "LONG" }[g->names],
			    g->weights, (unsigned long long)g->seed, nwords, h.count, h.nbackends,
			    h.dir_bits, h.fingerprint);
		else {
			print_message("# %s\n", g->what);
			assert_int_equal(nwords, g->nwords);
			assert_int_equal(h.count, g->count);
			assert_int_equal(h.nbackends, g->nbackends);
			assert_int_equal(h.dir_bits, g->dir_bits);
			assert_int_equal(h.fingerprint, g->fingerprint);
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
