// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data plane's decision is bit-identical to the userspace lookup over
 * the same table words: 10,000 random flows per algorithm and family, each
 * run through the XDP and the TC entry point (SYN, so the decision comes
 * straight from the current table), the outer destination compared with
 * chlb_table_decide() on the host. Jump also with uneven weights (its
 * acceptance rehashes and fallback); hrw (rendezvous compiled into a
 * Maglev-format table) with uneven weights and a drained backend.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dp_fixture.h"

#define NFLOWS	   10000
#define NBACKENDS  50
#define FIRST_SLOT 100

static struct chlb_dp *dp;

static int setup(void **state)
{
	if (fx_open_private(&dp))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	chlb_dp_close(dp);
	return 0;
}

/*
 * Jump with uneven weights: the weighted lookup's rehashes, a drained
 * bucket and a light one next to a heavy one (many attempts, some flows
 * reach the fallback), so the BPF loop runs every path the host's does.
 */
static int weighted_table(__u32 algo, __u32 tslot, const __u32 *slots, int family,
			  struct chlb_table *t)
{
	struct chlb_table_spec spec = { .algo = algo };
	struct chlb_table_be be[NBACKENDS];
	__u64 seed = 99;
	char err[256];

	for (__u32 i = 0; i < NBACKENDS; i++) {
		be[i].slot = slots[i];
		be[i].weight = i == 3 ? 0 : i == 7 ? CHLB_WEIGHT_MAX : 1 + fx_rand(&seed) % 300;
		fx_name(be[i].name, sizeof(be[i].name), slots[i], family);
	}
	if (chlb_table_build(&spec, be, NBACKENDS, t, err, sizeof(err))) {
		fprintf(stderr, "table build: %s\n", err);
		return -1;
	}
	return chlb_dp_write_table(dp, tslot, t->words, t->nwords);
}

static void run_algo_w(__u32 algo, int family, bool weighted)
{
	const int fam = family == CHLB_AF_INET ? AF_INET : AF_INET6;
	__u32 slots[NBACKENDS], i, tslot = algo * CHLB_SLOTS_PER_SERVICE;
	struct chlb_table t = { 0 };
	struct chlb_backend be;
	__u64 seed = algo * 7919 + family;
	__u8 in[256], out[512];
	int prog, mismatches = 0;

	for (i = 0; i < NBACKENDS; i++) {
		slots[i] = FIRST_SLOT + i;
		fx_backend(&be, slots[i], family, 1);
		assert_int_equal(chlb_dp_set_backend(dp, slots[i], &be), 0);
	}
	if (weighted)
		assert_int_equal(weighted_table(algo, tslot, slots, family, &t), 0);
	else
		assert_int_equal(fx_table(dp, tslot, algo, slots, NBACKENDS, family, &t), 0);
	assert_int_equal(fx_service(dp, family,
				    family == CHLB_AF_INET ? "10.0.0.10" : "2001:db8::10", 0,
				    IPPROTO_TCP, algo == CHLB_ALGO_HRW ? CHLB_ALGO_MAGLEV : algo,
				    CHLB_FWD_IPIP, CHLB_HASH_5TUPLE, tslot),
			 0);

	for (i = 0; i < NFLOWS; i++) {
		char src[INET6_ADDRSTRLEN];
		__u64 r = fx_rand(&seed);
		__u8 a[16] = { 0 };
		struct fx_pkt s = { .family = family,
				    .proto = IPPROTO_TCP,
				    .src = src,
				    .dst = family == CHLB_AF_INET ? "10.0.0.10" : "2001:db8::10",
				    .sport = r >> 16,
				    .dport = r >> 32,
				    .flags = FX_SYN };
		struct chlb_flow f;
		__u32 want, len, verdict;
		int n;

		memcpy(a, &r, 8);
		r = fx_rand(&seed);
		memcpy(a + 8, &r, 8);
		if (!s.dport)
			s.dport = 1;
		inet_ntop(fam, a, src, sizeof(src));
		n = fx_build(in, &s);
		fx_flow(&f, &s);
		assert_int_equal(chlb_table_decide(&t, chlb_flow_crc(&f, CHLB_HASH_5TUPLE), &want),
				 0);
		for (prog = 0; prog < 2; prog++) {
			const __u8 *dst;

			len = sizeof(out);
			assert_int_equal(chlb_dp_test_run(dp, prog, in, n, out, &len, &verdict), 0);
			dst = family == CHLB_AF_INET ? out + 14 + 16 : out + 14 + 24;
			if (len != (__u32)n + (family == CHLB_AF_INET ? 20 : 40) ||
			    fx_slot_of(dst, family) != (int)want) {
				if (mismatches++ < 5)
					fprintf(
					    stderr,
					    "# flow %u prog %d: want slot %u, got %d (len %u)\n", i,
					    prog, want, fx_slot_of(dst, family), len);
			}
		}
	}
	chlb_table_free(&t);
	assert_int_equal(mismatches, 0);
}

static void run_algo(__u32 algo, int family)
{
	run_algo_w(algo, family, false);
}

static void test_jump_weighted_v4(void **state)
{
	run_algo_w(CHLB_ALGO_JUMP, CHLB_AF_INET, true);
}

static void test_jump_weighted_v6(void **state)
{
	run_algo_w(CHLB_ALGO_JUMP, CHLB_AF_INET6, true);
}

static void test_hrw_weighted_v4(void **state)
{
	run_algo_w(CHLB_ALGO_HRW, CHLB_AF_INET, true);
}

static void test_hrw_weighted_v6(void **state)
{
	run_algo_w(CHLB_ALGO_HRW, CHLB_AF_INET6, true);
}

static void test_ring_v4(void **state)
{
	run_algo(CHLB_ALGO_RING, CHLB_AF_INET);
}

static void test_ring_v6(void **state)
{
	run_algo(CHLB_ALGO_RING, CHLB_AF_INET6);
}

static void test_jump_v4(void **state)
{
	run_algo(CHLB_ALGO_JUMP, CHLB_AF_INET);
}

static void test_jump_v6(void **state)
{
	run_algo(CHLB_ALGO_JUMP, CHLB_AF_INET6);
}

static void test_maglev_v4(void **state)
{
	run_algo(CHLB_ALGO_MAGLEV, CHLB_AF_INET);
}

static void test_maglev_v6(void **state)
{
	run_algo(CHLB_ALGO_MAGLEV, CHLB_AF_INET6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_v4),		 cmocka_unit_test(test_ring_v6),
		cmocka_unit_test(test_jump_v4),		 cmocka_unit_test(test_jump_v6),
		cmocka_unit_test(test_jump_weighted_v4), cmocka_unit_test(test_jump_weighted_v6),
		cmocka_unit_test(test_maglev_v4),	 cmocka_unit_test(test_maglev_v6),
		cmocka_unit_test(test_hrw_weighted_v4),	 cmocka_unit_test(test_hrw_weighted_v6),
	};

	return cmocka_run_group_tests_name("dataplane_decide", tests, setup, teardown);
}
