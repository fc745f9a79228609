// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hrw builder: the fast build equals rendezvous by its definition (every
 * backend scored for every entry), determinism, the rendezvous properties
 * exactly (add, remove, weight change move only that backend's entries),
 * weights, a golden table, limits and empty sets.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

static struct chlb_table build_m(const struct chlb_table_be *be, __u32 n, __u32 m)
{
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_HRW, .table_size = m };
	struct chlb_table t;
	char err[256] = "";

	assert_int_equal(chlb_table_build(&spec, be, n, &t, err, sizeof(err)), 0);
	return t;
}

static const __u32 *entries(const struct chlb_table *t)
{
	return t->words + CHLB_TBL_HDR_WORDS;
}

/* The table holds, entry by entry, what every backend scored gives. */
static void test_table_is_direct_rendezvous(void **state)
{
	static const struct {
		__u32 n, m, random_w;
	} c[] = { { 1, 7, 0 },	   { 2, 251, 0 },     { 7, 4099, 0 },	{ 100, 65537, 0 },
		  { 50, 4099, 1 }, { 300, 65537, 1 }, { 1000, 4099, 1 } };
	__u64 seed = 7;

	for (unsigned k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct chlb_table_be *be = t_backends(c[k].n, 0);
		__u32 *direct = malloc(c[k].m * sizeof(*direct));
		char err[256];
		struct chlb_table t;
		__u32 differ = 0;

		for (__u32 i = 0; c[k].random_w && i < c[k].n; i++)
			be[i].weight = 1 + t_rand(&seed) % CHLB_WEIGHT_MAX;
		t = build_m(be, c[k].n, c[k].m);
		assert_int_equal(t_hdr(&t)->algo, CHLB_ALGO_MAGLEV);
		assert_int_equal(t_hdr(&t)->count, c[k].m);
		assert_int_equal(chlb_hrw_direct(be, c[k].n, c[k].m, 1, direct, err, sizeof(err)),
				 0);
		for (__u32 e = 0; e < c[k].m; e++)
			differ += direct[e] != entries(&t)[e];
		assert_int_equal(differ, 0);
		chlb_table_free(&t);
		free(direct);
		free(be);
	}
}

/* Same set, any order, any slots: the same decisions. */
static void test_deterministic(void **state)
{
	struct chlb_table_be *be = t_backends(200, 0);
	struct chlb_table a, b;
	__u64 seed = 3;

	for (__u32 i = 0; i < 200; i++)
		be[i].weight = 1 + t_rand(&seed) % 500;
	a = build_m(be, 200, 4099);
	t_shuffle(be, 200, &seed);
	b = build_m(be, 200, 4099);
	assert_int_equal(a.nwords, b.nwords);
	assert_memory_equal(a.words, b.words, a.nwords * 4);
	chlb_table_free(&a);
	chlb_table_free(&b);
	free(be);
}

/*
 * Entries that differ between a and b all involve slot s: to s when
 * to_only, from s when from_only; returns how many moved.
 */
static __u32 moved_only(const struct chlb_table *a, const struct chlb_table *b, __u32 s,
			int to_only, int from_only)
{
	__u32 m = t_hdr(a)->count, moved = 0;

	for (__u32 e = 0; e < m; e++) {
		__u32 x = entries(a)[e], y = entries(b)[e];

		if (x == y)
			continue;
		moved++;
		if (to_only)
			assert_int_equal(y, s);
		else if (from_only)
			assert_int_equal(x, s);
		else
			assert_true(x == s || y == s);
	}
	return moved;
}

/* Rendezvous exactly: only the changed backend's entries move, for uneven weights too. */
static void test_only_the_changed_backend_moves(void **state)
{
	const __u32 n = 100, m = 65537;
	struct chlb_table_be *be = t_backends(n + 1, 0);
	struct chlb_table base, t;
	__u64 seed = 11;
	__u32 mv, cnt = 0, w7;

	for (__u32 i = 0; i <= n; i++)
		be[i].weight = 1 + t_rand(&seed) % 1000;
	base = build_m(be, n, m);
	/* add be[n] */
	t = build_m(be, n + 1, m);
	mv = moved_only(&base, &t, be[n].slot, 1, 0);
	for (__u32 e = 0; e < m; e++)
		cnt += entries(&t)[e] == be[n].slot;
	assert_int_equal(mv, cnt);
	chlb_table_free(&t);
	/* remove be[n/2]: only its entries move */
	{
		struct chlb_table_be keep = be[n / 2];

		be[n / 2] = be[n - 1];
		t = build_m(be, n - 1, m);
		moved_only(&base, &t, keep.slot, 0, 1);
		be[n / 2] = keep;
		chlb_table_free(&t);
	}
	/* raise, then lower, one weight */
	w7 = be[7].weight;
	be[7].weight *= 3;
	t = build_m(be, n, m);
	assert_true(moved_only(&base, &t, be[7].slot, 1, 0) > 0);
	chlb_table_free(&t);
	be[7].weight = be[7].weight / 3 / 2 + 1;
	t = build_m(be, n, m);
	moved_only(&base, &t, be[7].slot, 0, 1);
	chlb_table_free(&t);
	be[7].weight = w7;
	/* weight 0: drained, its entries go, nobody else's */
	be[9].weight = 0;
	t = build_m(be, n, m);
	moved_only(&base, &t, be[9].slot, 0, 1);
	for (__u32 e = 0; e < m; e++)
		assert_int_not_equal(entries(&t)[e], be[9].slot);
	chlb_table_free(&t);
	chlb_table_free(&base);
	free(be);
}

/* Shares follow weights within the binomial spread: 100,149,50,25 at M = 1048573. */
static void test_weights(void **state)
{
	static const __u32 w[] = { 100, 149, 50, 25 };
	const __u32 m = 1048573;
	struct chlb_table_be *be = t_backends(4, 0);
	struct chlb_table t;
	__u32 cnt[4] = { 0 };

	for (int i = 0; i < 4; i++)
		be[i].weight = w[i];
	t = build_m(be, 4, m);
	for (__u32 e = 0; e < m; e++)
		cnt[entries(&t)[e] - 1000]++;
	for (int i = 0; i < 4; i++) {
		double rel = cnt[i] / (m * w[i] / 324.0);

		print_message("# weight %u: %.4f of its share\n", w[i], rel);
		assert_true(rel > 0.99 && rel < 1.01);
	}
	chlb_table_free(&t);
	free(be);
}

/*
 * Golden: the decision fingerprint of fixed sets as recorded when hrw was
 * added (CHLB_GOLDEN_PRINT=1 prints the current values). A change here
 * changes every hrw service's decisions on upgrade.
 */
static void test_golden(void **state)
{
	static const struct {
		__u32 n, m, uneven, fp;
	} g[] = { { 10, 251, 0, 0x8f9d3426u },
		  { 1000, 65537, 0, 0xecc21563u },
		  { 100, 4099, 1, 0xb7c512bbu } };

	for (unsigned k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		struct chlb_table_be *be = t_backends(g[k].n, 0);
		struct chlb_table t;
		char err[256];
		__u32 fp;

		for (__u32 i = 0; g[k].uneven && i < g[k].n; i++)
			be[i].weight = 1 + i * 37 % 1000;
		t = build_m(be, g[k].n, g[k].m);
		assert_int_equal(chlb_table_decision_fp_be(&t, be, g[k].n, &fp, err, sizeof(err)),
				 0);
		if (getenv("CHLB_GOLDEN_PRINT"))
			print_message("# golden n %u m %u uneven %u: 0x%08xu\n", g[k].n, g[k].m,
				      g[k].uneven, fp);
		else
			assert_int_equal(fp, g[k].fp);
		chlb_table_free(&t);
		free(be);
	}
}

static void test_limits_and_empty(void **state)
{
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_HRW, .table_size = 4097 };
	struct chlb_table_be *be = t_backends(10, 0);
	struct chlb_table t;
	char err[256];
	__u32 got;

	assert_int_equal(chlb_table_build(&spec, be, 10, &t, err, sizeof(err)), -EINVAL);
	spec.table_size = 7;
	assert_int_equal(chlb_table_build(&spec, be, 10, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "must exceed"));
	t = build_m(be, 0, 251);
	assert_int_equal(chlb_table_decide(&t, 1, &got), -ENOENT);
	chlb_table_free(&t);
	for (int i = 0; i < 10; i++)
		be[i].weight = 0;
	t = build_m(be, 10, 251);
	assert_int_equal(chlb_table_decide(&t, 1, &got), -ENOENT);
	chlb_table_free(&t);
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_direct_rendezvous),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_only_the_changed_backend_moves),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_limits_and_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
