// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Maglev builder: the paper's fill, determinism, weights, limits, empty sets. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

static __u32 name_hash(const char *name, const char *suffix)
{
	char buf[80];
	int len = snprintf(buf, sizeof(buf), "%s#%s", name, suffix);

	return chlb_fmix32(chlb_crc32c(buf, len));
}

/*
 * The paper's Populate() for equal weights, written out independently:
 * backends in name order take turns claiming their next free preference.
 */
static void ref_populate(const struct chlb_table_be *sorted, __u32 n, __u32 m, __u32 *entry)
{
	__u32 *next = calloc(n, sizeof(*next)), filled = 0;

	for (__u32 i = 0; i < m; i++)
		entry[i] = CHLB_TOMBSTONE;
	while (1) {
		for (__u32 i = 0; i < n; i++) {
			__u32 off = name_hash(sorted[i].name, "offset") % m;
			__u32 skip = name_hash(sorted[i].name, "skip") % (m - 1) + 1;
			__u32 c = (off + (__u64)next[i] * skip) % m;

			while (entry[c] != CHLB_TOMBSTONE) {
				next[i]++;
				c = (off + (__u64)next[i] * skip) % m;
			}
			entry[c] = sorted[i].slot;
			next[i]++;
			if (++filled == m) {
				free(next);
				return;
			}
		}
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct chlb_table_be *)a)->name,
		      ((const struct chlb_table_be *)b)->name);
}

static void test_matches_reference_fill(void **state)
{
	__u32 sizes[] = { 1, 2, 5, 50 };

	for (unsigned s = 0; s < 4; s++) {
		__u32 n = sizes[s], m = 1009, *ref = malloc(m * 4);
		struct chlb_table_be *be = t_backends(n, 0), *sorted = malloc(n * sizeof(*be));
		struct chlb_table_spec spec = { .algo = CHLB_ALGO_MAGLEV, .table_size = m };
		struct chlb_table t;
		__u64 seed = 9;
		__u32 got;

		memcpy(sorted, be, n * sizeof(*be));
		qsort(sorted, n, sizeof(*be), cmp_name);
		ref_populate(sorted, n, m, ref);
		assert_int_equal(chlb_table_build(&spec, be, n, &t, NULL, 0), 0);
		assert_int_equal(t_hdr(&t)->count, m);
		assert_int_equal(t_hdr(&t)->nbackends, n);
		assert_int_equal(t.nwords, CHLB_TBL_HDR_WORDS + m);
		assert_int_equal(t_hdr(&t)->fingerprint, chlb_table_fingerprint(t.words, t.nwords));
		assert_memory_equal(t.words + CHLB_TBL_HDR_WORDS, ref, m * 4);
		for (int k = 0; k < 5000; k++) {
			__u32 crc = (__u32)t_rand(&seed);

			assert_int_equal(chlb_table_decide(&t, crc, &got), 0);
			assert_int_equal(got, ref[chlb_fmix32(crc) % m]);
		}
		chlb_table_free(&t);
		free(sorted);
		free(be);
		free(ref);
	}
}

static void test_insertion_order_independent_and_full(void **state)
{
	struct chlb_table_be *be = t_backends(300, 0);
	struct chlb_table a, b;
	__u64 seed = 12;

	for (__u32 i = 0; i < 300; i++)
		be[i].weight = t_rand(&seed) % 5 * 50; /* some drained, some heavy */
	a = t_build(CHLB_ALGO_MAGLEV, be, 300);
	for (__u32 i = 0; i < t_hdr(&a)->count; i++)
		assert_int_not_equal(a.words[CHLB_TBL_HDR_WORDS + i], CHLB_TOMBSTONE);
	for (int round = 0; round < 3; round++) {
		t_shuffle(be, 300, &seed);
		b = t_build(CHLB_ALGO_MAGLEV, be, 300);
		assert_memory_equal(a.words, b.words, a.nwords * 4);
		chlb_table_free(&b);
	}
	chlb_table_free(&a);
	free(be);
}

static void test_weights_are_turn_frequency(void **state)
{
	static const __u32 w[5] = { 100, 200, 300, 0, 1 };
	struct chlb_table_be *be = t_backends(5, 0);
	struct chlb_table t;
	__u32 cnt[5] = { 0 }, m = CHLB_MAGLEV_DEFAULT_M;
	double total = 601;

	for (int i = 0; i < 5; i++)
		be[i].weight = w[i];
	t = t_build(CHLB_ALGO_MAGLEV, be, 5);
	assert_int_equal(t_hdr(&t)->nbackends, 4);
	for (__u32 i = 0; i < m; i++)
		cnt[t.words[CHLB_TBL_HDR_WORDS + i] - 1000]++;
	assert_int_equal(cnt[3], 0);
	assert_true(cnt[4] >= 1);
	/* entries proportional to weight, within one round of turns */
	for (int i = 0; i < 5; i++) {
		double want = m * w[i] / total;

		assert_true(cnt[i] >= want - 2 && cnt[i] <= want + 2);
	}
	chlb_table_free(&t);
	free(be);
}

static void test_limits_and_errors(void **state)
{
	struct chlb_table_be *be = t_backends(10, 0);
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_MAGLEV, .table_size = 1000 };
	struct chlb_table t;
	char err[256];

	assert_int_equal(chlb_table_build(&spec, be, 10, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "prime"));
	spec.table_size = 7; /* prime but not larger than the set */
	assert_int_equal(chlb_table_build(&spec, be, 10, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "exceed"));
	spec.table_size = 11;
	assert_int_equal(chlb_table_build(&spec, be, 10, &t, err, sizeof(err)), 0);
	chlb_table_free(&t);
	spec.table_size = 1048583; /* prime, over CHLB_MAGLEV_MAX_M */
	assert_int_equal(chlb_table_build(&spec, be, 10, &t, err, sizeof(err)), -EINVAL);
	free(be);
}

static void test_empty_drained_single(void **state)
{
	struct chlb_table_be *be = t_backends(2, 0);
	struct chlb_table t;
	__u32 got;
	__u64 seed = 1;

	t = t_build(CHLB_ALGO_MAGLEV, be, 0);
	assert_int_equal(t_hdr(&t)->count, 0);
	assert_int_equal(chlb_table_decide(&t, 4, &got), -ENOENT);
	chlb_table_free(&t);
	be[0].weight = 0;
	t = t_build(CHLB_ALGO_MAGLEV, be, 2);
	for (int k = 0; k < 2000; k++) {
		assert_int_equal(chlb_table_decide(&t, (__u32)t_rand(&seed), &got), 0);
		assert_int_equal(got, be[1].slot);
	}
	chlb_table_free(&t);
	be[1].weight = 0;
	t = t_build(CHLB_ALGO_MAGLEV, be, 2);
	assert_int_equal(chlb_table_decide(&t, 4, &got), -ENOENT);
	chlb_table_free(&t);
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_reference_fill),
		cmocka_unit_test(test_insertion_order_independent_and_full),
		cmocka_unit_test(test_weights_are_turn_frequency),
		cmocka_unit_test(test_limits_and_errors),
		cmocka_unit_test(test_empty_drained_single),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
