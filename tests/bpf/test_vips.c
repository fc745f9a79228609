// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * VIP lookup at capacity: with as many VIPs as the `vips` map holds, every
 * one is found through the real program (exact port, not another port),
 * removed ones pass, and re-added ones are found again. The key is built
 * a word at a time in bpf/chlb_pipeline.h; this checks it still matches
 * the key userspace writes (chlb_dp_vip_key) for a thousand addresses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "dp_fixture.h"

#define MAX_VIPS (CHLB_MAX_SERVICES * 4) /* vips max_entries */

static int setup(void **state)
{
	return fx_netns();
}

/* 10.<i / 256>.<i % 256>.1, the VIP of test service i */
static void vip_of(char *buf, size_t len, __u32 i)
{
	snprintf(buf, len, "10.%u.%u.1", (i >> 8) & 0xff, i & 0xff);
}

/* One SYN to vip:port through XDP: the reason counter that went up. */
static enum chlb_reason send_syn(struct chlb_dp *dp, const char *vip, __u16 port)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.7",
			    .dst = vip,
			    .sport = 4321,
			    .dport = port,
			    .flags = FX_SYN };
	struct chlb_global_stats g0, g1;
	__u8 in[256], out[512];
	__u32 len = sizeof(out), v;
	int n = fx_build(in, &s), r;

	assert_int_equal(chlb_dp_read_global(dp, &g0), 0);
	assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
	assert_int_equal(chlb_dp_read_global(dp, &g1), 0);
	for (r = 0; r < CHLB_R_MAX; r++)
		if (r != CHLB_R_CT_MISS && g1.reason[r] != g0.reason[r])
			return (enum chlb_reason)r;
	return CHLB_R_MAX;
}

/* A data plane with one backend and one table every service shares. */
static struct chlb_dp *open_dp(struct chlb_table *t)
{
	struct chlb_dp_opts o = { .conn_max = 4096 };
	struct chlb_backend be;
	struct chlb_dp *dp;
	__u32 slot = 1;
	char err[256];

	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	fx_backend(&be, slot, CHLB_AF_INET, 1);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	assert_int_equal(fx_table(dp, 0, CHLB_ALGO_MAGLEV, &slot, 1, CHLB_AF_INET, t), 0);
	return dp;
}

static int add(struct chlb_dp *dp, const char *vip, __u16 port)
{
	return fx_service(dp, CHLB_AF_INET, vip, port, IPPROTO_TCP, 1, CHLB_FWD_IPIP, 0, 0);
}

static int del(struct chlb_dp *dp, const char *vip, __u16 port)
{
	struct chlb_vip_key key;
	__u8 a[4];

	inet_pton(AF_INET, vip, a);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, port, IPPROTO_TCP);
	return chlb_dp_del_service(dp, &key);
}

/* As many VIPs as the data plane holds: every one found, removed ones pass. */
static void test_every_vip_found(void **state)
{
	struct chlb_table t = { 0 };
	struct chlb_dp *dp = open_dp(&t);
	char vip[32];
	__u32 i;

	for (i = 0; i < MAX_VIPS; i++) {
		vip_of(vip, sizeof(vip), i);
		assert_int_equal(add(dp, vip, 80), 0);
	}
	for (i = 0; i < MAX_VIPS; i++) {
		vip_of(vip, sizeof(vip), i);
		assert_int_equal(send_syn(dp, vip, 80), CHLB_R_FORWARDED);
		assert_int_equal(send_syn(dp, vip, 81), CHLB_R_PASS_NOT_VIP);
	}
	/* every other one removed */
	for (i = 0; i < MAX_VIPS; i += 2) {
		vip_of(vip, sizeof(vip), i);
		assert_int_equal(del(dp, vip, 80), 0);
	}
	for (i = 0; i < MAX_VIPS; i++) {
		vip_of(vip, sizeof(vip), i);
		assert_int_equal(send_syn(dp, vip, 80),
				 i % 2 ? CHLB_R_FORWARDED : CHLB_R_PASS_NOT_VIP);
	}
	/* and back */
	for (i = 0; i < MAX_VIPS; i += 2) {
		vip_of(vip, sizeof(vip), i);
		assert_int_equal(add(dp, vip, 80), 0);
		assert_int_equal(send_syn(dp, vip, 80), CHLB_R_FORWARDED);
	}
	assert_int_equal(del(dp, "10.250.250.1", 80), -ENOENT);
	chlb_dp_close(dp);
	chlb_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_vip_found),
	};

	return cmocka_run_group_tests_name("vips", tests, setup, NULL);
}
