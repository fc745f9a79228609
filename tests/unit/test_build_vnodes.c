// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ring's vnode-position cache (build_vnodes.c): values, hits, growth, flushes. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"
#include "table/build_int.h"

static __u32 ref_hash(const char *name, __u32 rep)
{
	char buf[80];
	int len = snprintf(buf, sizeof(buf), "%s#%u", name, rep);

	return chlb_fmix32(chlb_crc32c(buf, (__u32)len));
}

static void check(const char *name, __u32 k)
{
	__u32 *h = malloc((k ? k : 1) * sizeof(*h));

	build_vnode_hashes(name, k, h);
	for (__u32 r = 0; r < k; r++)
		if (h[r] != ref_hash(name, r))
			fail_msg("%s#%u: %#x, expected %#x", name, r, h[r], ref_hash(name, r));
	free(h);
}

static const char long_name[] = "2001:db8:ffff:ffff:ffff:ffff:0001:fffe-00000001"; /* 47 */

/* Every count, every digit boundary, cached or not, shorter or longer than cached. */
static void test_values_and_growth(void **state)
{
	static const __u32 ks[] = { 1, 9, 10, 11, 5, 99, 100, 101, 1000, 999, 10001, 3, 123457 };
	struct build_vnode_stats st0, st;

	(void)state;
	assert_int_equal(strlen(long_name), CHLB_BE_NAME_LEN - 1);
	build_vnode_cache_flush();
	build_vnode_cache_stats(&st0);
	assert_int_equal(st0.names, 0);
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		check("10.1.0.7", ks[i]);
		check("2001:db8::2", ks[i]);
		check(long_name, ks[i]);
	}
	build_vnode_cache_stats(&st);
	assert_int_equal(st.names, 3);
	assert_int_equal(st.hashes, 3 * 123457);
	/* 1 miss per name per growth: 1, 9, 10, 11, 99, 100, 101, 1000, 10001, 123457 */
	assert_int_equal(st.misses - st0.misses, 3 * 10);
	assert_int_equal(st.hits - st0.hits, 3 * 3);
}

/* Past the bounds the cache empties and refills; values stay right. */
static void test_flush_when_full(void **state)
{
	struct build_vnode_stats st0, st;
	char name[32];

	(void)state;
	build_vnode_cache_flush();
	build_vnode_cache_stats(&st0);
	/* 4M positions at most: the fifth million-position name flushes */
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "10.7.0.%d", i);
		check(name, CHLB_RING_MAX_VNODES);
	}
	build_vnode_cache_stats(&st);
	assert_int_equal(st.flushes - st0.flushes, 1);
	assert_int_equal(st.names, 1);
	check("10.7.0.4", 77); /* a hit after the flush */
	check("10.7.0.0", 77); /* flushed: recomputed */
	build_vnode_cache_stats(&st0);
	assert_int_equal(st0.hits - st.hits, 1);
	/* many names at one vnode each: bounded too */
	for (int i = 0; i < 70000; i++) {
		snprintf(name, sizeof(name), "10.8.%d.%d", i / 250, i % 250);
		check(name, 1);
	}
	build_vnode_cache_stats(&st);
	assert_true(st.flushes > st0.flushes);
	assert_true(st.names <= (1u << 16));
	build_vnode_cache_flush();
}

/* A ring built from a warm cache (after weight and membership changes) is the cold one. */
static void test_ring_warm_equals_cold(void **state)
{
	struct chlb_table_be *be = t_backends(300, 0);
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 160 };
	struct chlb_table warm, cold;
	__u64 seed = 5;

	(void)state;
	build_vnode_cache_flush();
	for (int round = 0; round < 4; round++) {
		__u32 n = 300 - (__u32)round * 7;

		for (__u32 i = 0; i < n; i++)
			be[i].weight = (__u32)(t_rand(&seed) % 400);
		assert_int_equal(chlb_table_build(&spec, be, n, &warm, NULL, 0), 0);
		build_vnode_cache_flush();
		assert_int_equal(chlb_table_build(&spec, be, n, &cold, NULL, 0), 0);
		assert_int_equal(warm.nwords, cold.nwords);
		assert_memory_equal(warm.words, cold.words, (size_t)cold.nwords * 4);
		chlb_table_free(&warm);
		chlb_table_free(&cold);
		t_shuffle(be, n, &seed);
	}
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_and_growth),
		cmocka_unit_test(test_flush_when_full),
		cmocka_unit_test(test_ring_warm_equals_cold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
