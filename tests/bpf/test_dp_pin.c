// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb_dp lifecycle: load with a pin directory, attach (XDP generic through
 * a pinned bpf_link, and TC), close, re-open (adopts the pinned maps: state
 * survives), re-attach (the pinned link is updated in place), detach, unpin.
 * Runs in a private network namespace on a veth pair; pins live under the
 * host's /sys/fs/bpf with a per-run name and are removed even on failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <cmocka.h>

#include "dp_fixture.h"

static const char *pin_dir;
static int if0, if1;

static int setup(void **state)
{
	pin_dir = fx_pin_dir("pin");
	if (fx_netns())
		return -1;
	if (system("ip link add chlbp0 type veth peer name chlbp1 && ip link set chlbp0 up && "
		   "ip link set chlbp1 up"))
		return -1;
	if0 = if_nametoindex("chlbp0");
	if1 = if_nametoindex("chlbp1");
	return if0 > 0 && if1 > 0 ? 0 : -1;
}

static __u32 xdp_prog_id(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q))
		return 0;
	return q.skb_prog_id ? q.skb_prog_id : q.prog_id;
}

static void test_lifecycle(void **state)
{
	struct chlb_dp_opts o = { .pin_dir = pin_dir, .conn_max = 4096 };
	struct chlb_backend be, got;
	struct chlb_dp *dp;
	char err[256], path[256];
	__u32 id1, id2;
	struct stat st;
	int rc;

	rc = chlb_dp_open(&o, &dp, err, sizeof(err));
	if (rc)
		fail_msg("open: %s", err);
	assert_false(chlb_dp_adopted(dp));
	snprintf(path, sizeof(path), "%s/conns", pin_dir);
	assert_int_equal(stat(path, &st), 0);
	fx_backend(&be, 7, CHLB_AF_INET, 3);
	assert_int_equal(chlb_dp_set_backend(dp, 7, &be), 0);
	assert_int_equal(chlb_dp_prealloc_table(dp, 5, 10000), 0);
	assert_int_equal(chlb_dp_table_capacity(dp, 5), 3 * CHLB_CHUNK_WORDS);

	rc = chlb_dp_attach(dp, if0, CHLB_ATTACH_XDP_GENERIC, err, sizeof(err));
	if (rc)
		fail_msg("attach xdp: %s", err);
	rc = chlb_dp_attach(dp, if1, CHLB_ATTACH_TC, err, sizeof(err));
	if (rc)
		fail_msg("attach tc: %s", err);
	id1 = xdp_prog_id(if0);
	assert_true(id1 > 0);
	chlb_dp_close(dp);
	/* the pinned link keeps the program attached after the process lets go */
	assert_int_equal(xdp_prog_id(if0), id1);

	/* restart: adopt the maps, swap the program in place */
	rc = chlb_dp_open(&o, &dp, err, sizeof(err));
	if (rc)
		fail_msg("re-open: %s", err);
	assert_true(chlb_dp_adopted(dp));
	assert_int_equal(chlb_dp_get_backend(dp, 7, &got), 0);
	assert_memory_equal(&got, &be, sizeof(be));
	assert_int_equal(chlb_dp_table_capacity(dp, 5), 3 * CHLB_CHUNK_WORDS);
	rc = chlb_dp_attach(dp, if0, CHLB_ATTACH_XDP_GENERIC, err, sizeof(err));
	if (rc)
		fail_msg("re-attach xdp: %s", err);
	rc = chlb_dp_attach(dp, if1, CHLB_ATTACH_TC, err, sizeof(err));
	if (rc)
		fail_msg("re-attach tc: %s", err);
	id2 = xdp_prog_id(if0);
	assert_true(id2 > 0);
	assert_int_not_equal(id1, id2); /* the new program, through the same link */

	assert_int_equal(chlb_dp_detach(dp, if0, CHLB_ATTACH_XDP_GENERIC, err, sizeof(err)), 0);
	assert_int_equal(xdp_prog_id(if0), 0);
	assert_int_equal(chlb_dp_detach(dp, if1, CHLB_ATTACH_TC, err, sizeof(err)), 0);
	assert_int_equal(chlb_dp_detach(dp, if1, CHLB_ATTACH_TC, err, sizeof(err)) < 0, 1);
	assert_int_equal(chlb_dp_unpin(dp, err, sizeof(err)), 0);
	assert_int_not_equal(stat(pin_dir, &st), 0);
	chlb_dp_close(dp);
}

/* How a restart finds the filter pinned beside the adopted entries. */
enum pinned_filter {
	FILTER_MISSING,	   /* a data plane that had no conn_filter */
	FILTER_OLD_SIZE,   /* another shape (the one-bit 512 KiB filter) at the current pin name */
	FILTER_OLD_LAYOUT, /* the interleaved "k3b2s4j" layout under its pin name, bits set */
};

/*
 * Connection entries adopted without usable filter bits must still be
 * found: chlb_dp_open rebuilds the filter from the entries.
 */
static void filter_rebuilt_on_adopt(enum pinned_filter pinned)
{
	struct chlb_dp_opts o = { .pin_dir = pin_dir, .conn_max = 4096 };
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.1",
			    .dst = "10.0.0.1",
			    .sport = 4242,
			    .dport = 80,
			    .flags = FX_ACK };
	struct chlb_table t = { 0 };
	struct chlb_global_stats g0, g1;
	struct chlb_backend be;
	struct chlb_conn c = { .gen = 1 };
	struct chlb_flow f;
	__u32 slots[2] = { 1, 2 }, want, other, len, v, i;
	char err[256], path[256];
	__u8 in[256], out[512];
	struct chlb_dp *dp;
	int n, fd;

	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	for (i = 1; i <= 2; i++) {
		fx_backend(&be, i, CHLB_AF_INET, 1);
		assert_int_equal(chlb_dp_set_backend(dp, i, &be), 0);
	}
	assert_int_equal(fx_table(dp, 0, CHLB_ALGO_MAGLEV, slots, 2, CHLB_AF_INET, &t), 0);
	assert_int_equal(
	    fx_service(dp, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, 0, CHLB_FWD_IPIP, 0, 0), 0);
	fx_flow(&f, &s);
	assert_int_equal(chlb_table_decide(&t, chlb_flow_crc(&f, 0), &want), 0);
	other = want == 1 ? 2 : 1;
	/* an entry written behind the filter's back, as an old data plane would have */
	c.backend = other;
	fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS);
	assert_int_equal(bpf_map_update_elem(fd, &f, &c, 0), 0);
	chlb_dp_close(dp);
	snprintf(path, sizeof(path), "%s/conn_filter_%s", pin_dir, CHLB_CONN_FILTER_LAYOUT);
	assert_int_equal(unlink(path), 0);
	if (pinned == FILTER_OLD_SIZE) {
		/* all clear, at the current pin name */
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "conn_filter", 4, 8, 65536, NULL);
		assert_true(fd >= 0);
		assert_int_equal(bpf_obj_pin(fd, path), 0);
		close(fd);
	} else if (pinned == FILTER_OLD_LAYOUT) {
		/* every bit set: it would answer "maybe" for anything, but it is not adopted */
		__u64 el[4]; /* two bank words and four SYN stamps per element */

		memset(el, 0xff, sizeof(el));
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "conn_filter", 4, sizeof(el),
				    CHLB_CONN_FILTER_WORDS, NULL);
		assert_true(fd >= 0);
		for (i = 0; i < CHLB_CONN_FILTER_WORDS; i++)
			assert_int_equal(bpf_map_update_elem(fd, &i, el, 0), 0);
		snprintf(path, sizeof(path), "%s/conn_filter_k3b2s4j", pin_dir);
		assert_int_equal(bpf_obj_pin(fd, path), 0);
		close(fd);
	}

	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	assert_true(chlb_dp_adopted(dp));
	if (pinned == FILTER_OLD_LAYOUT)
		assert_int_not_equal(access(path, F_OK), 0); /* the old pin is gone */
	{
		struct bpf_map_info info = { 0 };
		__u32 ilen = sizeof(info);

		fd = chlb_dp_map_fd(dp, CHLB_MAP_CONN_FILTER);
		assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &ilen), 0);
		assert_int_equal(info.max_entries, 1);
		assert_int_equal(info.value_size, sizeof(struct chlb_conn_filter));
	}
	n = fx_build(in, &s);
	len = sizeof(out);
	assert_int_equal(chlb_dp_read_global(dp, &g0), 0);
	assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
	assert_int_equal(chlb_dp_read_global(dp, &g1), 0);
	assert_int_equal(g1.reason[CHLB_R_CT_HIT] - g0.reason[CHLB_R_CT_HIT], 1);
	assert_int_equal(fx_slot_of(out + 30, CHLB_AF_INET), other);

	/*
	 * An entry the previous program wrote after that fill (its bits went
	 * to the old filter): unseen until the rebuild that chlbd runs once
	 * attached, because the filter says it is stale.
	 */
	assert_true(chlb_dp_filter_stale(dp));
	s.sport = 4343;
	fx_flow(&f, &s);
	assert_int_equal(chlb_table_decide(&t, chlb_flow_crc(&f, 0), &want), 0);
	c.backend = want == 1 ? 2 : 1;
	assert_int_equal(bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), &f, &c, 0), 0);
	n = fx_build(in, &s);
	len = sizeof(out);
	assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
	assert_int_equal(fx_slot_of(out + 30, CHLB_AF_INET), want); /* taken for no entry */
	assert_int_equal(chlb_dp_filter_rebuild(dp), 0);
	assert_false(chlb_dp_filter_stale(dp));
	len = sizeof(out);
	assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
	assert_int_equal(fx_slot_of(out + 30, CHLB_AF_INET), c.backend);

	assert_int_equal(chlb_dp_unpin(dp, err, sizeof(err)), 0);
	chlb_dp_close(dp);
	chlb_table_free(&t);
}

static void test_filter_rebuilt_on_adopt(void **state)
{
	(void)state;
	filter_rebuilt_on_adopt(FILTER_MISSING);
}

static void test_filter_of_old_size_replaced(void **state)
{
	(void)state;
	filter_rebuilt_on_adopt(FILTER_OLD_SIZE);
}

static void test_filter_of_old_layout_replaced(void **state)
{
	(void)state;
	filter_rebuilt_on_adopt(FILTER_OLD_LAYOUT);
}

/* Send one TCP packet of flow s through XDP; the backend slot it went to. */
static int send_xdp(struct chlb_dp *dp, struct fx_pkt *s, __u8 flags)
{
	__u8 in[256], out[512];
	__u32 len = sizeof(out), v;
	int n;

	s->flags = flags;
	n = fx_build(in, s);
	assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
	return (int)fx_slot_of(out + 30, CHLB_AF_INET);
}

/*
 * The filter rebuild (user/lib/dp/dp_filter.c): entries that exist keep their
 * bits in the new bank, bits of entries that are gone leave, and the flip
 * is what readers see.
 */
static void test_filter_rebuild(void **state)
{
	struct chlb_dp_opts o = { .conn_max = 4096 };
	struct chlb_table t = { 0 };
	struct chlb_backend be;
	struct chlb_conn c;
	struct chlb_flow f;
	__u32 slots[2] = { 1, 2 }, i, zero = 0, bank0, bank1;
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.9",
			    .dst = "10.0.0.1",
			    .dport = 80 };
	double fill_all, fill_half;
	char err[256];
	struct chlb_dp *dp;

	(void)state;
	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	for (i = 1; i <= 2; i++) {
		fx_backend(&be, i, CHLB_AF_INET, 1);
		assert_int_equal(chlb_dp_set_backend(dp, i, &be), 0);
	}
	assert_int_equal(fx_table(dp, 0, CHLB_ALGO_MAGLEV, slots, 2, CHLB_AF_INET, &t), 0);
	assert_int_equal(
	    fx_service(dp, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, 0, CHLB_FWD_IPIP, 0, 0), 0);
	/* 2000 connections through the data plane: SYN, then the ACK that writes the entry */
	for (s.sport = 1000; s.sport < 3000; s.sport++) {
		send_xdp(dp, &s, FX_SYN);
		send_xdp(dp, &s, FX_ACK);
	}
	assert_int_equal(chlb_dp_filter_fill(dp, &fill_all), 0);
	assert_true(fill_all > 0);
	/* half of them go (as LRU eviction would remove them) */
	for (s.sport = 1000; s.sport < 2000; s.sport++) {
		fx_flow(&f, &s);
		assert_int_equal(chlb_dp_conn_delete(dp, &f), 0);
	}
	assert_int_equal(
	    bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_FILTER_BANK), &zero, &bank0), 0);
	assert_int_equal(chlb_dp_filter_rebuild(dp), 0);
	assert_int_equal(
	    bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_FILTER_BANK), &zero, &bank1), 0);
	assert_int_equal(bank1, !bank0);
	assert_int_equal(chlb_dp_filter_fill(dp, &fill_half), 0);
	/* about half the bits: 1000 of 2000 flows, three bits each, few collisions */
	assert_true(fill_half < fill_all * 0.6 && fill_half > fill_all * 0.4);
	/* every remaining connection still hits its entry, whatever the table says now */
	for (s.sport = 2000; s.sport < 3000; s.sport++) {
		fx_flow(&f, &s);
		assert_int_equal(chlb_dp_conn_lookup(dp, &f, &c), 0);
		c.backend = c.backend == 1 ? 2 : 1; /* a decision no table makes */
		assert_int_equal(bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), &f, &c, 0),
				 0);
		assert_int_equal(send_xdp(dp, &s, FX_ACK), c.backend);
	}
	chlb_table_free(&t);
	chlb_dp_close(dp);
}

/*
 * SYN stamps count jiffies when the kernel config is readable (it is on
 * Debian: /boot/config-*; here /proc/config.gz): the HZ libbpf found must be
 * the config's.
 */
static void test_syn_clock_hz(void **state)
{
	char err[256], line[128];
	struct chlb_dp *dp;
	unsigned int hz = 0;
	FILE *f = popen("(zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r)) "
			"| sed -n 's/^CONFIG_HZ=//p'",
			"r");

	(void)state;
	assert_non_null(f);
	if (fgets(line, sizeof(line), f))
		hz = (unsigned int)strtoul(line, NULL, 10);
	pclose(f);
	assert_true(hz > 0); /* this test host has a readable kernel config */
	assert_int_equal(chlb_dp_open(NULL, &dp, err, sizeof(err)), 0);
	assert_int_equal(chlb_dp_syn_clock_hz(dp), hz);
	chlb_dp_close(dp);
}

/* A table written in place through mmap is what the data plane reads. */
static void test_write_in_place(void **state)
{
	struct chlb_dp *dp;
	struct chlb_table t = { 0 };
	struct chlb_backend be;
	__u32 slots[3] = { 1, 2, 3 }, i, cap;
	char err[256];
	__u8 in[256], out[512];

	assert_int_equal(chlb_dp_open(NULL, &dp, err, sizeof(err)), 0);
	for (i = 1; i <= 4; i++) {
		fx_backend(&be, i, CHLB_AF_INET, 1);
		assert_int_equal(chlb_dp_set_backend(dp, i, &be), 0);
	}
	assert_int_equal(chlb_dp_prealloc_table(dp, 0, 65536), 0);
	cap = chlb_dp_table_capacity(dp, 0);
	assert_int_equal(fx_table(dp, 0, CHLB_ALGO_MAGLEV, slots, 3, CHLB_AF_INET, &t), 0);
	assert_int_equal(chlb_dp_table_capacity(dp, 0), cap); /* reused, not replaced */
	assert_int_equal(
	    fx_service(dp, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, 0, CHLB_FWD_IPIP, 0, 0), 0);
	for (i = 0; i < 200; i++) {
		struct fx_pkt s = { .family = CHLB_AF_INET,
				    .proto = IPPROTO_TCP,
				    .src = "198.51.100.1",
				    .dst = "10.0.0.1",
				    .sport = 1000 + i,
				    .dport = 80,
				    .flags = FX_SYN };
		struct chlb_flow f;
		__u32 want, len = sizeof(out), v;
		int n = fx_build(in, &s);

		fx_flow(&f, &s);
		assert_int_equal(chlb_table_decide(&t, chlb_flow_crc(&f, 0), &want), 0);
		assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_XDP, in, n, out, &len, &v), 0);
		assert_int_equal(fx_slot_of(out + 30, CHLB_AF_INET), want);
	}
	chlb_table_free(&t);
	chlb_dp_close(dp);
}

/*
 * Counters pinned by a data plane from before no_route and drop_no_route
 * (24-byte service and backend counters, one reason fewer): a restart over
 * them recreates those three maps at their new size (the counters restart
 * at zero) and adopts the rest; the new counters then count.
 */
static void test_counters_of_old_shape_replaced(void **state)
{
	static const char *const names[] = { "svc_stats", "be_stats", "global_stats" };
	const enum chlb_dp_map maps[] = { CHLB_MAP_SVC_STATS, CHLB_MAP_BE_STATS,
					  CHLB_MAP_GLOBAL_STATS };
	const __u32 old_size[] = { 24, 24, (CHLB_R_MAX - 1) * 8 };
	const __u32 new_size[] = { sizeof(struct chlb_counters), sizeof(struct chlb_counters),
				   sizeof(struct chlb_global_stats) };
	const __u32 max[] = { CHLB_MAX_SERVICES, CHLB_MAX_BACKENDS, 1 };
	struct chlb_dp_opts o = { .pin_dir = pin_dir, .conn_max = 4096 };
	struct chlb_global_stats g;
	struct chlb_counters c;
	struct chlb_backend be, got;
	char err[256], path[256];
	struct chlb_dp *dp;
	int fd;

	(void)state;
	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	fx_backend(&be, 5, CHLB_AF_INET, 3);
	assert_int_equal(chlb_dp_set_backend(dp, 5, &be), 0);
	chlb_dp_close(dp);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, names[i]);
		assert_int_equal(unlink(path), 0);
		fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, names[i], 4, old_size[i], max[i],
				    NULL);
		assert_true(fd >= 0);
		assert_int_equal(bpf_obj_pin(fd, path), 0);
		close(fd);
	}
	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	assert_true(chlb_dp_adopted(dp));
	assert_int_equal(chlb_dp_get_backend(dp, 5, &got), 0); /* adopted */
	assert_int_equal(got.gen, 3);
	for (int i = 0; i < 3; i++) {
		struct bpf_map_info info = { 0 };
		__u32 ilen = sizeof(info);

		assert_int_equal(bpf_obj_get_info_by_fd(chlb_dp_map_fd(dp, maps[i]), &info, &ilen),
				 0);
		assert_int_equal(info.value_size, new_size[i]);
		snprintf(path, sizeof(path), "%s/%s", pin_dir, names[i]);
		fd = bpf_obj_get(path); /* the new map is the one pinned */
		assert_true(fd >= 0);
		memset(&info, 0, sizeof(info));
		assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &ilen), 0);
		assert_int_equal(info.value_size, new_size[i]);
		close(fd);
	}
	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	assert_int_equal(g.reason[CHLB_R_NO_ROUTE], 0);
	assert_int_equal(chlb_dp_read_backend_stats(dp, 5, &c), 0);
	assert_int_equal(c.no_route, 0);
	assert_int_equal(chlb_dp_unpin(dp, err, sizeof(err)), 0);
	chlb_dp_close(dp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_filter_rebuilt_on_adopt),
		cmocka_unit_test(test_filter_of_old_size_replaced),
		cmocka_unit_test(test_filter_of_old_layout_replaced),
		cmocka_unit_test(test_write_in_place),
		cmocka_unit_test(test_filter_rebuild),
		cmocka_unit_test(test_syn_clock_hz),
		cmocka_unit_test(test_counters_of_old_shape_replaced),
	};

	return cmocka_run_group_tests_name("dp_pin", tests, setup, NULL);
}
