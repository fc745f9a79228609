// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jtable: a jump bucket order compiled into a Maglev-format table. Exact
 * quotas, exact (ideal) moves on append / removal / refill, the data plane's
 * Maglev lookup, and a bound on drift over many changes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"

static struct chlb_table build(__u32 m, const __u32 *order, __u32 nb,
			       const struct chlb_table_be *be, __u32 n)
{
	struct chlb_table_spec spec = {
		.algo = CHLB_ALGO_JTABLE, .table_size = m, .jump_order = order, .jump_nbuckets = nb
	};
	struct chlb_table t;
	char err[256] = "";
	__u32 *ident = NULL;

	/* no order: bucket b = be[b] (a fresh order would be name order, "10.9.0.10" < "10.9.0.2") */
	if (!order) {
		ident = malloc((n ? n : 1) * sizeof(*ident));
		for (__u32 i = 0; i < n; i++)
			ident[i] = i;
		spec.jump_order = ident;
		spec.jump_nbuckets = n;
	}
	if (chlb_table_build(&spec, be, n, &t, err, sizeof(err)))
		fail_msg("build: %s", err);
	free(ident);
	return t;
}

static const __u32 *entries(const struct chlb_table *t)
{
	return t->words + CHLB_TBL_HDR_WORDS;
}

/* bucket b (= backend b, slot 1000 + b) holds exactly floor(M/n) + (b < M mod n) */
static void check_quotas(const struct chlb_table *t, __u32 m, __u32 n)
{
	__u32 *cnt = calloc(n, sizeof(*cnt));

	assert_int_equal(t_hdr(t)->algo, CHLB_ALGO_MAGLEV);
	assert_int_equal(t_hdr(t)->count, m);
	assert_int_equal(t->nwords, CHLB_TBL_HDR_WORDS + m);
	assert_int_equal(t_hdr(t)->fingerprint, chlb_table_fingerprint(t->words, t->nwords));
	for (__u32 i = 0; i < m; i++) {
		assert_true(entries(t)[i] >= 1000 && entries(t)[i] < 1000 + n);
		cnt[entries(t)[i] - 1000]++;
	}
	for (__u32 b = 0; b < n; b++)
		assert_int_equal(cnt[b], m / n + (b < m % n));
	free(cnt);
}

static void test_quotas_and_append(void **state)
{
	const __u32 m = 1009;
	struct chlb_table_be *be = t_backends(80, 0);
	struct chlb_table prev = build(m, NULL, 0, be, 1), t;

	check_quotas(&prev, m, 1);
	for (__u32 n = 2; n <= 80; n++) {
		__u32 moved = 0;

		t = build(m, NULL, 0, be, n);
		check_quotas(&t, m, n);
		for (__u32 i = 0; i < m; i++)
			if (entries(&t)[i] != entries(&prev)[i]) {
				assert_int_equal(entries(&t)[i],
						 be[n - 1].slot); /* only to the new one */
				moved++;
			}
		assert_int_equal(moved, m / n + (n - 1 < m % n)); /* exactly its quota */
		chlb_table_free(&prev);
		prev = t;
	}
	chlb_table_free(&prev);
	free(be);
}

static void test_lookup_is_maglev(void **state)
{
	struct chlb_table_be *be = t_backends(300, 0);
	struct chlb_table t = build(CHLB_MAGLEV_DEFAULT_M, NULL, 0, be, 300);
	__u64 seed = 6;
	__u32 got;

	check_quotas(&t, CHLB_MAGLEV_DEFAULT_M, 300);
	for (int k = 0; k < 20000; k++) {
		__u32 crc = (__u32)t_rand(&seed);

		assert_int_equal(chlb_table_decide(&t, crc, &got), 0);
		assert_int_equal(got, entries(&t)[chlb_fmix32(crc) % CHLB_MAGLEV_DEFAULT_M]);
	}
	chlb_table_free(&t);
	free(be);
}

/* Removing any bucket moves only its entries; refilling it restores the table. */
static void test_remove_and_refill(void **state)
{
	const __u32 n = 1000, m = CHLB_MAGLEV_DEFAULT_M;
	struct chlb_table_be *be = t_backends(n + 1, 0);
	__u32 *order = malloc(n * sizeof(*order)), cap = (m + n - 2) / (n - 1);
	struct chlb_table base, rem, refill;
	__u64 seed = 17;

	for (__u32 b = 0; b < n; b++)
		order[b] = b;
	base = build(m, order, n, be, n + 1);
	for (int round = 0; round < 6; round++) {
		__u32 x = t_rand(&seed) % n, moved = 0, *cnt = calloc(n + 1, sizeof(*cnt));

		order[x] = CHLB_TOMBSTONE;
		rem = build(m, order, n, be, n + 1);
		for (__u32 i = 0; i < m; i++) {
			if (entries(&rem)[i] != entries(&base)[i]) {
				assert_int_equal(entries(&base)[i], be[x].slot);
				moved++;
			}
			assert_int_not_equal(entries(&rem)[i], be[x].slot);
			cnt[entries(&rem)[i] - 1000]++;
		}
		assert_int_equal(moved, m / n + (x < m % n));
		for (__u32 b = 0; b <= n; b++)
			assert_true(cnt[b] <= cap);
		/* a new backend fills the tombstone: it gets exactly x's old entries */
		order[x] = n;
		refill = build(m, order, n, be, n + 1);
		for (__u32 i = 0; i < m; i++)
			assert_int_equal(entries(&refill)[i], entries(&base)[i] == be[x].slot
								  ? be[n].slot
								  : entries(&base)[i]);
		order[x] = x;
		chlb_table_free(&rem);
		chlb_table_free(&refill);
		free(cnt);
	}
	chlb_table_free(&base);
	free(order);
	free(be);
}

/*
 * Several tombstones at once: balance holds, and each further change moves
 * near the ideal but not exactly (dead entries are re-dealt and compete for
 * room). With M = 655373 at N = 1000 the 0.5% slack is real room: measured
 * 1.0x-1.22x per change over this sequence; the gate is a regression gauge.
 * (M = 65537 has no slack at N = 1000: up to 6x, see build_jtable.c.)
 */
static void test_drift_over_many_changes(void **state)
{
	const __u32 n0 = 1000, m = 655373;
	struct chlb_table_be *be = t_backends(n0 + 40, 0), *cur = calloc(n0 + 40, sizeof(*cur));
	struct chlb_jump_order o = { 0 };
	__u32 n = n0, *idx = malloc((n0 + 40) * sizeof(*idx)), next = n0;
	struct chlb_table prev, t;
	char err[256];
	double worst = 0;

	memcpy(cur, be, n0 * sizeof(*be));
	assert_int_equal(chlb_jump_order_sync(&o, cur, n, err, sizeof(err)), 0);
	assert_int_equal(chlb_jump_order_map(&o, cur, n, idx, err, sizeof(err)), 0);
	prev = build(m, idx, o.n, cur, n);
	for (int step = 0; step < 30; step++) {
		int add = step % 3 == 2;
		__u32 moved = 0, cnt_max = 0, *cnt = calloc(n0 + 40, sizeof(*cnt));
		double ideal;

		if (add) {
			cur[n++] = be[next++];
		} else {
			__u32 r = (step * 7919u + 13) % n;

			cur[r] = cur[--n];
		}
		assert_true(chlb_jump_order_sync(&o, cur, n, err, sizeof(err)) >= 0);
		assert_int_equal(chlb_jump_order_map(&o, cur, n, idx, err, sizeof(err)), 0);
		t = build(m, idx, o.n, cur, n);
		for (__u32 i = 0; i < m; i++) {
			moved += entries(&t)[i] != entries(&prev)[i];
			if (++cnt[entries(&t)[i] - 1000] > cnt_max)
				cnt_max = cnt[entries(&t)[i] - 1000];
		}
		ideal = (double)m / (add ? n : n + 1);
		if (moved / ideal > worst)
			worst = moved / ideal;
		assert_true(moved <= 1.5 * ideal);
		/* the dealing's cap: max(ceil(M / L), floor(1.005 M / L)) */
		assert_true(cnt_max <= (m + n - 1) / n ||
			    cnt_max <= (__u32)((__u64)m * 1005 / ((__u64)n * 1000)));
		chlb_table_free(&prev);
		prev = t;
		free(cnt);
	}
	print_message("# worst step over 30 changes: %.3fx ideal\n", worst);
	chlb_table_free(&prev);
	chlb_jump_order_free(&o);
	free(idx);
	free(cur);
	free(be);
}

static void test_weights_and_errors(void **state)
{
	struct chlb_table_be *be = t_backends(3, 0);
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_JTABLE, .table_size = 1009 };
	struct chlb_table t;
	__u32 cnt[3] = { 0 }, got;
	char err[256];

	be[1].weight = 200;
	be[2].weight = 300; /* one bucket each; entries ~ weights: 168.2, 336.3, 504.5 */
	t = build(1009, NULL, 0, be, 3);
	for (__u32 i = 0; i < 1009; i++)
		cnt[entries(&t)[i] - 1000]++;
	for (__u32 b = 0; b < 3; b++) {
		double exact = 1009.0 * (b + 1) / 6;

		/* at most the cap (0.5% over), at least what the others' caps leave */
		assert_true(cnt[b] <= (__u32)(exact * 1.005) + 1);
		assert_true(cnt[b] >= (__u32)(exact * 0.99));
	}
	chlb_table_free(&t);
	spec.table_size = 3; /* 3 buckets do not fit */
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -EINVAL);
	spec.table_size = 1000;
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "prime"));
	be[0].weight = be[1].weight = be[2].weight = 0;
	t = build(1009, NULL, 0, be, 3);
	assert_int_equal(t_hdr(&t)->count, 0);
	assert_int_equal(chlb_table_decide(&t, 1, &got), -ENOENT);
	chlb_table_free(&t);
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quotas_and_append),
		cmocka_unit_test(test_lookup_is_maglev),
		cmocka_unit_test(test_remove_and_refill),
		cmocka_unit_test(test_drift_over_many_changes),
		cmocka_unit_test(test_weights_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
