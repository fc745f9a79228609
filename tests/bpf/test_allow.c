// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Source allow-lists (`allow`, user/lib/dp/dp_allow.c, the allow trie):
 * through the real program, XDP and TC, IPv4 and IPv6: a listed source is
 * forwarded, another is dropped as drop_source and counted in its
 * service's drop_source, before any entry is written; a service without
 * the flag ignores the trie (another service's list does not leak into
 * it); a list change adds before it prunes; deleting a service's list
 * leaves the other services' entries.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "dp_fixture.h"

static struct chlb_dp *dp;
static struct chlb_table t4, t6;

#define SVC4 1 /* 10.0.0.1:80 tcp, allow 198.51.100.0/24,203.0.113.7 */
#define SVC6 2 /* [2001:db8::1]:80 tcp, allow 2001:db8:c::/48 */
#define SVCX 3 /* 10.0.0.3:80 tcp, no list (id 3 has stray entries: ignored) */

static struct chlb_allow_pfx pfx(const char *s, int plen)
{
	struct chlb_allow_pfx p = { .plen = (__u8)plen };

	inet_pton(strchr(s, ':') ? AF_INET6 : AF_INET, s, p.addr);
	return p;
}

static void set_flag(int family, const char *vip, bool on)
{
	struct chlb_vip_key key;
	struct chlb_service svc;
	__u8 a[16];

	inet_pton(family == CHLB_AF_INET ? AF_INET : AF_INET6, vip, a);
	chlb_dp_vip_key(&key, family, a, 80, IPPROTO_TCP);
	assert_int_equal(chlb_dp_get_service(dp, &key, &svc), 0);
	svc.flags = on ? CHLB_SVC_F_ALLOW : 0;
	assert_int_equal(chlb_dp_set_service(dp, &key, &svc), 0);
}

static int setup(void **state)
{
	struct chlb_dp_opts o = { .conn_max = 4096 };
	struct chlb_backend be;
	struct chlb_allow_pfx l4[2], l6[1], lx[1];
	__u32 s4 = 1, s6 = 2;
	char err[256];

	if (fx_netns() || chlb_dp_open(&o, &dp, err, sizeof(err)))
		return -1;
	fx_backend(&be, s4, CHLB_AF_INET, 1);
	chlb_dp_set_backend(dp, s4, &be);
	fx_backend(&be, s6, CHLB_AF_INET6, 1);
	chlb_dp_set_backend(dp, s6, &be);
	if (fx_table(dp, SVC4 * CHLB_SLOTS_PER_SERVICE, CHLB_ALGO_MAGLEV, &s4, 1, CHLB_AF_INET,
		     &t4) ||
	    fx_table(dp, SVC6 * CHLB_SLOTS_PER_SERVICE, CHLB_ALGO_MAGLEV, &s6, 1, CHLB_AF_INET6,
		     &t6))
		return -1;
	fx_service(dp, CHLB_AF_INET, "10.0.0.1", 80, IPPROTO_TCP, SVC4, CHLB_FWD_IPIP, 0,
		   SVC4 * CHLB_SLOTS_PER_SERVICE);
	fx_service(dp, CHLB_AF_INET6, "2001:db8::1", 80, IPPROTO_TCP, SVC6, CHLB_FWD_IPIP, 0,
		   SVC6 * CHLB_SLOTS_PER_SERVICE);
	fx_service(dp, CHLB_AF_INET, "10.0.0.3", 80, IPPROTO_TCP, SVCX, CHLB_FWD_IPIP, 0,
		   SVC4 * CHLB_SLOTS_PER_SERVICE);
	l4[0] = pfx("198.51.100.0", 24);
	l4[1] = pfx("203.0.113.7", 32);
	l6[0] = pfx("2001:db8:c::", 48);
	lx[0] = pfx("192.0.2.0", 24);
	if (chlb_dp_set_allow(dp, SVC4, l4, 2, true) || chlb_dp_set_allow(dp, SVC6, l6, 1, true) ||
	    chlb_dp_set_allow(dp, SVCX, lx, 1, true))
		return -1;
	set_flag(CHLB_AF_INET, "10.0.0.1", true);
	set_flag(CHLB_AF_INET6, "2001:db8::1", true);
	return 0;
}

static int teardown(void **state)
{
	chlb_table_free(&t4);
	chlb_table_free(&t6);
	chlb_dp_close(dp);
	return 0;
}

/* A SYN then an ACK from src to vip:80 through prog: the verdicts' reason counters. */
static void send2(int prog, int family, const char *src, const char *vip, __u32 *verdict,
		  struct chlb_global_stats *d)
{
	struct fx_pkt s = { .family = family,
			    .proto = IPPROTO_TCP,
			    .src = src,
			    .dst = vip,
			    .sport = 5555,
			    .dport = 80,
			    .flags = FX_SYN };
	struct chlb_global_stats g0, g1;
	__u8 in[256], out[512];
	__u32 len;

	assert_int_equal(chlb_dp_read_global(dp, &g0), 0);
	for (int k = 0; k < 2; k++) {
		int n;

		s.flags = k ? FX_ACK : FX_SYN;
		n = fx_build(in, &s);
		len = sizeof(out);
		assert_int_equal(chlb_dp_test_run(dp, prog, in, n, out, &len, &verdict[k]), 0);
	}
	assert_int_equal(chlb_dp_read_global(dp, &g1), 0);
	for (int r = 0; r < CHLB_R_MAX; r++)
		d->reason[r] = g1.reason[r] - g0.reason[r];
}

static __u64 drops_of(__u32 id)
{
	struct chlb_counters c;

	assert_int_equal(chlb_dp_read_service_stats(dp, id, &c), 0);
	return c.drop_source;
}

/* from src to vip, on both entry points: forwarded (allowed) or dropped as drop_source */
static void expect(int family, const char *src, const char *vip, __u32 id, bool allowed)
{
	for (int prog = 0; prog < 2; prog++) {
		struct chlb_global_stats d;
		__u64 before = drops_of(id);
		__u32 v[2];
		struct chlb_flow f;
		struct chlb_conn c;
		struct fx_pkt s = { .family = family,
				    .proto = IPPROTO_TCP,
				    .src = src,
				    .dst = vip,
				    .sport = 5555,
				    .dport = 80 };

		fx_flow(&f, &s);
		chlb_dp_conn_delete(dp, &f);
		send2(prog, family, src, vip, v, &d);
		if (allowed) {
			assert_int_equal(d.reason[CHLB_R_FORWARDED], 2);
			assert_int_equal(d.reason[CHLB_R_DROP_SOURCE], 0);
			assert_int_equal(drops_of(id), before);
		} else {
			assert_int_equal(v[0],
					 prog == CHLB_PROG_XDP ? XDP_DROP : 2 /* TC_ACT_SHOT */);
			assert_int_equal(d.reason[CHLB_R_DROP_SOURCE], 2);
			assert_int_equal(d.reason[CHLB_R_FORWARDED], 0);
			assert_int_equal(d.reason[CHLB_R_CT_MISS] + d.reason[CHLB_R_CT_INSERT], 0);
			assert_int_equal(drops_of(id), before + 2);
			/* no entry work: the ACK wrote none */
			assert_int_equal(chlb_dp_conn_lookup(dp, &f, &c), -ENOENT);
		}
	}
}

static void test_ipv4(void **state)
{
	expect(CHLB_AF_INET, "198.51.100.1", "10.0.0.1", SVC4, true);
	expect(CHLB_AF_INET, "198.51.100.255", "10.0.0.1", SVC4, true);
	expect(CHLB_AF_INET, "203.0.113.7", "10.0.0.1", SVC4, true);
	expect(CHLB_AF_INET, "203.0.113.8", "10.0.0.1", SVC4, false);
	expect(CHLB_AF_INET, "198.51.101.1", "10.0.0.1", SVC4, false);
	/* another service's list does not allow: 192.0.2.0/24 is SVCX's */
	expect(CHLB_AF_INET, "192.0.2.1", "10.0.0.1", SVC4, false);
}

static void test_ipv6(void **state)
{
	expect(CHLB_AF_INET6, "2001:db8:c::1", "2001:db8::1", SVC6, true);
	expect(CHLB_AF_INET6, "2001:db8:c:ffff::1", "2001:db8::1", SVC6, true);
	expect(CHLB_AF_INET6, "2001:db8:d::1", "2001:db8::1", SVC6, false);
	/* IPv4 bytes of a listed prefix, as an IPv6 source: still not listed */
	expect(CHLB_AF_INET6, "c633:6401::", "2001:db8::1", SVC6, false);
}

/* Without the flag the trie is not consulted: SVCX has entries but no flag. */
static void test_no_flag_allows_all(void **state)
{
	expect(CHLB_AF_INET, "198.51.100.1", "10.0.0.3", SVCX, true);
	expect(CHLB_AF_INET, "8.8.8.8", "10.0.0.3", SVCX, true);
}

/* A live change: add before prune keeps the sources in both lists; prune removes the rest. */
static void test_change(void **state)
{
	struct chlb_allow_pfx next[2] = { pfx("203.0.113.7", 32), pfx("100.64.0.0", 10) };

	assert_int_equal(chlb_dp_set_allow(dp, SVC4, next, 2, false), 0);
	expect(CHLB_AF_INET, "203.0.113.7", "10.0.0.1", SVC4, true);
	expect(CHLB_AF_INET, "100.64.1.1", "10.0.0.1", SVC4, true);
	expect(CHLB_AF_INET, "198.51.100.1", "10.0.0.1", SVC4, true); /* not pruned yet */
	assert_int_equal(chlb_dp_set_allow(dp, SVC4, next, 2, true), 0);
	expect(CHLB_AF_INET, "198.51.100.1", "10.0.0.1", SVC4, false);
	expect(CHLB_AF_INET, "203.0.113.7", "10.0.0.1", SVC4, true);
	/* the other services' entries untouched */
	expect(CHLB_AF_INET6, "2001:db8:c::1", "2001:db8::1", SVC6, true);
	/* `allow any`: the flag off first, then every entry of the id */
	set_flag(CHLB_AF_INET, "10.0.0.1", false);
	assert_int_equal(chlb_dp_set_allow(dp, SVC4, NULL, 0, true), 0);
	expect(CHLB_AF_INET, "8.8.8.8", "10.0.0.1", SVC4, true);
	expect(CHLB_AF_INET6, "2001:db8:d::1", "2001:db8::1", SVC6, false);
	assert_int_equal(chlb_dp_set_allow(dp, SVC4, next, CHLB_ALLOW_MAX + 1, false), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_no_flag_allows_all),
		cmocka_unit_test(test_change),
	};

	return cmocka_run_group_tests_name("allow", tests, setup, teardown);
}
