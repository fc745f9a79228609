// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Forwarding (bpf/chlb_encap.h): IPv4 in IPv6 and a configured encap source,
 * the FIB lookup and the backend's next hop.
 * Runs in a private network namespace; the harness is dp_suite.h.
 */
#include "dp_suite.h"

static void test_4in6_and_encap_src(void **state)
{
	static const __u8 src4[4] = { 192, 0, 2, 100 };
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.17",
			    .dst = "10.0.0.3",
			    .sport = 7,
			    .dport = 80,
			    .flags = FX_SYN,
			    .tos = 0x48 };
	__u8 in[256], out[512];
	int n = fx_build(in, &s), prog;

	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_4IN6, &s, 0));
	s.dst = "10.0.0.6";
	n = fx_build(in, &s);
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_TX);

		assert_int_equal(check_fwd(in, n, out, len, M_IP4, src4),
				 expected_slot(SVC_SRC, &s, 0));
	}
}

/*
 * Next hop from the kernel: bpf_fib_lookup without a cached one, and
 * chlb_nh_resolve; a backend without a route: drop_no_route, per backend.
 */
static void test_fib_and_nexthop(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.22",
			    .dst = "10.0.0.8",
			    .sport = 7,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[256], out[512], mac[6] = { 0x02, 0, 0, 0, 0, 0x78 }, a[4];
	struct chlb_table t = { 0 };
	struct chlb_counters b0, b1, s0, s1;
	struct chlb_backend be;
	struct chlb_nh nh;
	__u32 slot = 60;
	int n, prog, ifindex;

	assert_int_equal(
	    system("ip link add chlbfib0 type veth peer name chlbfib1 && "
		   "ip addr add 192.0.2.1/24 dev chlbfib0 && ip link set chlbfib0 up && "
		   "ip link set chlbfib1 up && "
		   "ip neigh add 192.0.2.78 lladdr 02:00:00:00:00:78 dev chlbfib0 "
		   "nud permanent && echo 1 > /proc/sys/net/ipv4/ip_forward"),
	    0);
	ifindex = if_nametoindex("chlbfib0");
	assert_true(ifindex > 0);

	/* userspace resolver */
	inet_pton(AF_INET, "192.0.2.78", a);
	assert_int_equal(chlb_nh_resolve(AF_INET, a, &nh), 0);
	assert_memory_equal(nh.dmac, mac, 6);
	assert_int_equal(nh.ifindex, ifindex);
	inet_pton(AF_INET, "192.0.2.77", a);
	assert_int_equal(chlb_nh_resolve(AF_INET, a, &nh), -EAGAIN);
	inet_pton(AF_INET, "203.0.113.1", a);
	assert_int_equal(chlb_nh_resolve(AF_INET, a, &nh), -ENETUNREACH);

	/* data plane: no cached next hop, neighbour known -> redirect to the veth */
	memset(&be, 0, sizeof(be));
	be.family = CHLB_AF_INET;
	be.state = CHLB_BE_LIVE;
	be.gen = 1;
	inet_pton(AF_INET, "192.0.2.78", be.addr);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	assert_int_equal(
	    fx_table(dp, tslot_of(12, 0), CHLB_ALGO_MAGLEV, &slot, 1, CHLB_AF_INET, &t), 0);
	assert_int_equal(fx_service(dp, CHLB_AF_INET, "10.0.0.8", 80, IPPROTO_TCP, 12,
				    CHLB_FWD_L2DSR, 0, tslot_of(12, 0)),
			 0);
	n = fx_build(in, &s);
	for (prog = 0; prog < 2; prog++) {
		__u32 len = run(prog, in, n, out, W_REDIRECT);

		assert_int_equal(len, n);
		assert_memory_equal(out, mac, 6);
		assert_memory_equal(out + 12, in + 12, n - 12);
	}
	/* neighbour unknown: passed so the kernel resolves it */
	inet_pton(AF_INET, "192.0.2.79", be.addr);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	expect_pass(in, n, CHLB_R_PASS_NO_NEIGH);
	/* no route to the backend: dropped, counted by name, for the service and the slot */
	inet_pton(AF_INET, "203.0.113.1", be.addr);
	assert_int_equal(chlb_dp_set_backend(dp, slot, &be), 0);
	assert_int_equal(chlb_dp_read_backend_stats(dp, slot, &b0), 0);
	assert_int_equal(chlb_dp_read_service_stats(dp, 12, &s0), 0);
	expect_drop(in, n, CHLB_R_NO_ROUTE);
	stats_delta(CHLB_R_ERROR, 0);
	stats_delta(CHLB_R_FORWARDED, 0);
	assert_int_equal(chlb_dp_read_backend_stats(dp, slot, &b1), 0);
	assert_int_equal(chlb_dp_read_service_stats(dp, 12, &s1), 0);
	assert_int_equal(b1.no_route - b0.no_route, 2); /* XDP and TC */
	assert_int_equal(s1.no_route - s0.no_route, 2);
	assert_int_equal(b1.packets, b0.packets);
	assert_int_equal(s1.packets, s0.packets);
	chlb_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_4in6_and_encap_src),
		cmocka_unit_test(test_fib_and_nexthop),
	};

	return dp_suite_run("dp_encap", tests, sizeof(tests) / sizeof(tests[0]));
}
