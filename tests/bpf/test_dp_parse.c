// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The parse stage (bpf/chlb_parse.h): Ethernet, VLAN, IPv4 options, IPv6
 * extension headers, fragments, what is not a VIP, the all-port VIP,
 * truncated and malformed headers; the counters reset last.
 * Runs in a private network namespace; the harness is dp_suite.h.
 */
#include "dp_suite.h"

static void test_matrix(void **state)
{
	static const __u32 algos[] = { CHLB_ALGO_RING, CHLB_ALGO_JUMP, CHLB_ALGO_MAGLEV };
	static const __u8 fwds[] = { CHLB_FWD_L2DSR, CHLB_FWD_IPIP };
	static const __u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	__u32 a, f, fam, p, id = 20;
	__u8 in[256];

	for (a = 0; a < 3; a++)
		for (f = 0; f < 2; f++)
			for (fam = 0; fam < 2; fam++)
				for (p = 0; p < 2; p++, id++) {
					int v4 = fam == 0, n, s1, s2;
					char vip[64];
					struct fx_pkt s = {
						.family = v4 ? CHLB_AF_INET : CHLB_AF_INET6,
						.proto = protos[p],
						.src = v4 ? "198.51.100.7" : "2001:db8:c::7",
						.dst = vip,
						.sport = 40000 + id,
						.dport = 8080,
						.flags = FX_SYN,
						.payload = 10,
						.tos = 0x2e,
					};
					enum mode m = fwds[f] == CHLB_FWD_L2DSR ? M_L2
						      : v4			? M_IP4
										: M_IP6;

					snprintf(vip, sizeof(vip),
						 v4 ? "10.0.1.%u" : "2001:db8:1::%u", id);
					add_service(id, s.family, vip, 8080, s.proto, algos[a],
						    fwds[f], 0, s.family, v4 ? V4_FIRST : V6_FIRST,
						    NBE);
					stats_mark();
					n = fx_build(in, &s);
					s1 = expect_fwd(in, n, m);
					assert_int_equal(s1, expected_slot(id, &s, 0));
					s.flags = FX_ACK;
					n = fx_build(in, &s);
					s2 = expect_fwd(in, n, m);
					assert_int_equal(s1, s2);
					stats_delta(CHLB_R_FORWARDED, 4);
					/* TCP: the handshake ACK writes the entry (XDP; TC then hits
					 * it); UDP: one table, nothing to disagree about: no state */
					stats_delta(CHLB_R_CT_INSERT, protos[p] == IPPROTO_TCP);
				}
}

static void test_vlan_single_double(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.9",
			    .dst = "10.0.0.1",
			    .sport = 1234,
			    .dport = 80,
			    .flags = FX_SYN,
			    .payload = 5 };
	__u8 in[256];
	int n, want = expected_slot(SVC_TCP4, &s, 0);

	s.vlans = 1;
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP4), want);
	s.vlans = 2;
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP4), want);
	s.family = CHLB_AF_INET6;
	s.src = "2001:db8:c::9";
	s.dst = "2001:db8::1";
	s.dport = 443;
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_TCP6, &s, 0));
	/* three tags: not parsed */
	s.vlans = 3;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PARSE_VLAN);
}

static void test_ipv4_options(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.10",
			    .dst = "10.0.0.1",
			    .sport = 999,
			    .dport = 80,
			    .flags = FX_ACK,
			    .optlen = 12,
			    .payload = 3,
			    .tos = 0xb8 };
	__u8 in[256];
	int n = fx_build(in, &s);

	assert_int_equal(expect_fwd(in, n, M_IP4), expected_slot(SVC_TCP4, &s, 0));
	s.optlen = 40; /* the maximum: ihl 15 */
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP4), expected_slot(SVC_TCP4, &s, 0));
	/* ihl < 5 */
	n = fx_build(in, &s);
	in[14] = 0x44;
	expect_pass(in, n, CHLB_R_PARSE_IP4);
}

static void test_ipv6_ext_headers(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET6,
			    .proto = IPPROTO_TCP,
			    .src = "2001:db8:c::10",
			    .dst = "2001:db8::1",
			    .sport = 999,
			    .dport = 443,
			    .flags = FX_SYN,
			    .exthdrs = 2,
			    .payload = 8 };
	__u8 in[512];
	int n = fx_build(in, &s);

	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_TCP6, &s, 0));
	s.exthdrs = 4; /* as many as we walk */
	n = fx_build(in, &s);
	assert_int_equal(expect_fwd(in, n, M_IP6), expected_slot(SVC_TCP6, &s, 0));
	s.exthdrs = 5; /* one too many */
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PARSE_IP6);
}

static void test_fragments(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.11",
			    .dst = "10.0.0.1",
			    .sport = 5555,
			    .dport = 80,
			    .flags = FX_ACK,
			    .frag = 1,
			    .payload = 16 };
	__u8 in[256];
	int n, s1, s2, s3;

	/* 5-tuple service: every fragment goes to the kernel */
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_FRAGMENT);
	s.frag = 2;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_FRAGMENT);
	s.family = CHLB_AF_INET6;
	s.src = "2001:db8:c::11";
	s.dst = "2001:db8::1";
	s.dport = 443;
	s.frag = 1;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_FRAGMENT);

	/* source-hash wildcard service: fragments of a flow stay together */
	s = (struct fx_pkt){ .family = CHLB_AF_INET,
			     .proto = IPPROTO_UDP,
			     .src = "198.51.100.12",
			     .dst = "10.0.0.2",
			     .sport = 5353,
			     .dport = 53,
			     .frag = 1,
			     .payload = 32 };
	n = fx_build(in, &s);
	s1 = expect_fwd(in, n, M_IP4);
	s.frag = 2;
	n = fx_build(in, &s);
	s2 = expect_fwd(in, n, M_IP4);
	s.frag = 0;
	n = fx_build(in, &s);
	s3 = expect_fwd(in, n, M_IP4);
	assert_int_equal(s1, s2);
	assert_int_equal(s1, s3);
	assert_int_equal(s1, expected_slot(SVC_UDP4WL, &s, CHLB_HASH_SRC));

	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_UDP,
			     .src = "2001:db8:c::12",
			     .dst = "2001:db8::2",
			     .sport = 5353,
			     .dport = 53,
			     .frag = 1,
			     .exthdrs = 1,
			     .payload = 32 };
	n = fx_build(in, &s);
	s1 = expect_fwd(in, n, M_IP6);
	s.frag = 2;
	n = fx_build(in, &s);
	s2 = expect_fwd(in, n, M_IP6);
	assert_int_equal(s1, s2);
	assert_int_equal(s1, expected_slot(SVC_WILD6, &s, CHLB_HASH_SRC));
}

static void test_not_vip(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.14",
			    .dst = "10.9.9.9",
			    .sport = 1,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[256];
	int n = fx_build(in, &s);

	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	s.dst = "10.0.0.1"; /* VIP, other port, no wildcard */
	s.dport = 81;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	s.proto = IPPROTO_UDP; /* VIP port, other protocol */
	s.dport = 80;
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	s.family = CHLB_AF_INET6;
	s.src = "2001:db8:c::14";
	s.dst = "2001:db8::99";
	n = fx_build(in, &s);
	expect_pass(in, n, CHLB_R_PASS_NOT_VIP);
	/* ARP */
	n = fx_l2(in, 0, ETH_P_ARP);
	memset(in + n, 0, 28);
	expect_pass(in, n + 28, CHLB_R_PASS_NOT_IP);
}

static void test_port0_wildcard(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.15",
			    .dst = "10.0.0.2",
			    .sport = 4444,
			    .flags = FX_SYN };
	__u8 in[256];
	int n, port, first = -1;

	for (port = 1; port < 65536; port += 8191) {
		s.dport = port;
		n = fx_build(in, &s);
		int got = expect_fwd(in, n, M_IP4);

		assert_int_equal(got, expected_slot(SVC_WILD4, &s, CHLB_HASH_SRC));
		if (first < 0)
			first = got;
		assert_int_equal(got, first); /* source hash: every port, one backend */
	}
}

/* Truncate a frame at every length below its L4 header's end: always passed. */
static void truncate_all(const __u8 *in, int l4end)
{
	__u8 out[2048];
	int len, prog;

	stats_mark();
	for (len = 14; len < l4end; len++)
		for (prog = 0; prog < 2; prog++) {
			__u32 olen = run(prog, in, len, out, W_PASS);

			assert_int_equal(olen, len);
			assert_memory_equal(out, in, len);
		}
	stats_delta(CHLB_R_FORWARDED, 0);
}

static void test_truncation(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.16",
			    .dst = "10.0.0.1",
			    .sport = 1,
			    .dport = 80,
			    .flags = FX_SYN,
			    .vlans = 2,
			    .optlen = 8 };
	struct chlb_global_stats g;
	__u8 in[256];
	int n = fx_build(in, &s);

	truncate_all(in, n); /* eth, 2 tags, IPv4 + options, TCP */
	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	assert_true(g.reason[CHLB_R_PARSE_ETH] - g0.reason[CHLB_R_PARSE_ETH] > 0);
	/* cut inside TCP: the IPv4 total length no longer fits the frame */
	assert_true(g.reason[CHLB_R_PARSE_IP4] - g0.reason[CHLB_R_PARSE_IP4] > 0);
	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_UDP,
			     .src = "2001:db8:c::16",
			     .dst = "2001:db8::2",
			     .sport = 1,
			     .dport = 53,
			     .exthdrs = 2,
			     .vlans = 1 };
	n = fx_build(in, &s);
	truncate_all(in, n); /* eth, tag, IPv6, 2 ext headers, UDP */
	assert_int_equal(chlb_dp_read_global(dp, &g), 0);
	assert_true(g.reason[CHLB_R_PARSE_IP6] - g0.reason[CHLB_R_PARSE_IP6] > 0);
	/* a full frame of either shape is forwarded */
	assert_true(expect_fwd(in, n, M_IP6) >= V6_FIRST);
}

/*
 * Headers that lie: a TCP data offset under 5 words, SYN with RST or FIN,
 * an IP length beyond the frame, and an ICMP error addressed to the LB
 * itself rather than to the VIP it quotes. Each is counted by its reason
 * and passed (or dropped) untouched; none reaches a backend or writes state.
 */
static void test_malformed_headers(void **state)
{
	struct fx_pkt s = { .family = CHLB_AF_INET,
			    .proto = IPPROTO_TCP,
			    .src = "198.51.100.19",
			    .dst = "10.0.0.1",
			    .sport = 4000,
			    .dport = 80,
			    .flags = FX_SYN };
	__u8 in[512], out[512];
	int n, prog;

	n = fx_build(in, &s);
	in[14 + 20 + 12] = 4 << 4; /* data offset 4 words */
	expect_pass(in, n, CHLB_R_PARSE_L4);

	s.flags = FX_SYN | 0x04; /* SYN+RST */
	n = fx_build(in, &s);
	stats_mark();
	for (prog = 0; prog < 2; prog++)
		run(prog, in, n, out, W_DROP);
	stats_delta(CHLB_R_DROP_TCP_FLAGS, 2);
	s.flags = FX_SYN | 0x01; /* SYN+FIN */
	n = fx_build(in, &s);
	stats_mark();
	for (prog = 0; prog < 2; prog++)
		run(prog, in, n, out, W_DROP);
	stats_delta(CHLB_R_DROP_TCP_FLAGS, 2);

	s.flags = FX_ACK;
	n = fx_build(in, &s);
	in[14 + 2] = (__u8)((n - 14 + 1) >> 8); /* total length one byte beyond the frame */
	in[14 + 3] = (__u8)(n - 14 + 1);
	expect_pass(in, n, CHLB_R_PARSE_IP4);
	in[14 + 2] = 0;
	in[14 + 3] = 19; /* shorter than its own header */
	expect_pass(in, n, CHLB_R_PARSE_IP4);

	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::19",
			     .dst = "2001:db8::1",
			     .sport = 4000,
			     .dport = 443,
			     .flags = FX_ACK };
	n = fx_build(in, &s);
	in[14 + 4] = (__u8)((n - 14 - 40 + 1) >> 8); /* payload one byte beyond the frame */
	in[14 + 5] = (__u8)(n - 14 - 40 + 1);
	expect_pass(in, n, CHLB_R_PARSE_IP6);

	/* ICMP errors about a VIP flow, sent to the LB's own address */
	s = (struct fx_pkt){ .family = CHLB_AF_INET,
			     .proto = IPPROTO_TCP,
			     .src = "198.51.100.19",
			     .dst = "10.0.0.1",
			     .sport = 4001,
			     .dport = 80 };
	n = build_icmp_err(in, &s, 3, 4, 28);
	inet_pton(AF_INET, "192.0.2.1", in + 14 + 16);
	expect_pass(in, n, CHLB_R_PASS_ICMP_LOCAL);
	s = (struct fx_pkt){ .family = CHLB_AF_INET6,
			     .proto = IPPROTO_TCP,
			     .src = "2001:db8:c::19",
			     .dst = "2001:db8::1",
			     .sport = 4001,
			     .dport = 443 };
	n = build_icmp_err(in, &s, 2, 0, 48);
	inet_pton(AF_INET6, "2001:db8:ff::1", in + 14 + 24);
	expect_pass(in, n, CHLB_R_PASS_ICMP_LOCAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_vlan_single_double),
		cmocka_unit_test(test_ipv4_options),
		cmocka_unit_test(test_ipv6_ext_headers),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_not_vip),
		cmocka_unit_test(test_port0_wildcard),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_malformed_headers),
	};

	return dp_suite_run("dp_parse", tests, sizeof(tests) / sizeof(tests[0]));
}
