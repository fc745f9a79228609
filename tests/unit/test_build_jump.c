// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Integer jump against exact arithmetic and the float original; the jump
 * builder; bucket-order maintenance (tombstones, refill, trim, compaction).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

#define LCG 2862933555777941757ULL

/* floor((b+1) * 2^31 / r) in 128-bit arithmetic, no iteration cap: the exact jump. */
static __u32 jump_exact(__u64 key, __u64 n)
{
	unsigned __int128 b = 0, j = 0;

	while (j < n) {
		b = j;
		key = key * LCG + 1;
		j = ((b + 1) << 31) / ((unsigned __int128)(key >> 33) + 1);
	}
	return (__u32)b;
}

/* Lamping & Veach's published version, in double precision. */
static __u32 jump_float(__u64 key, __u64 n)
{
	int64_t b = -1, j = 0;

	while (j < (int64_t)n) {
		b = j;
		key = key * LCG + 1;
		j = (int64_t)((b + 1) * ((double)(1LL << 31) / (double)((key >> 33) + 1)));
	}
	return (__u32)b;
}

static void test_vectors(void **state)
{
	/* ../shared/vectors/hash-vectors.txt, from an independent implementation */
	static const struct {
		__u64 key;
		__u32 n, want, flt;
	} v[] = {
		{ 0x9f471eb1f6e4c309ULL, 100, 98, 98 },
		{ 0x69d82df4a6d8c198ULL, 64, 48, 63 },
		{ 0x984b547427c823cdULL, 128, 117, 116 },
		{ 0xa7aa31d8c6a2fa8bULL, 1000, 512, 511 },
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(chlb_jump_bucket(v[i].key, v[i].n), v[i].want);
		assert_int_equal(jump_exact(v[i].key, v[i].n), v[i].want);
		assert_int_equal(jump_float(v[i].key, v[i].n), v[i].flt);
	}
}

static void test_integer_matches_exact(void **state)
{
	__u64 seed = 2024;

	for (int k = 0; k < 500000; k++) {
		__u64 key = t_rand(&seed);
		__u32 n;

		switch (k % 5) {
		case 0:
			n = 1 + t_rand(&seed) % 16;
			break;
		case 1:
			n = 1 + t_rand(&seed) % 1000;
			break;
		case 2:
			n = 1 + t_rand(&seed) % CHLB_JUMP_MAX_BUCKETS;
			break;
		case 3: /* the division-free form's whole range, and its edge */
			n = k % 10 == 3 ? CHLB_JUMP_FAST_MAX_N
					: 1 + t_rand(&seed) % CHLB_JUMP_FAST_MAX_N;
			break;
		default:
			n = (__u32)t_rand(&seed) | 1; /* up to 2^32 - 1: (b + 1) << 31 still fits */
			break;
		}
		assert_int_equal(chlb_jump_bucket(key, n), jump_exact(key, n));
	}
}

/*
 * Where the float version disagrees, its first wrong step must be a
 * quotient within rounding of an integer: the float is the one that is off.
 */
static void check_first_divergence(__u64 key, __u32 n)
{
	int64_t b = 0, j = 0;

	while (j < n) {
		__u64 r, q, rem, near;
		int64_t jf;

		b = j;
		key = key * LCG + 1;
		r = (key >> 33) + 1;
		q = ((__u64)(b + 1) << 31) / r;
		rem = ((__u64)(b + 1) << 31) % r;
		jf = (int64_t)((b + 1) * ((double)(1LL << 31) / (double)r));
		if ((__u64)jf != q) {
			assert_true(jf == (int64_t)q - 1 || jf == (int64_t)q + 1);
			/* the exact quotient sits within double rounding of an integer */
			near = rem < r - rem ? rem : r - rem;
			assert_true((double)near / r <= (q + 1) * 1e-15);
			return;
		}
		j = q;
	}
	fail_msg("no step differs although the results do");
}

/*
 * Where the float version disagrees, its first wrong step must be a
 * quotient within rounding of an integer: the float is the one that is off.
 */
static void test_float_disagrees_only_on_rounding(void **state)
{
	__u64 seed = 77, diff = 0;

	check_first_divergence(0x69d82df4a6d8c198ULL, 64);
	check_first_divergence(0x984b547427c823cdULL, 128);
	check_first_divergence(0xa7aa31d8c6a2fa8bULL, 1000);
	for (int k = 0; k < 300000; k++) {
		__u64 key = t_rand(&seed);
		__u32 n = 1 + t_rand(&seed) % 4096;

		if (jump_float(key, n) != jump_exact(key, n)) {
			diff++;
			check_first_divergence(key, n);
		}
	}
	print_message("# float reference disagreed on %llu of 300000 random keys\n",
		      (unsigned long long)diff);
}

static struct chlb_table build_order(const struct chlb_jump_order *o,
				     const struct chlb_table_be *be, __u32 n)
{
	__u32 *idx = malloc((o->n + 1) * sizeof(*idx));
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_JUMP, .jump_order = idx };
	struct chlb_table t;
	char err[256] = "";

	assert_int_equal(chlb_jump_order_map(o, be, n, idx, err, sizeof(err)), 0);
	spec.jump_nbuckets = o->n;
	assert_int_equal(chlb_table_build(&spec, be, n, &t, err, sizeof(err)), 0);
	free(idx);
	return t;
}

/* "A,B,-,C" form of an order, names shortened to their last octet */
static const char *order_str(const struct chlb_jump_order *o)
{
	static char buf[1024];
	size_t len = 0;

	buf[0] = 0;
	for (__u32 b = 0; b < o->n; b++) {
		const char *dot = strrchr(o->name[b], '.');

		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", b ? "," : "",
				o->name[b][0] ? (dot ? dot + 1 : o->name[b]) : "-");
	}
	return buf;
}

static void test_fresh_table_layout(void **state)
{
	struct chlb_table_be *be = t_backends(4, 0);
	struct chlb_table t;
	const struct chlb_table_hdr *h;

	be[1].weight = 250; /* the heaviest: a full threshold, the fallback */
	be[2].weight = 0;   /* drained: keeps its bucket, threshold 0 */
	be[3].weight = 20;
	t_shuffle(be, 4, &(__u64){ 9 }); /* a fresh order is name order, whatever be[] order */
	t = t_build(CHLB_ALGO_JUMP, be, 4);
	h = t_hdr(&t);
	assert_int_equal(h->algo, CHLB_ALGO_JUMP);
	assert_int_equal(h->count, 4);
	assert_int_equal(h->nbackends, 3);
	assert_int_equal(h->fallback, 1001);
	assert_int_equal(h->fingerprint, chlb_table_fingerprint(t.words, t.nwords));
	assert_int_equal(t.nwords, CHLB_TBL_HDR_WORDS + 4);
	/* round(2^19 * 100 / 250) = 209715, round(2^19 * 20 / 250) = 41943 */
	const __u32 want[] = { CHLB_JUMP_WORD(1000, 209715),
			       CHLB_JUMP_WORD(1001, CHLB_JUMP_THR_FULL), CHLB_JUMP_WORD(1002, 0),
			       CHLB_JUMP_WORD(1003, 41943) };

	assert_memory_equal(t.words + CHLB_TBL_HDR_WORDS, want, sizeof(want));
	assert_int_equal(CHLB_JUMP_WORD_SLOT(want[2]), 1002);
	assert_int_equal(CHLB_JUMP_WORD_THR(want[1]), CHLB_JUMP_THR_FULL);
	chlb_table_free(&t);
	/* the threshold's edges */
	assert_int_equal(chlb_jump_threshold(0, 100), 0);
	assert_int_equal(chlb_jump_threshold(1, 10000), 52); /* 52.4: the coarsest, 0.8% */
	assert_int_equal(chlb_jump_threshold(100, 100), CHLB_JUMP_THR_FULL);
	assert_int_equal(chlb_jump_threshold(9999, 10000), 524236);
	free(be);
}

static __u32 want_none(__u32 i)
{
	(void)i;
	return CHLB_TOMBSTONE;
}

static void test_order_rules(void **state)
{
	struct chlb_table_be *be = t_backends(8, 0), cur[8];
	struct chlb_jump_order o = { 0 };
	static const char *const legacy[] = { "10.9.0.1", "10.9.0.2", "10.9.0.1" };
	__u32 want[3] = { want_none(0), want_none(1), want_none(2) };
	char err[256];

	/* simultaneous additions go in name order whatever be[] order */
	memcpy(cur, be, 4 * sizeof(*be));
	t_shuffle(cur, 4, &(__u64){ 5 });
	assert_int_equal(chlb_jump_order_sync(&o, cur, 4, err, sizeof(err)), 0);
	assert_string_equal(order_str(&o), "1,2,3,4");
	/* removal leaves a tombstone */
	memcpy(cur, be, sizeof(cur));
	cur[1] = be[3];
	assert_int_equal(chlb_jump_order_sync(&o, cur, 3, err, sizeof(err)), 0);
	assert_string_equal(order_str(&o), "1,-,3,4");
	/* a new backend takes the lowest tombstone, the next one appends */
	assert_int_equal(
	    chlb_jump_order_sync(&o, (struct chlb_table_be[]){ be[0], be[2], be[3], be[4] }, 4, err,
				 sizeof(err)),
	    0);
	assert_string_equal(order_str(&o), "1,5,3,4");
	assert_int_equal(
	    chlb_jump_order_sync(&o, (struct chlb_table_be[]){ be[0], be[2], be[3], be[4], be[5] },
				 5, err, sizeof(err)),
	    0);
	assert_string_equal(order_str(&o), "1,5,3,4,6");
	/* removing the last bucket trims it (free) */
	assert_int_equal(
	    chlb_jump_order_sync(&o, (struct chlb_table_be[]){ be[0], be[2], be[3], be[4] }, 4, err,
				 sizeof(err)),
	    0);
	assert_string_equal(order_str(&o), "1,5,3,4");
	assert_int_equal(chlb_jump_order_sync(&o, (struct chlb_table_be[]){ be[0], be[3], be[4] },
					      3, err, sizeof(err)),
			 0);
	assert_string_equal(order_str(&o), "1,5,-,4");
	/* the new trailing tombstone goes, the older one before it stays */
	assert_int_equal(
	    chlb_jump_order_sync(&o, (struct chlb_table_be[]){ be[0], be[4] }, 2, err, sizeof(err)),
	    0);
	assert_string_equal(order_str(&o), "1,5,-");
	/* weights never change buckets: heavier, drained, all the same */
	{
		struct chlb_table_be s[4] = { be[0], be[4], be[6], be[7] };

		s[0].weight = 200;
		assert_int_equal(chlb_jump_order_sync(&o, s, 3, err, sizeof(err)), 0);
		assert_string_equal(order_str(&o), "1,5,7");
		s[1].weight = 0;
		s[0].weight = 1;
		assert_int_equal(chlb_jump_order_sync(&o, s, 3, err, sizeof(err)), 0);
		assert_string_equal(order_str(&o), "1,5,7");
		assert_int_equal(chlb_jump_order_sync(&o, s, 4, err, sizeof(err)), 0);
		assert_string_equal(order_str(&o), "1,5,7,8");
		/* two removals: 2 tombstones vs 2 live: compaction, the same way everywhere */
		s[1] = s[3];
		assert_int_equal(chlb_jump_order_sync(&o, s, 2, err, sizeof(err)), 1);
		assert_string_equal(order_str(&o), "1,8");
	}
	/* asked-for buckets: placed (the order grows), the old one freed, no compaction */
	want[0] = 5; /* 4 empty of 6: more empty than held, refused */
	assert_int_equal(chlb_jump_order_sync_want(&o, (struct chlb_table_be[]){ be[0], be[7] }, 2,
						   want, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "'bucket 5': 4 of 6 buckets would be empty"));
	assert_string_equal(order_str(&o), "1,8");
	want[0] = 3;
	assert_int_equal(chlb_jump_order_sync_want(&o, (struct chlb_table_be[]){ be[0], be[7] }, 2,
						   want, err, sizeof(err)),
			 0);
	assert_string_equal(order_str(&o), "-,8,-,1");
	assert_int_equal(chlb_jump_order_find(&o, "10.9.0.1"), 3);
	assert_int_equal(chlb_jump_order_find(&o, "10.9.0.9"), CHLB_TOMBSTONE);
	/* a bucket held by a backend that stays: refused, the order as it was */
	want[0] = 1;
	assert_int_equal(chlb_jump_order_sync_want(&o, (struct chlb_table_be[]){ be[0], be[7] }, 2,
						   want, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "'bucket 1': held by 10.9.0.8"));
	assert_string_equal(order_str(&o), "-,8,-,1");
	/* ...but free when its holder leaves in the same sync */
	assert_int_equal(chlb_jump_order_sync_want(&o, (struct chlb_table_be[]){ be[0] }, 1, want,
						   err, sizeof(err)),
			 0);
	/* its old bucket was the last: trimmed; the older tombstone before it stays */
	assert_string_equal(order_str(&o), "-,1,-");
	/* an old order with a backend in two buckets: it keeps the lowest */
	assert_int_equal(chlb_jump_order_set(&o, legacy, 3), 0);
	assert_int_equal(chlb_jump_order_sync(&o, be, 2, err, sizeof(err)), 0);
	assert_string_equal(order_str(&o), "1,2");
	/* errors leave the order as it was */
	assert_int_equal(
	    chlb_jump_order_sync(&o, (struct chlb_table_be[]){ be[0], be[0] }, 2, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "twice"));
	assert_string_equal(order_str(&o), "1,2");
	chlb_jump_order_free(&o);
	free(be);
}

static void test_order_set_and_map(void **state)
{
	static const char *const names[] = { "10.9.0.2", "-", "", "10.9.0.1" };
	struct chlb_table_be *be = t_backends(3, 0);
	struct chlb_jump_order o = { 0 };
	__u32 idx[4];
	char err[256];
	struct chlb_table t;

	assert_int_equal(chlb_jump_order_set(&o, names, 4), 0);
	assert_string_equal(order_str(&o), "2,-,-,1");
	assert_int_equal(chlb_jump_order_map(&o, be, 3, idx, err, sizeof(err)), 0);
	assert_int_equal(idx[0], 1);
	assert_int_equal(idx[1], CHLB_TOMBSTONE);
	assert_int_equal(idx[3], 0);
	t = build_order(&o, be, 3);
	assert_int_equal(t_hdr(&t)->fallback,
			 1001); /* the heaviest; all equal: the lowest bucket */
	assert_int_equal(t_hdr(&t)->count, 4);
	assert_int_equal(t_hdr(&t)->nbackends, 2);
	chlb_table_free(&t);
	/* a bucket naming a backend not in the set: sync first */
	assert_int_equal(chlb_jump_order_map(&o, be + 1, 2, idx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "10.9.0.1"));
	chlb_jump_order_free(&o);
	free(be);
}

/* Jump's promise: a change moves exactly the flows of the backend that changed. */
static void test_disruption_only_the_changed_backend(void **state)
{
	const __u32 n = 100, flows = 200000;
	struct chlb_table_be *be = t_backends(n + 1, 0), *rem = calloc(n, sizeof(*be));
	struct chlb_jump_order o = { 0 }, o2 = { 0 }, o3 = { 0 };
	struct chlb_table base, add, del;
	__u32 moved_add = 0, moved_del = 0;
	__u64 seed = 31;
	char err[256];
	const char **names;

	assert_int_equal(chlb_jump_order_sync(&o, be, n, err, sizeof(err)), 0);
	base = build_order(&o, be, n);
	names = calloc(o.n, sizeof(*names));
	for (__u32 b = 0; b < o.n; b++)
		names[b] = o.name[b];
	assert_int_equal(chlb_jump_order_set(&o2, names, o.n), 0);
	assert_int_equal(chlb_jump_order_set(&o3, names, o.n), 0);
	assert_int_equal(chlb_jump_order_sync(&o2, be, n + 1, err, sizeof(err)), 0);
	add = build_order(&o2, be, n + 1);
	memcpy(rem, be, 37 * sizeof(*be));
	memcpy(rem + 37, be + 38, (n - 38) * sizeof(*be));
	assert_int_equal(chlb_jump_order_sync(&o3, rem, n - 1, err, sizeof(err)), 0);
	del = build_order(&o3, rem, n - 1);
	for (__u32 f = 0; f < flows; f++) {
		__u32 crc = (__u32)t_rand(&seed), a, b, c;

		assert_int_equal(chlb_table_decide(&base, crc, &a), 0);
		assert_int_equal(chlb_table_decide(&add, crc, &b), 0);
		assert_int_equal(chlb_table_decide(&del, crc, &c), 0);
		if (a != b) {
			assert_int_equal(b, be[n].slot); /* only to the new backend */
			moved_add++;
		}
		if (a != c) {
			assert_int_equal(a, be[37].slot); /* only from the removed one */
			moved_del++;
		}
		if (a == be[37].slot)
			assert_int_not_equal(c, a);
	}
	/* ~1/(N+1) and ~1/N, within 5 sigma of sampling noise */
	assert_true(moved_add > flows / (n + 1) * 0.78 && moved_add < flows / (n + 1) * 1.22);
	assert_true(moved_del > flows / n * 0.78 && moved_del < flows / n * 1.22);
	chlb_table_free(&base);
	chlb_table_free(&add);
	chlb_table_free(&del);
	chlb_jump_order_free(&o);
	chlb_jump_order_free(&o2);
	chlb_jump_order_free(&o3);
	free(names);
	free(rem);
	free(be);
}

static void test_weights_as_thresholds(void **state)
{
	struct chlb_table_be *be = t_backends(4, 0);
	struct chlb_table t;
	__u64 seed = 3, hits[4] = { 0 };
	const int flows = 300000;
	__u32 got;

	be[0].weight = 100;
	be[1].weight = 200;
	be[2].weight = 300;
	be[3].weight = 0;
	t = t_build(CHLB_ALGO_JUMP, be, 4);
	for (int k = 0; k < flows; k++) {
		assert_int_equal(chlb_table_decide(&t, (__u32)t_rand(&seed), &got), 0);
		hits[got - 1000]++;
	}
	assert_int_equal(hits[3], 0);
	for (int i = 0; i < 3; i++) {
		double want = flows * (i + 1) / 6.0;

		assert_true(hits[i] > want * 0.98 && hits[i] < want * 1.02);
	}
	chlb_table_free(&t);
	free(be);
}

static void test_empty_and_drained(void **state)
{
	struct chlb_table_be *be = t_backends(2, 0);
	struct chlb_table t;
	__u32 got, order[3] = { 0, CHLB_TOMBSTONE, 1 };
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_JUMP,
					.jump_order = order,
					.jump_nbuckets = 3 };

	t = t_build(CHLB_ALGO_JUMP, be, 0);
	assert_int_equal(t_hdr(&t)->count, 0);
	assert_int_equal(chlb_table_decide(&t, 9, &got), -ENOENT);
	chlb_table_free(&t);
	be[0].weight = be[1].weight = 0;
	/* an order naming only drained backends builds an empty table */
	assert_int_equal(chlb_table_build(&spec, be, 2, &t, NULL, 0), 0);
	assert_int_equal(t_hdr(&t)->count, 0);
	assert_int_equal(chlb_table_decide(&t, 9, &got), -ENOENT);
	chlb_table_free(&t);
	/* an order naming a backend outside be[] is refused */
	order[1] = 2;
	assert_int_equal(chlb_table_build(&spec, be, 2, &t, NULL, 0), -EINVAL);
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_integer_matches_exact),
		cmocka_unit_test(test_float_disagrees_only_on_rounding),
		cmocka_unit_test(test_fresh_table_layout),
		cmocka_unit_test(test_order_rules),
		cmocka_unit_test(test_order_set_and_map),
		cmocka_unit_test(test_disruption_only_the_changed_backend),
		cmocka_unit_test(test_weights_as_thresholds),
		cmocka_unit_test(test_empty_and_drained),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
