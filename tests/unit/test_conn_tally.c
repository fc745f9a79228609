// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * conn_tally.c: connection entries attributed to services (exact port,
 * else the port-0 wildcard; IPv6; no service) and backends (slot AND
 * generation; a slot per service and backend, so the same address in two
 * services is two backends), and classified live / ended / stale (removed
 * backend, reused slot, UDP idle, TCP idle only with a TCP timeout) / held
 * (a sync placeholder, no backend's; stale once the data plane stops
 * honouring it), with the counts adding up.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "engine/conn_tally.h"

#define NS   1000000000ull
#define WEB  "10.0.0.10:80/tcp"
#define WILD "10.0.0.10:*/tcp"
#define DNS  "10.0.0.20:53/udp"
#define V6   "[2001:db8::10]:443/tcp"

static int nop_be(void *ctx, __u32 slot, const struct chlb_backend *be)
{
	return 0;
}

static int nop_table(void *ctx, __u32 tslot, const __u32 *w, __u32 n)
{
	return 0;
}

static int nop_svc(void *ctx, const struct chlb_vip_key *k, const struct chlb_service *v)
{
	return 0;
}

static int nop_del(void *ctx, const struct chlb_vip_key *k)
{
	return 0;
}

static const struct chlb_dp_ops ops = { .set_backend = nop_be,
					.write_table = nop_table,
					.set_service = nop_svc,
					.del_service = nop_del };

static struct chlb_rt *rt;
static struct chlb_state st;

static void change(const char *text)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX * 2];

	assert_int_equal(chlb_state_copy(&next, &st), 0);
	if (chlb_state_exec_text(&next, text, "t", err, sizeof(err)) ||
	    chlb_rt_apply(rt, &st, &next, err, sizeof(err)))
		fail_msg("%s: %s", text, err);
	chlb_state_free(&st);
	st = next;
}

/* the backend slot of ADDR in service VIP */
static int slot(const char *vip, const char *addr)
{
	struct chlb_addr a;
	struct chlb_vip v;
	char err[CHLB_ERR_MAX];

	assert_int_equal(chlb_parse_vip(vip, &v, err, sizeof(err)), 0);
	assert_int_equal(chlb_parse_addr(addr, &a), 0);
	return chlb_rt_be_slot(rt, chlb_rt_svc_id(rt, &v), &a);
}

/* flow SRC:SPORT -> DST:DPORT/proto */
static struct chlb_flow flow(const char *src, int sport, const char *dst, int dport, __u8 proto)
{
	struct chlb_flow f = { .proto = proto };
	struct chlb_addr s, d;

	assert_int_equal(chlb_parse_addr(src, &s), 0);
	assert_int_equal(chlb_parse_addr(dst, &d), 0);
	memcpy(f.src, s.a, 16);
	memcpy(f.dst, d.a, 16);
	f.family = s.family;
	f.sport = htons((__u16)sport);
	f.dport = htons((__u16)dport);
	return f;
}

/* an entry naming the slot of BACKEND in service VIP, its current generation */
static struct chlb_conn conn(const char *vip, const char *backend, __u16 flags, __u64 last_ns)
{
	int s = slot(vip, backend);
	struct chlb_conn c = { .flags = flags, .last_ns = last_ns };

	assert_true(s >= 0);
	c.backend = (__u16)s;
	c.gen = rt->be[s].gen;
	return c;
}

static int setup(void **state)
{
	rt = chlb_rt_new(&ops, 60000, 10);
	chlb_state_init(&st);
	change("service add 10.0.0.10:80/tcp algo jump\n"
	       "backend add 10.0.0.10:80/tcp 10.1.0.2\n"
	       "backend add 10.0.0.10:80/tcp 10.1.0.3\n"
	       "service add 10.0.0.10:*/tcp algo jump\n"
	       "backend add 10.0.0.10:*/tcp 10.1.0.4\n"
	       "service add 10.0.0.20:53/udp algo jump\n"
	       "backend add 10.0.0.20:53/udp 10.1.0.2\n"
	       "service add [2001:db8::10]:443/tcp algo jump\n"
	       "backend add [2001:db8::10]:443/tcp 2001:db8::2\n");
	return rt ? 0 : -1;
}

static int teardown(void **state)
{
	chlb_rt_free(rt);
	chlb_state_free(&st);
	return 0;
}

static int svc_index(const char *vip)
{
	struct chlb_vip v;
	char err[CHLB_ERR_MAX];

	assert_int_equal(chlb_parse_vip(vip, &v, err, sizeof(err)), 0);
	for (__u32 i = 0; i < st.nsvc; i++)
		if (!chlb_vip_cmp(&st.svc[i].vip, &v))
			return (int)i;
	fail_msg("no service %s", vip);
	return -1;
}

static int be_index(int svc, const char *addr)
{
	struct chlb_addr a;

	chlb_parse_addr(addr, &a);
	for (__u32 j = 0; j < st.svc[svc].nbe; j++)
		if (!chlb_addr_cmp(&st.svc[svc].be[j].addr, &a))
			return (int)j;
	fail_msg("no backend %s", addr);
	return -1;
}

/* add one entry; check its state, service and backend */
static void expect(struct chlb_ct_tally *t, struct chlb_flow f, struct chlb_conn c,
		   enum chlb_conn_state state, const char *vip, const char *backend)
{
	int s, b, want_s = vip ? svc_index(vip) : -1;

	assert_int_equal(chlb_ct_tally_add(t, &f, &c, &s, &b), state);
	assert_int_equal(s, want_s);
	assert_int_equal(b, backend ? be_index(s, backend) : -1);
}

static void attributes_and_classifies(void **state)
{
	const __u64 now = 1000 * NS;
	struct chlb_ct_tally t;
	int web, wild, dns, v6, two, three;

	assert_int_equal(chlb_ct_tally_init(&t, &st, rt, now, 30 * NS, 0), 0);
	web = svc_index("10.0.0.10:80/tcp");
	wild = svc_index("10.0.0.10:*/tcp");
	dns = svc_index("10.0.0.20:53/udp");
	v6 = svc_index("[2001:db8::10]:443/tcp");
	two = be_index(web, "10.1.0.2");
	three = be_index(web, "10.1.0.3");

	expect(&t, flow("192.0.2.1", 1000, "10.0.0.10", 80, IPPROTO_TCP),
	       conn(WEB, "10.1.0.2", 0, 0), CHLB_CONN_LIVE, "10.0.0.10:80/tcp", "10.1.0.2");
	expect(&t, flow("192.0.2.1", 1001, "10.0.0.10", 80, IPPROTO_TCP),
	       conn(WEB, "10.1.0.2", CHLB_CONN_F_ENDED, 0), CHLB_CONN_ENDED, "10.0.0.10:80/tcp",
	       "10.1.0.2");
	expect(&t, flow("192.0.2.1", 1002, "10.0.0.10", 80, IPPROTO_TCP),
	       conn(WEB, "10.1.0.3", 0, 0), CHLB_CONN_LIVE, "10.0.0.10:80/tcp", "10.1.0.3");
	/* no exact service on port 8080: the port-0 wildcard */
	expect(&t, flow("192.0.2.1", 1003, "10.0.0.10", 8080, IPPROTO_TCP),
	       conn(WILD, "10.1.0.4", 0, 0), CHLB_CONN_LIVE, "10.0.0.10:*/tcp", "10.1.0.4");
	/*
	 * an entry written under the wildcard before the exact service took port
	 * 80: the data plane still follows it to the wildcard's backend, so it
	 * is that (service, backend)'s
	 */
	expect(&t, flow("192.0.2.1", 1004, "10.0.0.10", 80, IPPROTO_TCP),
	       conn(WILD, "10.1.0.4", 0, 0), CHLB_CONN_LIVE, "10.0.0.10:*/tcp", "10.1.0.4");
	/* another generation of the slot: a previous occupant's entry */
	struct chlb_conn old = conn(WEB, "10.1.0.2", 0, 0);
	old.gen--;
	expect(&t, flow("192.0.2.1", 1005, "10.0.0.10", 80, IPPROTO_TCP), old, CHLB_CONN_STALE,
	       "10.0.0.10:80/tcp", NULL);
	/* no service for 10.0.0.11, nor UDP on the TCP VIP */
	expect(&t, flow("192.0.2.1", 1006, "10.0.0.11", 80, IPPROTO_TCP),
	       conn(WEB, "10.1.0.2", 0, 0), CHLB_CONN_LIVE, NULL, NULL);
	expect(&t, flow("192.0.2.1", 1007, "10.0.0.10", 80, IPPROTO_UDP),
	       conn(WEB, "10.1.0.2", 0, now), CHLB_CONN_LIVE, NULL, NULL);
	/* UDP: idle 29 s is live, 30 s is past the timeout */
	expect(&t, flow("192.0.2.1", 1008, "10.0.0.20", 53, IPPROTO_UDP),
	       conn(DNS, "10.1.0.2", 0, now - 29 * NS), CHLB_CONN_LIVE, "10.0.0.20:53/udp",
	       "10.1.0.2");
	expect(&t, flow("192.0.2.1", 1009, "10.0.0.20", 53, IPPROTO_UDP),
	       conn(DNS, "10.1.0.2", 0, now - 30 * NS), CHLB_CONN_STALE, "10.0.0.20:53/udp", NULL);
	/* last_ns 0 (no time kept when written): never idle, as in bpf/chlb_stick.h */
	expect(&t, flow("192.0.2.1", 1013, "10.0.0.20", 53, IPPROTO_UDP),
	       conn(DNS, "10.1.0.2", 0, 0), CHLB_CONN_LIVE, "10.0.0.20:53/udp", "10.1.0.2");
	/* TCP without a TCP timeout: idle for ever is still live */
	expect(&t, flow("192.0.2.1", 1010, "10.0.0.10", 80, IPPROTO_TCP),
	       conn(WEB, "10.1.0.2", 0, 1), CHLB_CONN_LIVE, "10.0.0.10:80/tcp", "10.1.0.2");
	expect(&t, flow("2001:db8:c::1", 1011, "2001:db8::10", 443, IPPROTO_TCP),
	       conn(V6, "2001:db8::2", 0, 0), CHLB_CONN_LIVE, "[2001:db8::10]:443/tcp",
	       "2001:db8::2");
	/* a slot beyond the table */
	struct chlb_conn wild_slot = { .backend = 0xffff };
	expect(&t, flow("192.0.2.1", 1012, "10.0.0.10", 80, IPPROTO_TCP), wild_slot,
	       CHLB_CONN_STALE, "10.0.0.10:80/tcp", NULL);

	assert_int_equal(t.entries, 14);
	assert_int_equal(t.other, 2);
	/* every followed entry is one backend's: the service totals are the rows' sums */
	assert_int_equal(t.svc[web].entries, 6);
	assert_int_equal(t.svc[web].live, 3);
	assert_int_equal(t.svc[web].ended, 1);
	assert_int_equal(t.svc[web].stale, 2);
	assert_int_equal(t.svc[web].be[two].live, 2);
	assert_int_equal(t.svc[web].be[two].ended, 1);
	assert_int_equal(t.svc[web].be[three].live, 1);
	assert_int_equal(t.svc[wild].live, 2);
	assert_int_equal(t.svc[wild].be[0].live, 2);
	assert_int_equal(t.svc[dns].entries, 3);
	assert_int_equal(t.svc[dns].stale, 1);
	assert_int_equal(t.svc[dns].be[0].live, 2);
	assert_int_equal(t.svc[v6].be[0].live, 1);
	assert_int_equal(t.svc[web].be[two].slot, slot(WEB, "10.1.0.2"));
	/* 10.1.0.2 in two services: two backends, two slots */
	assert_int_equal(t.svc[dns].be[0].slot, slot(DNS, "10.1.0.2"));
	assert_int_not_equal(slot(WEB, "10.1.0.2"), slot(DNS, "10.1.0.2"));
	chlb_ct_tally_free(&t);
}

static void timeouts_and_removal(void **state)
{
	const __u64 now = 5000 * NS;
	struct chlb_conn c3 = conn(WEB, "10.1.0.3", 0, now - 2 * NS);
	struct chlb_ct_tally t;

	/* with a TCP timeout, TCP idles out too */
	assert_int_equal(chlb_ct_tally_init(&t, &st, rt, now, 30 * NS, 1 * NS), 0);
	expect(&t, flow("192.0.2.1", 2000, "10.0.0.10", 80, IPPROTO_TCP), c3, CHLB_CONN_STALE,
	       "10.0.0.10:80/tcp", NULL);
	chlb_ct_tally_free(&t);
	/* removing the backend makes its entries stale, and it has no row any more */
	change("backend del 10.0.0.10:80/tcp 10.1.0.3\n");
	assert_int_equal(chlb_ct_tally_init(&t, &st, rt, now, 30 * NS, 0), 0);
	expect(&t, flow("192.0.2.1", 2001, "10.0.0.10", 80, IPPROTO_TCP), c3, CHLB_CONN_STALE,
	       "10.0.0.10:80/tcp", NULL);
	assert_int_equal(t.svc[svc_index("10.0.0.10:80/tcp")].stale, 1);
	chlb_ct_tally_free(&t);
}

/* an address in two services leaves one: only that service's entries go stale */
static void removal_from_one_service(void **state)
{
	const __u64 now = 6000 * NS;
	struct chlb_conn web2 = conn(WEB, "10.1.0.2", 0, 0), dns2 = conn(DNS, "10.1.0.2", 0, now);
	struct chlb_ct_tally t;
	int dns = svc_index(DNS);

	change("backend del 10.0.0.10:80/tcp 10.1.0.2\n");
	assert_int_equal(rt->be[web2.backend].state, CHLB_BE_DEAD);
	assert_int_equal(rt->be[dns2.backend].state, CHLB_BE_LIVE);
	assert_int_equal(slot(DNS, "10.1.0.2"), dns2.backend);
	assert_int_equal(chlb_ct_tally_init(&t, &st, rt, now, 30 * NS, 0), 0);
	expect(&t, flow("192.0.2.1", 3000, "10.0.0.10", 80, IPPROTO_TCP), web2, CHLB_CONN_STALE,
	       WEB, NULL);
	expect(&t, flow("192.0.2.1", 3001, "10.0.0.20", 53, IPPROTO_UDP), dns2, CHLB_CONN_LIVE, DNS,
	       "10.1.0.2");
	assert_int_equal(t.svc[svc_index(WEB)].stale, 1);
	assert_int_equal(t.svc[dns].live, 1);
	assert_int_equal(t.svc[dns].be[be_index(dns, "10.1.0.2")].live, 1);
	chlb_ct_tally_free(&t);
}

/* held placeholders (chlb_dp_sync_hold): their service's, no backend's, not stale */
static void held_entries(void **state)
{
	const __u64 now = 7000 * NS;
	struct chlb_conn h = { .backend = CHLB_CONN_HELD_SLOT, .flags = CHLB_CONN_F_HELD };
	struct chlb_ct_tally t;
	int web = svc_index(WEB);

	assert_int_equal(chlb_ct_tally_init(&t, &st, rt, now, 30 * NS, 0), 0);
	h.last_ns = now - NS;
	expect(&t, flow("192.0.2.1", 4000, "10.0.0.10", 80, IPPROTO_TCP), h, CHLB_CONN_HELD, WEB,
	       NULL);
	h.last_ns = now + NS; /* held after the tally read the clock */
	expect(&t, flow("192.0.2.1", 4001, "10.0.0.10", 80, IPPROTO_TCP), h, CHLB_CONN_HELD, WEB,
	       NULL);
	expect(&t, flow("192.0.2.1", 4002, "10.0.0.20", 53, IPPROTO_UDP), h, CHLB_CONN_HELD, DNS,
	       NULL);
	expect(&t, flow("192.0.2.1", 4003, "10.0.0.11", 80, IPPROTO_TCP), h, CHLB_CONN_HELD, NULL,
	       NULL);
	/* past CHLB_CONN_HELD_MAX_NS the data plane decides it afresh: stale */
	h.last_ns = now - CHLB_CONN_HELD_MAX_NS;
	expect(&t, flow("192.0.2.1", 4004, "10.0.0.10", 80, IPPROTO_TCP), h, CHLB_CONN_STALE, WEB,
	       NULL);
	assert_int_equal(t.svc[web].entries, 3);
	assert_int_equal(t.svc[web].held, 2);
	assert_int_equal(t.svc[web].stale, 1);
	assert_int_equal(t.svc[web].live + t.svc[web].ended, 0);
	for (__u32 j = 0; j < st.svc[web].nbe; j++)
		assert_int_equal(t.svc[web].be[j].live + t.svc[web].be[j].ended, 0);
	assert_int_equal(t.svc[svc_index(DNS)].held, 1);
	assert_int_equal(t.other, 1);
	assert_string_equal(chlb_conn_state_name(CHLB_CONN_HELD), "held");
	chlb_ct_tally_free(&t);
}

static void empty_state(void **state)
{
	struct chlb_state none;
	struct chlb_ct_tally t;
	struct chlb_flow f = flow("192.0.2.1", 1, "10.0.0.10", 80, IPPROTO_TCP);
	struct chlb_conn c = { 0 };
	int s, b;

	chlb_state_init(&none);
	assert_int_equal(chlb_ct_tally_init(&t, &none, rt, 0, 0, 0), 0);
	chlb_ct_tally_add(&t, &f, &c, &s, &b);
	assert_int_equal(s, -1);
	assert_int_equal(t.other, 1);
	chlb_ct_tally_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(attributes_and_classifies),
		cmocka_unit_test(timeouts_and_removal),
		cmocka_unit_test(removal_from_one_service),
		cmocka_unit_test(held_entries),
		cmocka_unit_test(empty_state),
	};

	return cmocka_run_group_tests_name("conn_tally", tests, setup, teardown);
}
