// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The data plane's VIP index (vip_index + views, user/lib/dp/dp_views.c):
 * at capacity every VIP is found through the real program (exact port, not
 * another port), removed ones pass, re-added ones are found; a full probe
 * window is refused and changes nothing; thousands of view changes in a
 * row (more than there are view slots) each serve at once; an adopted
 * index is brought in step with the `vips` registry at open.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "dp_fixture.h"

#define MAX_VIPS CHLB_MAX_VIPS

static const char *pin_dir;

static int setup(void **state)
{
	pin_dir = fx_pin_dir("vips");
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
static struct chlb_dp *open_dp(const char *pins, struct chlb_table *t)
{
	struct chlb_dp_opts o = { .pin_dir = pins, .conn_max = 4096 };
	struct chlb_backend be;
	struct chlb_dp *dp;
	__u32 slot = 1;
	char err[256];

	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	fx_backend(&be, slot, CHLB_AF_INET, 1);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	if (t)
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
	struct chlb_dp *dp = open_dp(NULL, &t);
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

/* CHLB_VIP_PROBES + 1 keys whose probes start at one slot: the last is refused. */
static void test_full_window_refused(void **state)
{
	struct chlb_table t = { 0 };
	struct chlb_dp *dp = open_dp(NULL, &t);
	__u16 ports[CHLB_VIP_PROBES + 1];
	struct chlb_vip_key key;
	__u32 want = 0, n = 0, port;
	__u8 a[4] = { 10, 9, 9, 9 };

	for (port = 1; port < 65536 && n <= CHLB_VIP_PROBES; port++) {
		__u32 s;

		chlb_dp_vip_key(&key, CHLB_AF_INET, a, (__u16)port, IPPROTO_TCP);
		s = chlb_vip_hash(&key) & (CHLB_VIP_SLOTS - 1);
		if (!n)
			want = s;
		if (s == want)
			ports[n++] = (__u16)port;
	}
	assert_int_equal(n, CHLB_VIP_PROBES + 1);
	for (n = 0; n < CHLB_VIP_PROBES; n++)
		assert_int_equal(add(dp, "10.9.9.9", ports[n]), 0);
	assert_int_equal(add(dp, "10.9.9.9", ports[CHLB_VIP_PROBES]), -ENOSPC);
	assert_int_equal(send_syn(dp, "10.9.9.9", ports[CHLB_VIP_PROBES]), CHLB_R_PASS_NOT_VIP);
	for (n = 0; n < CHLB_VIP_PROBES; n++)
		assert_int_equal(send_syn(dp, "10.9.9.9", ports[n]), CHLB_R_FORWARDED);
	/* a place freed in the window takes it; the keys behind it stay found */
	assert_int_equal(del(dp, "10.9.9.9", ports[3]), 0);
	assert_int_equal(add(dp, "10.9.9.9", ports[CHLB_VIP_PROBES]), 0);
	assert_int_equal(send_syn(dp, "10.9.9.9", ports[CHLB_VIP_PROBES]), CHLB_R_FORWARDED);
	assert_int_equal(send_syn(dp, "10.9.9.9", ports[3]), CHLB_R_PASS_NOT_VIP);
	assert_int_equal(send_syn(dp, "10.9.9.9", ports[7]), CHLB_R_FORWARDED);
	chlb_dp_close(dp);
	chlb_table_free(&t);
}

/*
 * More view changes of one VIP than there are view slots, each followed by
 * a packet: every change serves at once (a freed view slot is reused only
 * after its grace period, so the writer waits rather than overwrite one).
 */
static void test_many_changes_serve_at_once(void **state)
{
	struct chlb_table t1 = { 0 }, t2 = { 0 };
	struct chlb_dp *dp = open_dp(NULL, NULL);
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.7",
			    .dst = "10.0.0.1",
			    .sport = 4321,
			    .dport = 80,
			    .flags = FX_SYN };
	struct chlb_backend be;
	__u32 s1 = 1, s2 = 2, i;
	__u8 in[256], out[512];
	int n = fx_build(in, &s);

	fx_backend(&be, s2, CHLB_AF_INET, 1);
	assert_int_equal(chlb_dp_set_backend(dp, s2, &be), 0);
	assert_int_equal(fx_table(dp, 0, CHLB_ALGO_MAGLEV, &s1, 1, CHLB_AF_INET, &t1), 0);
	assert_int_equal(fx_table(dp, 1, CHLB_ALGO_MAGLEV, &s2, 1, CHLB_AF_INET, &t2), 0);
	for (i = 0; i < CHLB_VIEW_SLOTS + 200; i++) {
		__u32 len = sizeof(out), v;

		assert_int_equal(fx_service(dp, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, 1,
					    CHLB_FWD_IPIP, 0, i & 1),
				 0);
		assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
		assert_int_equal(v, XDP_TX);
		assert_int_equal(fx_slot_of(out + 30, CHLB_AF_INET), i & 1 ? 2 : 1);
	}
	chlb_dp_close(dp);
	chlb_table_free(&t1);
	chlb_table_free(&t2);
}

/*
 * Adopted pins: a VIP the registry lost (a crash between the two writes
 * of a removal) leaves the index; a registered VIP the index lacks (pins
 * from a version without it) is indexed.
 */
static void test_index_synced_on_adopt(void **state)
{
	struct chlb_table t = { 0 };
	struct chlb_dp *dp = open_dp(pin_dir, &t);
	struct chlb_vip_key key;
	char path[256];
	__u8 a[4] = { 10, 0, 0, 2 };

	assert_int_equal(add(dp, "10.0.0.1", 80), 0);
	assert_int_equal(add(dp, "10.0.0.2", 80), 0);
	chlb_dp_vip_key(&key, CHLB_AF_INET, a, 80, IPPROTO_TCP);
	assert_int_equal(bpf_map_delete_elem(chlb_dp_map_fd(dp, CHLB_MAP_VIPS), &key), 0);
	assert_int_equal(send_syn(dp, "10.0.0.2", 80), CHLB_R_FORWARDED); /* the index has it */
	chlb_dp_close(dp);

	dp = open_dp(pin_dir, NULL);
	assert_true(chlb_dp_adopted(dp));
	assert_int_equal(send_syn(dp, "10.0.0.1", 80), CHLB_R_FORWARDED);
	assert_int_equal(send_syn(dp, "10.0.0.2", 80), CHLB_R_PASS_NOT_VIP);
	chlb_dp_close(dp);

	snprintf(path, sizeof(path), "%s/vip_index", pin_dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/views", pin_dir);
	assert_int_equal(unlink(path), 0);
	dp = open_dp(pin_dir, NULL);
	assert_int_equal(send_syn(dp, "10.0.0.1", 80), CHLB_R_FORWARDED);
	assert_int_equal(chlb_dp_unpin(dp, NULL, 0), 0);
	chlb_dp_close(dp);
	chlb_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_vip_found),
		cmocka_unit_test(test_full_window_refused),
		cmocka_unit_test(test_many_changes_serve_at_once),
		cmocka_unit_test(test_index_synced_on_adopt),
	};

	return cmocka_run_group_tests_name("vips", tests, setup, NULL);
}
