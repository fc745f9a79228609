// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The probe steering program (bpf/chlb_probe.h, TC egress) through
 * bpf_prog_test_run_opts() with skb->mark set in the context: a marked
 * TCP SYN to a VIP leaves rewritten (l2dsr) or encapsulated (ipip: 4in4,
 * 6in6, 4in6, encap-src) for the backend its mark names - byte for byte
 * what the TC pipeline makes of the same SYN when it picks that backend,
 * and for the other backend the same but for its MACs and address - and
 * its mark is consumed; unmarked frames and foreign marks pass untouched
 * and uncounted; a dead, empty or out-of-range slot, and a marked frame
 * to no VIP, are dropped and counted. chlb_nh_probe_route() names the
 * interface a marked probe leaves by, policy routing on the mark included,
 * and refuses a VIP without a usable route or local to the host. Runs in a
 * private network namespace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <linux/pkt_cls.h>
#include <cmocka.h>

#include "base/addr.h"
#include "dp/nexthop.h"
#include "dp_fixture.h"

#define NBE 2
/* backend slots: IPv4 1, 2; IPv6 11, 12; slot 3: IPv4 on another interface */
static const __u32 v4_slots[NBE] = { 1, 2 }, v6_slots[NBE] = { 11, 12 };
#define SLOT_OTHER_IF 3
#define OTHER_IFINDEX 9
#define SLOT_DEAD     5
#define SLOT_EMPTY    6

static struct chlb_dp *dp;
static struct chlb_global_stats g0;

static void stats_mark(void)
{
	assert_int_equal(chlb_dp_read_global(dp, &g0), 0);
}

/* Every reason counter moved by exactly its entry in want[] (others 0). */
static void stats_expect(const __u64 want[CHLB_R_MAX])
{
	struct chlb_global_stats g;

	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	for (int r = 0; r < CHLB_R_MAX; r++)
		if (g.reason[r] - g0.reason[r] != want[r])
			fail_msg("reason %s: delta %llu, want %llu", chlb_reason_names[r],
				 (unsigned long long)(g.reason[r] - g0.reason[r]),
				 (unsigned long long)want[r]);
}

/* The steering program on one frame with skb->mark = mark. */
static __u32 probe_run(__u32 mark, const __u8 *in, int n, __u8 *out, __u32 *olen, __u32 *mark_after)
{
	struct __sk_buff ctx = { .mark = mark }, ctx_out = { 0 };
	struct bpf_test_run_opts o = { .sz = sizeof(o),
				       .data_in = in,
				       .data_size_in = n,
				       .data_out = out,
				       .data_size_out = 2048,
				       .ctx_in = &ctx,
				       .ctx_size_in = sizeof(ctx),
				       .ctx_out = &ctx_out,
				       .ctx_size_out = sizeof(ctx_out),
				       .repeat = 1 };

	assert_int_equal(bpf_prog_test_run_opts(chlb_dp_prog_fd(dp, CHLB_PROG_PROBE), &o), 0);
	*olen = o.data_size_out;
	*mark_after = ctx_out.mark;
	return o.retval;
}

static int add_service(int family, const char *vip, __u32 id, __u8 fwd, const __u32 *slots,
		       int be_family, const __u8 *encap_src)
{
	struct chlb_table t = { 0 };
	struct chlb_service svc;
	struct chlb_vip_key key;
	__u8 a[16];

	assert_int_equal(fx_table(dp, id, CHLB_ALGO_MAGLEV, slots, NBE, be_family, &t), 0);
	chlb_table_free(&t);
	assert_int_equal(
	    fx_service(dp, family, vip, 80, IPPROTO_TCP, id, fwd, CHLB_HASH_5TUPLE, id), 0);
	if (!encap_src)
		return 0;
	inet_pton(family == CHLB_AF_INET ? AF_INET : AF_INET6, vip, a);
	chlb_dp_vip_key(&key, family, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_get_service(dp, &key, &svc), 0);
	memcpy(svc.encap_src, encap_src, 16);
	return chlb_dp_set_service(dp, &key, &svc);
}

static const __u8 encap_src4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 100 };

static int setup(void **state)
{
	struct chlb_backend be;

	(void)state;
	if (fx_open_private(&dp))
		return -1;
	for (int i = 0; i < NBE; i++) {
		fx_backend(&be, v4_slots[i], CHLB_AF_INET, 1);
		assert_int_equal(chlb_dp_set_backend(dp, v4_slots[i], &be), 0);
		fx_backend(&be, v6_slots[i], CHLB_AF_INET6, 1);
		assert_int_equal(chlb_dp_set_backend(dp, v6_slots[i], &be), 0);
	}
	fx_backend(&be, SLOT_OTHER_IF, CHLB_AF_INET, 1);
	be.ifindex = OTHER_IFINDEX;
	assert_int_equal(chlb_dp_set_backend(dp, SLOT_OTHER_IF, &be), 0);
	fx_backend(&be, SLOT_DEAD, CHLB_AF_INET, 1);
	be.state = CHLB_BE_DEAD;
	assert_int_equal(chlb_dp_set_backend(dp, SLOT_DEAD, &be), 0);

	add_service(CHLB_AF_INET, "10.0.0.1", 1, CHLB_FWD_L2DSR, v4_slots, CHLB_AF_INET, NULL);
	add_service(CHLB_AF_INET6, "2001:db8::1", 2, CHLB_FWD_L2DSR, v6_slots, CHLB_AF_INET6, NULL);
	add_service(CHLB_AF_INET, "10.0.0.2", 3, CHLB_FWD_IPIP, v4_slots, CHLB_AF_INET, NULL);
	add_service(CHLB_AF_INET6, "2001:db8::2", 4, CHLB_FWD_IPIP, v6_slots, CHLB_AF_INET6, NULL);
	add_service(CHLB_AF_INET, "10.0.0.3", 5, CHLB_FWD_IPIP, v4_slots, CHLB_AF_INET, encap_src4);
	add_service(CHLB_AF_INET, "10.0.0.4", 6, CHLB_FWD_IPIP, v6_slots, CHLB_AF_INET6, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	chlb_dp_close(dp);
	return 0;
}

/* A probe's SYN as the LB's stack sends it: LB address -> VIP:80. */
static int probe_syn(__u8 *b, int family, const char *vip, __u16 sport)
{
	struct fx_pkt s = { .family = family,
			    .proto = IPPROTO_TCP,
			    .src = family == CHLB_AF_INET ? "198.51.100.2" : "2001:db8:1b::2",
			    .dst = vip,
			    .sport = sport,
			    .dport = 80,
			    .flags = FX_SYN,
			    .df = 1 };

	return fx_build(b, &s);
}

/* The backend slot a frame leaves for: its MACs (l2dsr) or its outer destination (ipip). */
static int slot_of(const __u8 *out, bool ipip)
{
	__u16 et = (out[12] << 8) | out[13];

	if (!ipip)
		return (out[4] << 8) | out[5]; /* fx_backend's dmac ends with the slot */
	if (et == ETH_P_IP)
		return fx_slot_of(out + 14 + 16, CHLB_AF_INET);
	return fx_slot_of(out + 14 + 24, CHLB_AF_INET6);
}

/*
 * One VIP: the pipeline (chlb_tc) picks a backend for the SYN; the probe
 * marked with that slot leaves byte for byte as the pipeline's frame; the
 * probe marked with the other slot leaves for that one, the same but for
 * the backend's MACs and address.
 */
static void check_vip(int family, const char *vip, bool ipip, const __u32 *slots)
{
	__u8 in[256], pipe[2048], out[2048];
	__u32 plen = sizeof(pipe), olen, v, mark, m;
	__u64 want[CHLB_R_MAX] = { 0 };
	int n = probe_syn(in, family, vip, 40000), chosen, other;
	struct chlb_counters c0[NBE], c1;

	assert_int_equal(chlb_dp_test_run(dp, CHLB_PROG_TC, in, n, pipe, &plen, &v), 0);
	/* back out of ifindex 1, the fixture's backends' (ingress: a redirect to itself) */
	assert_int_equal(v, TC_ACT_REDIRECT);
	chosen = slot_of(pipe, ipip);
	assert_true(chosen == (int)slots[0] || chosen == (int)slots[1]);
	other = chosen == (int)slots[0] ? (int)slots[1] : (int)slots[0];
	for (int i = 0; i < NBE; i++)
		assert_int_equal(chlb_dp_read_backend_stats(dp, slots[i], &c0[i]), 0);

	stats_mark();
	mark = CHLB_PROBE_MARK(chosen);
	assert_int_equal(probe_run(mark, in, n, out, &olen, &m), TC_ACT_OK);
	assert_int_equal(olen, plen);
	assert_memory_equal(out, pipe, plen);
	assert_int_equal(m, 0); /* consumed: a second steering program lets it pass */

	mark = CHLB_PROBE_MARK(other);
	assert_int_equal(probe_run(mark, in, n, out, &olen, &m), TC_ACT_OK);
	assert_int_equal(olen, plen);
	assert_int_equal(slot_of(out, ipip), other);
	assert_memory_equal(out + 6, pipe + 6, 6); /* smac: ours */
	if (!ipip) {
		assert_memory_equal(out + 12, in + 12, n - 12); /* the packet itself untouched */
	} else if (out[12] == 0x08) {
		/* 4in4: the outer source from the same flow hash (or encap-src) */
		assert_memory_equal(out + 14 + 12, pipe + 14 + 12, 4);
		assert_memory_equal(out + 14 + 20, in + 14, n - 14);
	} else {
		/* 6in6/4in6: flow label and source from the same flow hash */
		assert_memory_equal(out + 14, pipe + 14, 4);
		assert_memory_equal(out + 14 + 8, pipe + 14 + 8, 16);
		assert_memory_equal(out + 14 + 40, in + 14, n - 14);
	}
	want[CHLB_R_PROBE_STEERED] = 2;
	stats_expect(want);
	/* probes are not client traffic: the backends' counters did not move */
	for (int i = 0; i < NBE; i++) {
		assert_int_equal(chlb_dp_read_backend_stats(dp, slots[i], &c1), 0);
		assert_int_equal(c1.packets, c0[i].packets);
		assert_int_equal(c1.new_flows, c0[i].new_flows);
	}
}

static void test_l2dsr(void **state)
{
	(void)state;
	check_vip(CHLB_AF_INET, "10.0.0.1", false, v4_slots);
	check_vip(CHLB_AF_INET6, "2001:db8::1", false, v6_slots);
}

static void test_ipip(void **state)
{
	(void)state;
	check_vip(CHLB_AF_INET, "10.0.0.2", true, v4_slots);	 /* 4in4, source from the hash */
	check_vip(CHLB_AF_INET6, "2001:db8::2", true, v6_slots); /* 6in6 */
	check_vip(CHLB_AF_INET, "10.0.0.3", true, v4_slots);	 /* 4in4, encap-src */
	check_vip(CHLB_AF_INET, "10.0.0.4", true, v6_slots);	 /* 4in6 */
}

/* The encap-src service's outer source is its encap-src, not the hash's. */
static void test_encap_src(void **state)
{
	__u8 in[256], out[2048];
	__u32 olen, m;
	int n = probe_syn(in, CHLB_AF_INET, "10.0.0.3", 40001);

	(void)state;
	assert_int_equal(probe_run(CHLB_PROBE_MARK(v4_slots[1]), in, n, out, &olen, &m), TC_ACT_OK);
	assert_int_equal(out[14 + 9], IPPROTO_IPIP);
	assert_memory_equal(out + 14 + 12, encap_src4 + 12, 4);
	assert_int_equal(fx_csum(out + 14, 20), 0); /* outer header checksum valid */
}

/* Unmarked frames, and marks without the magic, pass untouched and uncounted. */
static void test_unmarked_pass(void **state)
{
	static const __u32 marks[] = { 0, 0x12340001, 0x63670001, 0x00000001,
				       0x68630001 /* the magic's bytes swapped */ };
	__u64 want[CHLB_R_MAX] = { 0 };
	__u8 in[256], out[2048];
	__u32 olen, m;
	int n;

	(void)state;
	stats_mark();
	for (int f = 0; f < 2; f++) {
		n = probe_syn(in, f ? CHLB_AF_INET6 : CHLB_AF_INET, f ? "2001:db8::2" : "10.0.0.2",
			      40002);
		for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
			assert_int_equal(probe_run(marks[i], in, n, out, &olen, &m), TC_ACT_OK);
			assert_int_equal(olen, n);
			assert_memory_equal(out, in, n);
			assert_int_equal(m, marks[i]);
		}
	}
	stats_expect(want);
}

/* The verdict on a SYN to dst:80 from port sport marked with mark; the frame into out. */
static __u32 marked_syn(int family, const char *dst, __u16 sport, __u32 mark, __u8 out[2048])
{
	__u8 in[256];
	__u32 olen, m;
	int n = probe_syn(in, family, dst, sport);

	return probe_run(mark, in, n, out, &olen, &m);
}

/* Since stats_mark(), reason r moved by k and no other reason moved. */
static void stats_expect_one(int r, __u64 k)
{
	__u64 want[CHLB_R_MAX] = { 0 };

	want[r] = k;
	stats_expect(want);
}

/* A slot that is not LIVE (dead, empty, beyond the array): dropped, counted. */
static void test_bad_slot_dropped(void **state)
{
	static const __u32 slots[] = { SLOT_DEAD, SLOT_EMPTY, CHLB_MAX_BACKENDS, 0xffff };
	const size_t nslots = sizeof(slots) / sizeof(slots[0]);
	__u8 out[2048];

	(void)state;
	stats_mark();
	for (size_t i = 0; i < nslots; i++)
		assert_int_equal(
		    marked_syn(CHLB_AF_INET, "10.0.0.1", 40003, CHLB_PROBE_MARK(slots[i]), out),
		    TC_ACT_SHOT);
	stats_expect_one(CHLB_R_PROBE_BAD_SLOT, nslots);
}

/* A marked frame to no VIP (or another port) must not leave towards it: dropped, counted. */
static void test_not_vip_dropped(void **state)
{
	__u8 out[2048];

	(void)state;
	stats_mark();
	assert_int_equal(
	    marked_syn(CHLB_AF_INET, "10.0.0.99", 40004, CHLB_PROBE_MARK(v4_slots[0]), out),
	    TC_ACT_SHOT);
	assert_int_equal(
	    marked_syn(CHLB_AF_INET6, "2001:db8::99", 40004, CHLB_PROBE_MARK(v6_slots[0]), out),
	    TC_ACT_SHOT);
	stats_expect_one(CHLB_R_PROBE_DROPPED, 2);
}

/* A backend on another interface than the probe's: redirected there. */
static void test_other_interface_redirected(void **state)
{
	__u8 out[2048];

	(void)state;
	stats_mark();
	assert_int_equal(
	    marked_syn(CHLB_AF_INET, "10.0.0.1", 40005, CHLB_PROBE_MARK(SLOT_OTHER_IF), out),
	    TC_ACT_REDIRECT);
	assert_int_equal(slot_of(out, false), SLOT_OTHER_IF);
	stats_expect_one(CHLB_R_PROBE_STEERED, 1);
}

static int route_if(const char *vip, __u32 mark, char *err, size_t errlen)
{
	struct chlb_addr a;
	int ifindex = -1, rc;

	assert_int_equal(chlb_parse_addr(vip, &a), 0);
	err[0] = '\0';
	rc = chlb_nh_probe_route(&a, mark, &ifindex, err, errlen);
	return rc ? rc : ifindex;
}

/* The interface the kernel's route for a marked probe leaves by. */
static void test_probe_route(void **state)
{
	int pr0, pr1;
	char err[256];

	(void)state;
	assert_int_equal(system("ip link add pr0 type veth peer name pr1 && "
				"ip link set pr0 up && ip link set pr1 up && "
				"ip addr add 192.0.2.1/24 dev pr0 && "
				"ip addr add 198.18.0.1/24 dev pr1 && "
				"ip -6 addr add 2001:db8:f::1/64 dev pr0 nodad && "
				"ip addr add 10.9.9.9/32 dev lo"),
			 0);
	pr0 = (int)if_nametoindex("pr0");
	pr1 = (int)if_nametoindex("pr1");
	assert_true(pr0 > 0 && pr1 > 0);

	/* no route at all (the namespace has no default route) */
	assert_int_equal(route_if("10.0.0.1", CHLB_PROBE_MARK(1), err, sizeof(err)), -ENETUNREACH);
	assert_non_null(strstr(err, "10.0.0.1"));
	assert_int_equal(system("ip route add 10.0.0.1/32 via 192.0.2.2 && "
				"ip -6 route add 2001:db8::1/128 via 2001:db8:f::2 && "
				"ip route add blackhole 10.0.0.7/32"),
			 0);
	assert_int_equal(route_if("10.0.0.1", CHLB_PROBE_MARK(1), err, sizeof(err)), pr0);
	assert_int_equal(route_if("2001:db8::1", CHLB_PROBE_MARK(1), err, sizeof(err)), pr0);
	/* policy routing on the probe mark: the marked probe's route, not the plain one */
	assert_int_equal(system("ip rule add fwmark 0x63680000/0xffff0000 table 100 && "
				"ip route add 10.0.0.1/32 via 198.18.0.2 table 100"),
			 0);
	assert_int_equal(route_if("10.0.0.1", CHLB_PROBE_MARK(1), err, sizeof(err)), pr1);
	assert_int_equal(route_if("10.0.0.1", 0, err, sizeof(err)), pr0);
	/* a blackhole, and a VIP local to this host: a probe could not reach a backend */
	assert_int_equal(route_if("10.0.0.7", CHLB_PROBE_MARK(1), err, sizeof(err)), -ENETUNREACH);
	assert_int_equal(route_if("10.9.9.9", CHLB_PROBE_MARK(1), err, sizeof(err)), -ENETUNREACH);
	assert_non_null(strstr(err, "local address"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_l2dsr),
		cmocka_unit_test(test_ipip),
		cmocka_unit_test(test_encap_src),
		cmocka_unit_test(test_unmarked_pass),
		cmocka_unit_test(test_bad_slot_dropped),
		cmocka_unit_test(test_not_vip_dropped),
		cmocka_unit_test(test_other_interface_redirected),
		cmocka_unit_test(test_probe_route),
	};

	return cmocka_run_group_tests_name("probe_steer", tests, setup, teardown);
}
