// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `vnodes auto`: the exact ring shares it measures by, the picker (smallest
 * passing rung, the skipped rungs really fail, the ring limit, determinism
 * whatever the order and slots), and the desired state (grammar, save,
 * reload, the same K whatever the history of statements).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "build_helpers.h"
#include "config/state.h"
#include "table/vnodes_auto.h"

/* Ring shares by the real lookup at every arc's top end, as chlbctl sim's sweep does. */
static void swept_shares(const struct chlb_table *t, double *share, __u32 nslots)
{
	const struct chlb_table_hdr *h = chlb_table_header(t);
	struct chlb_flat_table ft = { t->words, t->nwords };
	__u32 n = h->count, *p = malloc((n + 1) * sizeof(*p));
	__u64 prev = 0;

	assert_int_equal(chlb_ring_vnodes(t, p, NULL), 0);
	p[n] = 0xffffffffu;
	memset(share, 0, nslots * sizeof(*share));
	for (__u32 k = 0; k <= n; k++) {
		__u32 slot = CHLB_TOMBSTONE;

		if (k && p[k] == p[k - 1])
			continue;
		assert_int_equal(chlb_ring_lookup(&ft, h, p[k], &slot), 0);
		assert_true(slot < nslots);
		share[slot] += ((__u64)p[k] + 1 - prev) / 4294967296.0;
		prev = (__u64)p[k] + 1;
	}
	free(p);
}

static void ring_shares_are_the_lookup(void **state)
{
	static const __u32 w[] = { 100, 149, 50, 25, 0, 300, 1 };
	struct chlb_table_be *be = t_backends(7, 0);
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 16 };
	struct chlb_table t;
	double a[1007], b[1007], sum = 0;
	char err[256];

	(void)state;
	for (__u32 i = 0; i < 7; i++)
		be[i].weight = w[i];
	assert_int_equal(chlb_table_build(&spec, be, 7, &t, err, sizeof(err)), 0);
	assert_int_equal(chlb_ring_shares(&t, a, 1007), 0);
	swept_shares(&t, b, 1007);
	for (__u32 i = 0; i < 1007; i++) {
		assert_true(fabs(a[i] - b[i]) < 1e-12);
		sum += a[i];
	}
	assert_true(fabs(sum - 1) < 1e-12);
	assert_true(a[1004] == 0); /* weight 0: no vnode */
	chlb_table_free(&t);
	free(be);
}

static double balance_at(const struct chlb_table_be *be, __u32 n, __u32 k)
{
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = k };
	struct chlb_table_be *b = calloc(n, sizeof(*b));
	double *share = calloc(n, sizeof(*share)), mx, mn;
	struct chlb_table t;
	char err[256];

	memcpy(b, be, n * sizeof(*b));
	for (__u32 i = 0; i < n; i++)
		b[i].slot = i;
	assert_int_equal(chlb_table_build(&spec, b, n, &t, err, sizeof(err)), 0);
	assert_int_equal(chlb_ring_shares(&t, share, n), 0);
	chlb_sim_balance(b, n, share, &mx, &mn);
	chlb_table_free(&t);
	free(b);
	free(share);
	return mx;
}

/* The pick is the smallest rung that passes: every rung below fails (skipped or built). */
static void check_smallest(const struct chlb_table_be *be, __u32 n, __u32 target)
{
	struct chlb_vnodes_pick p;
	char err[256];

	assert_int_equal(chlb_vnodes_pick(be, n, target, &p, err, sizeof(err)), 0);
	assert_true(p.met);
	assert_true(p.balance <= target / 1000.0 + 1e-9);
	assert_true(fabs(balance_at(be, n, p.vnodes) - p.balance) < 1e-12);
	for (__u32 k = CHLB_VNODES_AUTO_MIN; k < p.vnodes; k *= 2)
		assert_true(balance_at(be, n, k) > target / 1000.0);
	print_message(
	    "# vnodes auto: %u backends, target %u: K=%u balance %.4f, %u built, %.1f ms\n", n,
	    target, p.vnodes, p.balance, p.tried, p.ms);
}

static void pick_is_the_smallest_passing_rung(void **state)
{
	static const __u32 w4[] = { 100, 149, 50, 25 };
	struct chlb_table_be *be = t_backends(100, 0);
	__u64 seed = 7;

	(void)state;
	check_smallest(be, 10, 1050);
	check_smallest(be, 30, 1100);
	check_smallest(be, 100, 1050);
	for (__u32 i = 0; i < 4; i++)
		be[i].weight = w4[i];
	check_smallest(be, 4, 1020);
	for (__u32 i = 0; i < 20; i++)
		be[i].weight = 10 + t_rand(&seed) % 291;
	check_smallest(be, 20, 1050);
	free(be);
}

static void pick_is_a_function_of_the_set(void **state)
{
	struct chlb_table_be *a = t_backends(60, 0), *b = t_backends(60, 0);
	struct chlb_vnodes_pick pa, pb;
	__u64 seed = 3;
	char err[256];

	(void)state;
	for (__u32 i = 0; i < 60; i++)
		a[i].weight = b[i].weight = 20 + i * 3;
	t_shuffle(b, 60, &seed);
	for (__u32 i = 0; i < 60; i++)
		b[i].slot = 5 * i + 1; /* other slots, another order */
	assert_int_equal(chlb_vnodes_pick(a, 60, 1080, &pa, err, sizeof(err)), 0);
	assert_int_equal(chlb_vnodes_pick(b, 60, 1080, &pb, err, sizeof(err)), 0);
	assert_int_equal(pa.vnodes, pb.vnodes);
	assert_true(pa.balance == pb.balance);
	free(a);
	free(b);
}

static void pick_stays_within_the_ring_limit(void **state)
{
	struct chlb_table_be *be = t_backends(1000, 0);
	struct chlb_vnodes_pick p;
	char err[256];

	(void)state;
	/* 1.05 at N = 1000 would take ~5,000 vnodes per backend: past 2^20 in all */
	assert_int_equal(chlb_vnodes_pick(be, 1000, 1050, &p, err, sizeof(err)), 0);
	assert_false(p.met);
	assert_int_equal(p.vnodes, 1024);
	assert_true(chlb_ring_total_vnodes(be, 1000, p.vnodes) <= CHLB_RING_MAX_VNODES);
	assert_true(chlb_ring_total_vnodes(be, 1000, p.vnodes * 2) > CHLB_RING_MAX_VNODES);
	assert_int_equal(p.tried, 1); /* every rung below is hopeless: not built */
	print_message("# vnodes auto: 1000 backends, target 1.05: K=%u balance %.4f (missed), "
		      "%.1f ms\n",
		      p.vnodes, p.balance, p.ms);
	free(be);
}

static void pick_without_weight(void **state)
{
	struct chlb_table_be *be = t_backends(3, 0);
	struct chlb_vnodes_pick p;
	char err[256];

	(void)state;
	assert_int_equal(chlb_vnodes_pick(be, 0, 0, &p, err, sizeof(err)), 0);
	assert_true(p.met && p.vnodes == CHLB_VNODES_AUTO_MIN);
	for (__u32 i = 0; i < 3; i++)
		be[i].weight = 0;
	assert_int_equal(chlb_vnodes_pick(be, 3, 0, &p, err, sizeof(err)), 0);
	assert_true(p.met && p.vnodes == CHLB_VNODES_AUTO_MIN && p.tried == 0);
	free(be);
}

/* ---- the desired state ---- */

static void exec(struct chlb_state *st, const char *text)
{
	char err[CHLB_ERR_MAX];

	if (chlb_state_exec_text(st, text, "t", err, sizeof(err)))
		fail_msg("%s: %s", text, err);
}

static void state_round_trip_and_history(void **state)
{
	struct chlb_state a, b, c;
	char line[128], *ta, *tb;
	struct chlb_svc_cfg *sa, *sb;
	char err[CHLB_ERR_MAX];
	struct chlb_cmd cmd;

	(void)state;
	chlb_state_init(&a);
	chlb_state_init(&b);
	chlb_state_init(&c);
	/* a: backends one statement (one transaction) at a time, a weight changed on the way */
	exec(&a, "service add 10.0.0.10:80/tcp vnodes auto target 1.1\n");
	for (int i = 0; i < 30; i++) {
		snprintf(line, sizeof(line), "backend add 10.0.0.10:80/tcp 10.1.0.%d weight %d\n",
			 i + 1, i == 5 ? 300 : 100);
		exec(&a, line);
	}
	exec(&a, "backend set 10.0.0.10:80/tcp 10.1.0.6 weight 40\n");
	sa = &a.svc[0];
	assert_int_equal(sa->vnodes_target, 1100);
	assert_true(sa->vnodes_met && sa->vnodes_balance <= 1.1);
	ta = chlb_state_format(&a, false);
	assert_non_null(strstr(ta, "vnodes auto target 1.1 "));
	/* b: the saved text in one go (a restart, or a peer given the final state) */
	exec(&b, ta);
	sb = &b.svc[0];
	assert_int_equal(sb->vnodes, sa->vnodes);
	assert_true(sb->vnodes_balance == sa->vnodes_balance);
	tb = chlb_state_format(&b, false);
	assert_string_equal(ta, tb);
	free(tb);
	/* the default target is not written; a fixed K again forgets auto */
	exec(&c, "service add 10.0.0.10:80/tcp vnodes auto\n");
	tb = chlb_state_format(&c, false);
	assert_non_null(strstr(tb, "vnodes auto fwd"));
	free(tb);
	exec(&c, "service set 10.0.0.10:80/tcp vnodes 200\n");
	tb = chlb_state_format(&c, false);
	assert_non_null(strstr(tb, "vnodes 200 fwd"));
	assert_int_equal(c.svc[0].vnodes_target, 0);
	free(tb);
	/* target only with vnodes auto; its range */
	assert_int_not_equal(chlb_state_exec_text(&c, "service set 10.0.0.10:80/tcp target 1.2\n",
						  "t", err, sizeof(err)),
			     0);
	if (!strstr(err, "vnodes auto"))
		fail_msg("%s", err);
	assert_int_not_equal(chlb_parse_line("service add 10.0.0.11:80/tcp vnodes auto target 1.0",
					     &cmd, err, sizeof(err)),
			     0);
	assert_int_not_equal(
	    chlb_parse_line("service add 10.0.0.11:80/tcp vnodes auto target 1.0501", &cmd, err,
			    sizeof(err)),
	    0);
	assert_int_equal(chlb_parse_line("service add 10.0.0.11:80/tcp vnodes auto target 1.125",
					 &cmd, err, sizeof(err)),
			 0);
	assert_int_equal(cmd.vnodes, 0);
	assert_int_equal(cmd.vnodes_target, 1125);
	free(ta);
	chlb_state_free(&a);
	chlb_state_free(&b);
	chlb_state_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ring_shares_are_the_lookup),
		cmocka_unit_test(pick_is_the_smallest_passing_rung),
		cmocka_unit_test(pick_is_a_function_of_the_set),
		cmocka_unit_test(pick_stays_within_the_ring_limit),
		cmocka_unit_test(pick_without_weight),
		cmocka_unit_test(state_round_trip_and_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
