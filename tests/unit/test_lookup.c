// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lookups of include/chlb_table.h against brute force, on tables this
 * test writes itself (so ties, wrap-around and tiny directories happen on
 * purpose, independent of the builders).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* A ring of count vnodes (hashes sorted, slot of vnode i = i) with 2^bits lines. */
static __u32 *write_ring(const __u32 *hash, __u32 count, __u32 bits, __u32 *nwords)
{
	__u32 base = chlb_ring_base(bits), *w, *slot = malloc(count * 4);
	struct chlb_table_hdr *h;

	*nwords = base + 2 * count;
	w = calloc(*nwords, 4);
	h = (struct chlb_table_hdr *)w;
	h->magic = CHLB_TABLE_MAGIC;
	h->algo = CHLB_ALGO_RING;
	h->count = count;
	h->dir_bits = bits;
	h->words = *nwords;
	for (__u32 i = 0; i < count; i++)
		slot[i] = i;
	*nwords = h->words = t_ring_lines(w, bits, hash, slot, count);
	free(slot);
	return w;
}

static __u32 brute_ring(const __u32 *hash, __u32 count, __u32 h)
{
	for (__u32 i = 0; i < count; i++)
		if (hash[i] >= h)
			return i;
	return 0;
}

static void check_ring(const __u32 *hash, __u32 count, __u32 bits, __u64 *seed)
{
	__u32 nwords, *w = write_ring(hash, count, bits, &nwords), got;
	struct chlb_flat_table ft = { w, nwords };
	const struct chlb_table_hdr *hdr = (const struct chlb_table_hdr *)w;

	for (int k = 0; k < 4000; k++) {
		__u32 h;

		switch (k % 4) {
		case 0:
			h = (__u32)t_rand(seed);
			break;
		case 1: /* exactly on a vnode: ties resolve to the first of equals */
			h = hash[t_rand(seed) % count];
			break;
		case 2: /* just past a vnode */
			h = hash[t_rand(seed) % count] + 1;
			break;
		default: /* the edges: wrap-around */
			h = (k & 4) ? 0xffffffffu - (k & 3) : (k & 3);
			break;
		}
		assert_int_equal(chlb_ring_lookup(&ft, hdr, h, &got), 0);
		assert_int_equal(got, brute_ring(hash, count, h));
	}
	free(w);
}

static void test_ring_vs_brute_force(void **state)
{
	__u64 seed = 7;

	for (int round = 0; round < 60; round++) {
		__u32 count = 1 + t_rand(&seed) % (round < 20 ? 8 : 3000);
		__u32 bits = 1 + t_rand(&seed) % 14, *hash = malloc(count * 4);

		for (__u32 i = 0; i < count; i++) {
			hash[i] = (__u32)t_rand(&seed);
			if (round % 3 == 0)
				hash[i] &= 0xff00000fu; /* clumps and many ties */
			if (round % 5 == 1 && i)
				hash[i] = hash[i - 1]; /* runs of equal hashes */
		}
		qsort(hash, count, 4, cmp_u32);
		check_ring(hash, count, bits, &seed);
		free(hash);
	}
}

static void test_ring_all_at_top_and_bottom(void **state)
{
	__u32 top[3] = { 0xfffffffdu, 0xffffffffu, 0xffffffffu }, bottom[2] = { 0, 0 };
	__u64 seed = 3;

	check_ring(top, 3, 1, &seed);
	check_ring(top, 3, 16, &seed);
	check_ring(bottom, 2, 4, &seed);
}

static void test_ring_rejects_bad_header(void **state)
{
	__u32 hash[2] = { 5, 9 }, nwords, *w = write_ring(hash, 2, 2, &nwords), got;
	struct chlb_flat_table ft = { w, nwords };
	struct chlb_table_hdr *hdr = (struct chlb_table_hdr *)w;

	hdr->dir_bits = 0;
	assert_int_equal(chlb_ring_lookup(&ft, hdr, 7, &got), -1);
	hdr->dir_bits = 2;
	hdr->count = 0;
	assert_int_equal(chlb_ring_lookup(&ft, hdr, 7, &got), -1);
	hdr->count = 2;
	ft.nwords = 12; /* truncated: the lookup must not read past the end */
	assert_int_equal(chlb_ring_lookup(&ft, hdr, 7, &got), -1);
	free(w);
}

static void test_maglev_vs_brute_force(void **state)
{
	static __u32 w[CHLB_TBL_HDR_WORDS + 13];
	struct chlb_table_hdr *hdr = (struct chlb_table_hdr *)w;
	struct chlb_flat_table ft = { w, CHLB_TBL_HDR_WORDS + 13 };
	__u64 seed = 11;
	__u32 got;

	hdr->magic = CHLB_TABLE_MAGIC;
	hdr->algo = CHLB_ALGO_MAGLEV;
	hdr->count = 13;
	for (int i = 0; i < 13; i++)
		w[CHLB_TBL_HDR_WORDS + i] = 100 + i;
	for (int k = 0; k < 10000; k++) {
		__u32 h = k < 20 ? 0xffffffffu - k : (__u32)t_rand(&seed);

		assert_int_equal(chlb_maglev_lookup(&ft, hdr, h, &got), 0);
		assert_int_equal(got, 100 + h % 13);
	}
	w[CHLB_TBL_HDR_WORDS + 5] = CHLB_TOMBSTONE;
	assert_int_equal(chlb_maglev_lookup(&ft, hdr, 5, &got), -1);
	hdr->count = 0;
	assert_int_equal(chlb_maglev_lookup(&ft, hdr, 5, &got), -1);
}

/* The weighted jump of include/chlb_table.h, spelled out from its comment. */
static __u32 brute_jump(const __u32 *bucket, __u32 n, __u32 fallback, __u64 key)
{
	for (int r = 0; r < CHLB_JUMP_MAX_REHASH; r++) {
		__u32 v = bucket[chlb_jump_bucket(key, n)], thr = v >> 13;
		__u32 u = (__u32)(chlb_fmix64(key ^ 0x6a756d7077656967ULL) >> 45);

		if (thr == (1u << 19) - 1 || u < thr)
			return v & 0x1fff;
		key = chlb_fmix64(key + 0x9e3779b97f4a7c15ULL);
	}
	return fallback;
}

static void test_jump_tombstones_vs_brute_force(void **state)
{
	static __u32 w[CHLB_TBL_HDR_WORDS + 300];
	struct chlb_table_hdr *hdr = (struct chlb_table_hdr *)w;
	struct chlb_flat_table ft = { w, sizeof(w) / 4 };
	__u32 *bucket = w + CHLB_TBL_HDR_WORDS, got, fellback = 0;
	__u64 seed = 5;

	hdr->magic = CHLB_TABLE_MAGIC;
	hdr->algo = CHLB_ALGO_JUMP;
	for (int round = 0; round < 40; round++) {
		__u32 n = 1 + t_rand(&seed) % 300;

		hdr->count = n;
		hdr->fallback = CHLB_TOMBSTONE;
		/* tombstones, weight 0, light, heavy and full buckets; rounds of light ones only */
		for (__u32 b = 0; b < n; b++) {
			__u32 kind = t_rand(&seed) % 5, thr;

			thr = kind == 0 ? 0
			      : kind == 1
				  ? (round % 4 ? CHLB_JUMP_THR_FULL : 1 + t_rand(&seed) % 64)
				  : (__u32)(t_rand(&seed) % CHLB_JUMP_THR_FULL);
			bucket[b] = thr ? CHLB_JUMP_WORD(b, thr) : CHLB_JUMP_TOMBSTONE_WORD;
			if (hdr->fallback == CHLB_TOMBSTONE && thr)
				hdr->fallback = b;
		}
		for (int k = 0; k < 2000; k++) {
			__u64 key = t_rand(&seed);
			int rc = chlb_jump_lookup(&ft, hdr, key, &got);
			__u32 want = brute_jump(bucket, n, hdr->fallback, key);

			if (hdr->fallback == CHLB_TOMBSTONE) {
				assert_int_equal(rc, -1);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(got, want);
			assert_true(got == hdr->fallback || CHLB_JUMP_WORD_THR(bucket[got]));
			fellback += got == hdr->fallback;
		}
	}
	assert_true(fellback > 0);
	/* every bucket a tombstone or drained: the fallback, or -1 without one */
	hdr->count = 4;
	for (int b = 0; b < 4; b++)
		bucket[b] = b % 2 ? CHLB_JUMP_TOMBSTONE_WORD : CHLB_JUMP_WORD(b, 0);
	hdr->fallback = 77;
	assert_int_equal(chlb_jump_lookup(&ft, hdr, 12345, &got), 0);
	assert_int_equal(got, 77);
	hdr->fallback = CHLB_TOMBSTONE;
	assert_int_equal(chlb_jump_lookup(&ft, hdr, 12345, &got), -1);
}

static void test_table_lookup_dispatch(void **state)
{
	__u32 w[CHLB_TBL_HDR_WORDS + 1] = { 0 }, got;
	struct chlb_table_hdr *hdr = (struct chlb_table_hdr *)w;
	struct chlb_flat_table ft = { w, CHLB_TBL_HDR_WORDS + 1 };

	hdr->magic = CHLB_TABLE_MAGIC;
	hdr->algo = CHLB_ALGO_MAGLEV;
	hdr->count = 1;
	w[CHLB_TBL_HDR_WORDS] = 42;
	assert_int_equal(chlb_table_lookup(&ft, hdr, 99, &got), 0);
	assert_int_equal(got, 42);
	hdr->algo = 9;
	assert_int_equal(chlb_table_lookup(&ft, hdr, 99, &got), -1);
	hdr->algo = CHLB_ALGO_MAGLEV;
	hdr->magic = 0;
	assert_int_equal(chlb_table_lookup(&ft, hdr, 99, &got), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_vs_brute_force),
		cmocka_unit_test(test_ring_all_at_top_and_bottom),
		cmocka_unit_test(test_ring_rejects_bad_header),
		cmocka_unit_test(test_maglev_vs_brute_force),
		cmocka_unit_test(test_jump_tombstones_vs_brute_force),
		cmocka_unit_test(test_table_lookup_dispatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
