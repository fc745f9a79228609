// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The decision fingerprint (table/table_fp.c): hosts that give the same
 * backends other slots (and add them in another order) get the same one
 * for ring, maglev, jump and jtable, where the header's word CRC differs; a
 * backend missing, another weight or another jump bucket order gives
 * another one, and so do the same slots holding other addresses (where the
 * word CRC is equal).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

#define N 200 /* ring: 32,000 vnodes, enough for spilled lines */

static const __u32 algos[] = { CHLB_ALGO_RING, CHLB_ALGO_MAGLEV, CHLB_ALGO_JUMP, CHLB_ALGO_JTABLE };

/*
 * The table a host builds for be[0..n): jump and jtable through the bucket
 * order chlbd keeps (chlb_jump_order_sync from empty: canonical order),
 * or through `order` when given (names, "" = tombstone).
 */
static struct chlb_table host_build(__u32 algo, const struct chlb_table_be *be, __u32 n,
				    const char *const *order, __u32 norder)
{
	struct chlb_table_spec spec = { .algo = algo,
					.table_size = algo == CHLB_ALGO_JTABLE ? 4099 : 0 };
	struct chlb_jump_order o = { 0 };
	struct chlb_table t;
	char err[256] = "";
	__u32 *idx = NULL;

	if (algo == CHLB_ALGO_JUMP || algo == CHLB_ALGO_JTABLE) {
		if (order)
			assert_int_equal(chlb_jump_order_set(&o, order, norder), 0);
		else if (chlb_jump_order_sync(&o, be, n, err, sizeof(err)) < 0)
			fail_msg("order: %s", err);
		idx = calloc(o.n ? o.n : 1, sizeof(*idx));
		if (chlb_jump_order_map(&o, be, n, idx, err, sizeof(err)))
			fail_msg("map: %s", err);
		spec.jump_order = idx;
		spec.jump_nbuckets = o.n;
	}
	if (chlb_table_build(&spec, be, n, &t, err, sizeof(err)))
		fail_msg("build: %s", err);
	free(idx);
	chlb_jump_order_free(&o);
	return t;
}

static __u32 dfp(const struct chlb_table *t, const struct chlb_table_be *be, __u32 n)
{
	char err[256] = "";
	__u32 fp = 0;

	if (chlb_table_decision_fp_be(t, be, n, &fp, err, sizeof(err)))
		fail_msg("fingerprint: %s", err);
	return fp;
}

/* The same backends on "another host": shuffled, other slots (7 + 13 * k, permuted). */
static struct chlb_table_be *other_host(const struct chlb_table_be *be, __u32 n, __u64 seed)
{
	struct chlb_table_be *o = malloc(n * sizeof(*o));

	memcpy(o, be, n * sizeof(*o));
	t_shuffle(o, n, &seed);
	for (__u32 i = 0; i < n; i++)
		o[i].slot = 7 + 13 * ((i * 37 + 11) % n);
	return o;
}

static const char *slot_name(const struct chlb_table_be *be, __u32 n, __u32 slot)
{
	for (__u32 i = 0; i < n; i++)
		if (be[i].slot == slot)
			return be[i].name;
	return "none";
}

static bool ring_spills(const struct chlb_table *t)
{
	for (__u32 d = 0; d < 1u << t_hdr(t)->dir_bits; d++)
		if (chlb_ring_half(t->words + chlb_ring_line_at(d), CHLB_RING_COUNT_HALF) ==
		    CHLB_RING_LINE_SPILL)
			return true;
	return false;
}

static void test_other_slots_same_fp(void **state)
{
	(void)state;
	for (__u32 a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		struct chlb_table_be *be = t_backends(N, 0), *ob = other_host(be, N, 42 + a);
		struct chlb_table t1 = host_build(algos[a], be, N, NULL, 0),
				  t2 = host_build(algos[a], ob, N, NULL, 0);
		__u64 seed = a;

		if (algos[a] == CHLB_ALGO_RING)
			assert_true(ring_spills(&t1)); /* the spill array is covered */
		/* the header's CRC covers slots: it differs, though the hosts agree */
		assert_int_not_equal(t_hdr(&t1)->fingerprint, t_hdr(&t2)->fingerprint);
		assert_int_equal(dfp(&t1, be, N), dfp(&t2, ob, N));
		/* and they do agree: every probed flow goes to the same address */
		for (int i = 0; i < 2000; i++) {
			__u32 crc = (__u32)t_rand(&seed), s1, s2;

			assert_int_equal(chlb_table_decide(&t1, crc, &s1), 0);
			assert_int_equal(chlb_table_decide(&t2, crc, &s2), 0);
			assert_string_equal(slot_name(be, N, s1), slot_name(ob, N, s2));
		}
		chlb_table_free(&t1);
		chlb_table_free(&t2);
		free(be);
		free(ob);
	}
}

static void test_missing_backend_or_weight_differs(void **state)
{
	(void)state;
	for (__u32 a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		struct chlb_table_be *be = t_backends(N, 0), *ob = other_host(be, N, 7 + a);
		struct chlb_table t1 = host_build(algos[a], be, N, NULL, 0), t2, t3;
		__u32 fp1 = dfp(&t1, be, N);

		/* one backend less on the other host (the last of its shuffled list) */
		t2 = host_build(algos[a], ob, N - 1, NULL, 0);
		assert_int_not_equal(fp1, dfp(&t2, ob, N - 1));
		/* one backend at weight 200 (jump: two buckets) */
		ob[3].weight = 200;
		t3 = host_build(algos[a], ob, N, NULL, 0);
		assert_int_not_equal(fp1, dfp(&t3, ob, N));
		chlb_table_free(&t1);
		chlb_table_free(&t2);
		chlb_table_free(&t3);
		free(be);
		free(ob);
	}
}

/* Jump and jtable: the same backends in another bucket order decide differently. */
static void test_bucket_order_differs(void **state)
{
	const char *ab[] = { "10.9.0.1", "10.9.0.2", "10.9.0.3", "10.9.0.4" };
	const char *ba[] = { "10.9.0.2", "10.9.0.1", "10.9.0.3", "10.9.0.4" };
	const char *tomb[] = { "10.9.0.1", "", "10.9.0.2", "10.9.0.3", "10.9.0.4" };

	(void)state;
	for (__u32 a = 2; a < 4; a++) {
		struct chlb_table_be *be = t_backends(4, 0);
		struct chlb_table t1 = host_build(algos[a], be, 4, ab, 4),
				  t2 = host_build(algos[a], be, 4, ba, 4),
				  t3 = host_build(algos[a], be, 4, tomb, 5);

		assert_int_not_equal(dfp(&t1, be, 4), dfp(&t2, be, 4));
		assert_int_not_equal(dfp(&t1, be, 4), dfp(&t3, be, 4));
		chlb_table_free(&t1);
		chlb_table_free(&t2);
		chlb_table_free(&t3);
		free(be);
	}
}

/*
 * The same slots holding other addresses: the word CRC is equal (the words
 * are), the decisions are not, and neither is the decision fingerprint.
 */
static void test_same_slots_other_addresses(void **state)
{
	const char *order[] = { "10.9.0.1", "10.9.0.2", "10.9.0.3" };
	struct chlb_table_be *be = t_backends(3, 0), *ob = t_backends(3, 0);
	struct chlb_table t1, t2;

	(void)state;
	t1 = host_build(CHLB_ALGO_JUMP, be, 3, order, 3);
	/* host 2 has 10.9.0.1 and 10.9.0.2 in each other's slots and buckets */
	ob[0].slot = be[1].slot;
	ob[1].slot = be[0].slot;
	{
		const char *o2[] = { "10.9.0.2", "10.9.0.1", "10.9.0.3" };

		t2 = host_build(CHLB_ALGO_JUMP, ob, 3, o2, 3);
	}
	assert_int_equal(t_hdr(&t1)->fingerprint, t_hdr(&t2)->fingerprint);
	assert_int_not_equal(dfp(&t1, be, 3), dfp(&t2, ob, 3));
	chlb_table_free(&t1);
	chlb_table_free(&t2);
	free(be);
	free(ob);
}

static void test_errors(void **state)
{
	struct chlb_table_be *be = t_backends(5, 0);
	struct chlb_table t = host_build(CHLB_ALGO_MAGLEV, be, 5, NULL, 0), e = { 0 };
	char err[256] = "";
	__u32 fp;

	(void)state;
	/* a slot the mapping does not know: named in the message, no fingerprint */
	assert_int_equal(chlb_table_decision_fp_be(&t, be, 4, &fp, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "backend slot 1004"));
	t.words[0] = 0;
	assert_int_equal(chlb_table_decision_fp_be(&t, be, 5, &fp, err, sizeof(err)), -EINVAL);
	assert_int_equal(chlb_table_decision_fp_be(&e, be, 5, &fp, err, sizeof(err)), -EINVAL);
	chlb_table_free(&t);
	/* an empty table has one, equal everywhere */
	t = host_build(CHLB_ALGO_RING, be, 0, NULL, 0);
	e = host_build(CHLB_ALGO_RING, be, 0, NULL, 0);
	assert_int_equal(dfp(&t, be, 0), dfp(&e, be, 0));
	chlb_table_free(&t);
	chlb_table_free(&e);
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_slots_same_fp),
		cmocka_unit_test(test_missing_backend_or_weight_differs),
		cmocka_unit_test(test_bucket_order_differs),
		cmocka_unit_test(test_same_slots_other_addresses),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
