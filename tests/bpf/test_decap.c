// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpf/chlb_decap.bpf.c through BPF_PROG_TEST_RUN: every encapsulation chlb
 * produces comes out as the exact inner packet; everything else leaves the
 * program byte for byte as it came in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "chlb_decap.skel.h"

#define PAYLOAD "GET / HTTP/1.0\r\n\r\n"

struct pkt {
	__u8 b[512];
	__u32 len;
};

static struct chlb_decap_bpf *skel;

static void put(struct pkt *p, const void *d, __u32 n)
{
	memcpy(p->b + p->len, d, n);
	p->len += n;
}

static void eth(struct pkt *p, __u16 type)
{
	struct ethhdr e = { .h_dest = { 2, 0, 0, 0, 0, 2 }, .h_source = { 2, 0, 0, 0, 0, 1 } };

	e.h_proto = htons(type);
	put(p, &e, sizeof(e));
}

/* IPv4 header (+ @optlen bytes of NOP options) for @plen bytes of payload. */
static void ip4(struct pkt *p, __u8 proto, const char *src, const char *dst, __u32 plen,
		__u32 optlen, __u16 frag)
{
	struct iphdr h = { .version = 4, .ihl = (sizeof(h) + optlen) / 4, .ttl = 64 };
	__u8 nops[40];

	h.protocol = proto;
	h.tot_len = htons(sizeof(h) + optlen + plen);
	h.frag_off = htons(frag);
	inet_pton(AF_INET, src, &h.saddr);
	inet_pton(AF_INET, dst, &h.daddr);
	put(p, &h, sizeof(h));
	memset(nops, 1, sizeof(nops));
	put(p, nops, optlen);
}

static void ip6(struct pkt *p, __u8 nexthdr, const char *src, const char *dst, __u32 plen)
{
	struct ipv6hdr h = { .version = 6, .hop_limit = 64 };

	h.nexthdr = nexthdr;
	h.payload_len = htons(plen);
	inet_pton(AF_INET6, src, &h.saddr);
	inet_pton(AF_INET6, dst, &h.daddr);
	put(p, &h, sizeof(h));
}

static void tcp(struct pkt *p)
{
	struct tcphdr t = {
		.source = htons(40000), .dest = htons(80), .doff = 5, .psh = 1, .ack = 1
	};

	t.seq = htonl(12345);
	t.check = htons(0xbeef); /* not verified by decap: must survive unchanged */
	put(p, &t, sizeof(t));
	put(p, PAYLOAD, sizeof(PAYLOAD) - 1);
}

#define TCPLEN (sizeof(struct tcphdr) + sizeof(PAYLOAD) - 1)

/* The inner packets, starting at their IP header. */
static void inner4(struct pkt *p)
{
	ip4(p, IPPROTO_TCP, "192.0.2.7", "10.0.0.10", TCPLEN, 0, 0x4000);
	tcp(p);
}

static void inner6(struct pkt *p)
{
	ip6(p, IPPROTO_TCP, "2001:db8::7", "fd00::10", TCPLEN);
	tcp(p);
}

static int run(const struct pkt *in, struct pkt *out)
{
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in->b, .data_size_in = in->len,
			    .data_out = out->b, .data_size_out = sizeof(out->b), .repeat = 1);
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.chlb_decap), &opts);
	if (err)
		fprintf(stderr, "test run of a %u-byte packet failed: %d\n", in->len, err);
	assert_int_equal(err, 0);
	out->len = opts.data_size_out;
	return opts.retval;
}

/* Encapsulated @in must come out as Ethernet(@type) + @inner, verdict OK. */
static void expect_decap(const struct pkt *in, __u16 type, const struct pkt *inner)
{
	struct pkt want = { 0 }, out = { 0 };

	eth(&want, type);
	put(&want, inner->b, inner->len);
	assert_int_equal(run(in, &out), TC_ACT_OK);
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.b, want.b, want.len);
}

static void expect_untouched(const struct pkt *in)
{
	struct pkt out = { 0 };

	assert_int_equal(run(in, &out), TC_ACT_OK);
	assert_int_equal(out.len, in->len);
	assert_memory_equal(out.b, in->b, in->len);
}

static void test_ipip(void **state)
{
	struct pkt in = { 0 }, inner = { 0 };

	inner4(&inner);
	eth(&in, ETH_P_IP);
	ip4(&in, IPPROTO_IPIP, "10.1.0.1", "10.1.0.2", inner.len, 0, 0);
	put(&in, inner.b, inner.len);
	expect_decap(&in, ETH_P_IP, &inner);
}

static void test_ipip_outer_options(void **state)
{
	struct pkt in = { 0 }, inner = { 0 };

	inner4(&inner);
	eth(&in, ETH_P_IP);
	ip4(&in, IPPROTO_IPIP, "10.1.0.1", "10.1.0.2", inner.len, 8, 0);
	put(&in, inner.b, inner.len);
	expect_decap(&in, ETH_P_IP, &inner);
}

static void test_ip6ip6(void **state)
{
	struct pkt in = { 0 }, inner = { 0 };

	inner6(&inner);
	eth(&in, ETH_P_IPV6);
	ip6(&in, IPPROTO_IPV6, "fd00:1::1", "fd00:1::2", inner.len);
	put(&in, inner.b, inner.len);
	expect_decap(&in, ETH_P_IPV6, &inner);
}

static void test_4in6(void **state)
{
	struct pkt in = { 0 }, inner = { 0 };

	inner4(&inner);
	eth(&in, ETH_P_IPV6);
	ip6(&in, IPPROTO_IPIP, "fd00:1::1", "fd00:1::2", inner.len);
	put(&in, inner.b, inner.len);
	expect_decap(&in, ETH_P_IP, &inner);
}

static void test_6in4(void **state)
{
	struct pkt in = { 0 }, inner = { 0 };

	inner6(&inner);
	eth(&in, ETH_P_IP);
	ip4(&in, IPPROTO_IPV6, "10.1.0.1", "10.1.0.2", inner.len, 0, 0);
	put(&in, inner.b, inner.len);
	expect_decap(&in, ETH_P_IPV6, &inner);
}

static void test_plain_traffic_untouched(void **state)
{
	struct pkt v4 = { 0 }, v6 = { 0 }, arp = { 0 };
	__u8 arpbody[28] = { 0, 1, 8, 0, 6, 4, 0, 1 };

	eth(&v4, ETH_P_IP);
	inner4(&v4);
	expect_untouched(&v4);
	eth(&v6, ETH_P_IPV6);
	inner6(&v6);
	expect_untouched(&v6);
	eth(&arp, ETH_P_ARP);
	put(&arp, arpbody, sizeof(arpbody));
	expect_untouched(&arp);
}

static void test_truncated_passed(void **state)
{
	struct pkt p = { 0 }, inner = { 0 };

	/* Tunnel header with no room for the inner header. */
	eth(&p, ETH_P_IP);
	ip4(&p, IPPROTO_IPIP, "10.1.0.1", "10.1.0.2", 20, 0, 0);
	put(&p, "\x45\0\0\x14\0\0\0\0", 8);
	expect_untouched(&p);

	/* IPv6 tunnel header whose inner header is cut short. (A packet whose
	 * outer IP header itself is cut short is refused by the test-run
	 * syscall, -EINVAL, before the program runs; the program's bounds
	 * checks cover it, and the verifier insists on them.) */
	memset(&p, 0, sizeof(p));
	eth(&p, ETH_P_IPV6);
	ip6(&p, IPPROTO_IPIP, "fd00:1::1", "fd00:1::2", 12);
	put(&p, "\x45\0\0\x14\0\0\0\0\0\0\0\0", 12);
	expect_untouched(&p);

	/* Tunnel header claiming options that are not there. */
	memset(&p, 0, sizeof(p));
	eth(&p, ETH_P_IP);
	ip4(&p, IPPROTO_IPIP, "10.1.0.1", "10.1.0.2", 0, 0, 0);
	p.b[sizeof(struct ethhdr)] = 0x4f; /* ihl 15: 60 bytes */
	put(&p, "\x45\0\0\x14\0\0\0\0\0\0\0\0", 12);
	expect_untouched(&p);

	/* Inner version disagrees with the outer protocol number. */
	memset(&p, 0, sizeof(p));
	inner6(&inner);
	eth(&p, ETH_P_IP);
	ip4(&p, IPPROTO_IPIP, "10.1.0.1", "10.1.0.2", inner.len, 0, 0);
	put(&p, inner.b, inner.len);
	expect_untouched(&p);
}

static void test_outer_fragment_passed(void **state)
{
	struct pkt p = { 0 }, inner = { 0 };

	inner4(&inner);
	eth(&p, ETH_P_IP);
	ip4(&p, IPPROTO_IPIP, "10.1.0.1", "10.1.0.2", inner.len, 0, 0x2000 /* MF */);
	put(&p, inner.b, inner.len);
	expect_untouched(&p);
}

static int setup(void **state)
{
	skel = chlb_decap_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "couldn't load chlb_decap (root and BPF needed)\n");
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	chlb_decap_bpf__destroy(skel);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipip),
		cmocka_unit_test(test_ipip_outer_options),
		cmocka_unit_test(test_ip6ip6),
		cmocka_unit_test(test_4in6),
		cmocka_unit_test(test_6in4),
		cmocka_unit_test(test_plain_traffic_untouched),
		cmocka_unit_test(test_truncated_passed),
		cmocka_unit_test(test_outer_fragment_passed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
