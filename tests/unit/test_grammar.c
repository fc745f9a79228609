// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The command grammar: every statement form, and every class of bad input
 * with the token its message must name. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <netinet/in.h>
#include "config/grammar.h"

static void ok(const char *line, struct chlb_cmd *c)
{
	char err[CHLB_ERR_MAX];
	int r = chlb_parse_line(line, c, err, sizeof(err));

	if (r)
		fail_msg("'%s' rejected: %s", line, err);
}

static void service_add_full(void **st)
{
	struct chlb_cmd c;
	char buf[CHLB_ADDRSTR];

	ok("service add 10.0.0.10:80/tcp algo ring vnodes 160 fwd ipip hash 5tuple", &c);
	assert_int_equal(c.kind, CHLB_CMD_SERVICE_ADD);
	assert_string_equal(chlb_fmt_vip(&c.vip, buf, sizeof(buf)), "10.0.0.10:80/tcp");
	assert_int_equal(c.algo, CHLB_ALGO_RING);
	assert_int_equal(c.vnodes, 160);
	assert_int_equal(c.fwd, CHLB_FWD_IPIP);
	assert_true(c.set & CHLB_OPT_HASH);

	ok("service add [2001:db8::10]:443/tcp algo maglev table 65537 fwd l2dsr", &c);
	assert_int_equal(c.vip.addr.family, CHLB_AF_INET6);
	assert_int_equal(c.vip.port, 443);
	assert_int_equal(c.table_size, 65537);
	assert_string_equal(chlb_fmt_vip(&c.vip, buf, sizeof(buf)), "[2001:db8::10]:443/tcp");

	ok("service add 10.0.0.10:0/udp # all ports", &c);
	assert_int_equal(c.vip.port, 0);
	assert_int_equal(c.vip.proto, IPPROTO_UDP);
	ok("service add [2001:db8::10]:0/tcp", &c);
	assert_int_equal(c.vip.port, 0);
	assert_int_equal(c.vip.addr.family, CHLB_AF_INET6);
	/* the star is port 0, and port 0 is written back as the star */
	ok("service add 10.0.0.10:*/udp", &c);
	assert_int_equal(c.vip.port, 0);
	assert_string_equal(chlb_fmt_vip(&c.vip, buf, sizeof(buf)), "10.0.0.10:*/udp");
	ok("backend add [2001:db8::10]:*/tcp 2001:db8::2", &c);
	assert_int_equal(c.vip.port, 0);
	assert_string_equal(chlb_fmt_vip(&c.vip, buf, sizeof(buf)), "[2001:db8::10]:*/tcp");
}

/* `force`: a word without a value, anywhere among a service's options, and on apply */
static void force_word(void **st)
{
	struct chlb_cmd c;

	ok("service add 10.0.0.10:22/tcp force", &c);
	assert_true(c.set & CHLB_OPT_FORCE);
	ok("service add 10.0.0.10:22/tcp algo jump force fwd l2dsr", &c);
	assert_true(c.set & CHLB_OPT_FORCE);
	assert_int_equal(c.algo, CHLB_ALGO_JUMP);
	assert_int_equal(c.fwd, CHLB_FWD_L2DSR);
	ok("service set 10.0.0.10:22/tcp force", &c);
	assert_int_equal(c.kind, CHLB_CMD_SERVICE_SET);
	assert_true(c.set & CHLB_OPT_FORCE);
	ok("service add 10.0.0.10:22/tcp algo jump", &c);
	assert_false(c.set & CHLB_OPT_FORCE);
	ok("apply", &c);
	assert_int_equal(c.kind, CHLB_CMD_APPLY);
	assert_false(c.force);
	ok("apply force", &c);
	assert_true(c.force);
}

static void backend_forms(void **st)
{
	struct chlb_cmd c;

	ok("backend add 10.0.0.10:80/tcp 10.1.0.2 weight 100", &c);
	assert_int_equal(c.kind, CHLB_CMD_BACKEND_ADD);
	assert_int_equal(c.weight, 100);
	ok("backend set 10.0.0.10:80/tcp 10.1.0.2 weight 0", &c);
	assert_int_equal(c.kind, CHLB_CMD_BACKEND_SET);
	assert_int_equal(c.weight, 0);
	ok("backend del 10.0.0.10:80/tcp 10.1.0.2", &c);
	assert_int_equal(c.kind, CHLB_CMD_BACKEND_DEL);
	ok("backend add [2001:db8::10]:443/tcp [2001:db8::2]", &c);
	assert_int_equal(c.backend.family, CHLB_AF_INET6);
	ok("backend add 10.0.0.10:80/tcp 10.1.0.2 weight 200 buckets 0,7", &c);
	assert_int_equal(c.nbucket, 2);
	assert_int_equal(c.bucket[1], 7);
	ok("which 192.0.2.1:40000 10.0.0.10:80 tcp", &c);
	assert_int_equal(c.kind, CHLB_CMD_WHICH);
	assert_int_equal(c.flow.family, CHLB_AF_INET);
	assert_int_equal(ntohs(c.flow.sport), 40000);
	ok("conns", &c);
	assert_int_equal(c.kind, CHLB_CMD_CONNS);
	assert_false(c.has_vip);
	assert_false(c.list);
	assert_int_equal(c.backend.family, 0);
	ok("conns 10.0.0.10:80/tcp backend 10.1.0.2 list", &c);
	assert_true(c.has_vip);
	assert_int_equal(c.vip.port, 80);
	assert_int_equal(c.backend.family, CHLB_AF_INET);
	assert_int_equal(c.backend.a[3], 2);
	assert_true(c.list);
	ok("conns list backend 2001:db8::2", &c);
	assert_false(c.has_vip);
	assert_true(c.list);
	assert_int_equal(c.backend.family, CHLB_AF_INET6);
	ok("shutdown detach", &c);
	assert_true(c.detach);
	ok("stats", &c);
	assert_false(c.reset);
	ok("stats reset", &c);
	assert_int_equal(c.kind, CHLB_CMD_STATS);
	assert_true(c.reset);
	ok("   # only a comment", &c);
	assert_int_equal(c.kind, CHLB_CMD_NONE);
	/* '#' begins a comment only at a token's start: inside one it is data */
	ok("service set 10.0.0.10:80/tcp check http path /a#b # a comment", &c);
	assert_string_equal(c.check.path, "/a#b");
	ok("backend add 10.0.0.10:80/tcp 10.1.0.2 weight 7 #a comment", &c);
	assert_int_equal(c.weight, 7);
}

static const struct {
	const char *line, *token;
} bad[] = {
	{ "service add 10.0.0.300:80/tcp", "'10.0.0.300:80/tcp'" },
	{ "service add 10.0.0.10:99999/tcp", "'99999'" },
	{ "service add 10.0.0.10:80/sctp", "'sctp'" },
	{ "service add 10.0.0.10:80", "'10.0.0.10:80'" },
	/* every port only when asked for: the message names the VIP with :* */
	{ "service add 10.0.0.10/tcp", "'10.0.0.10:*/tcp'" },
	{ "service add 10.0.0.10/tcp", "missing ':PORT'" },
	{ "service add [2001:db8::1]/udp", "'[2001:db8::1]:*/udp'" },
	{ "backend add 10.0.0.10/tcp 10.1.0.2", "'10.0.0.10:*/tcp'" },
	{ "service list 10.0.0.10/tcp", "'10.0.0.10:*/tcp'" },
	/* ranges: refused, saying what is taken instead */
	{ "service add 10.0.0.10:5060-5100/udp", "'10.0.0.10:5060-5100/udp': port ranges are not "
						 "supported" },
	{ "service add [2001:db8::1]:1-2/tcp", "':*'" },
	{ "service add 10.0.0.10:**/tcp", "malformed port '**'" },
	{ "service add 10.0.0.10:*8/tcp", "malformed port" },
	{ "service add 10.0.0.10:22/tcp force force", "'force': given twice" },
	{ "service add 10.0.0.10:22/tcp force yes", "'yes'" },
	{ "backend add 10.0.0.10:80/tcp 10.1.0.2 force", "'force'" },
	{ "service del 10.0.0.10:80/tcp force", "'force': unexpected argument" },
	{ "apply now", "'now': unexpected argument (expected force)" },
	{ "apply force now", "'now'" },
	{ "service add 2001:db8::1:80/tcp", "in brackets" },
	{ "service add [2001:db8::1:80/tcp", "missing ']'" },
	{ "service add 10.0.0.10:80/tcp algo rendezvous", "'rendezvous'" },
	{ "service add 10.0.0.10:80/tcp fwd gre", "'gre'" },
	{ "service add 10.0.0.10:80/tcp hash 3tuple", "'3tuple'" },
	{ "service add 10.0.0.10:80/tcp vnodes 0", "'0'" },
	{ "service add 10.0.0.10:80/tcp vnodes 1e3", "'1e3'" },
	{ "service add 10.0.0.10:80/tcp table 9999999", "'9999999'" },
	{ "service add 10.0.0.10:80/tcp color blue", "'color'" },
	{ "service add 10.0.0.10:80/tcp algo", "'algo'" },
	{ "service add 10.0.0.10:80/tcp algo ring algo jump", "given twice" },
	{ "service frob 10.0.0.10:80/tcp", "'frob'" },
	{ "service add", "missing VIP" },
	{ "backend add 10.0.0.10:80/tcp 10.1.0.2 weight 10001", "'10001'" },
	{ "backend add 10.0.0.10:80/tcp 10.1.0.2 weight -1", "'-1'" },
	{ "backend add 10.0.0.10:80/tcp 10.1.0.999", "'10.1.0.999'" },
	{ "backend add 10.0.0.10:80/tcp", "missing backend address" },
	{ "backend set 10.0.0.10:80/tcp 10.1.0.2", "nothing to set" },
	{ "service set 10.0.0.10:80/tcp", "nothing to set (expected at least one of algo" },
	{ "backend del 10.0.0.10:80/tcp 10.1.0.2 now", "'now'" },
	{ "backend add 10.0.0.10:80/tcp 10.1.0.2 buckets 1,,2", "'1,,2'" },
	{ "which 1.2.3.4 10.0.0.10:80 tcp", "missing ':PORT'" },
	{ "which 1.2.3.4:1 [::1]:80 tcp", "family" },
	{ "conns backend notanaddr", "'notanaddr': malformed backend address" },
	{ "conns 10.0.0.10:80/tcp backend", "missing backend address" },
	{ "conns 10.0.0.10:80/tcp list list", "'list': given twice" },
	{ "conns 10.0.0.10/sctp", "'sctp'" },
	{ "conns 10.0.0.10:80/tcp 10.0.0.11:80/tcp", "'10.0.0.11:80/tcp': unexpected argument" },
	{ "frobnicate", "'frobnicate'" },
	{ "shutdown now", "'now'" },
	{ "stats now", "'now': unexpected argument (expected reset)" },
	{ "stats reset reset", "'reset': unexpected argument" },
};

static void bad_input_names_token(void **st)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct chlb_cmd c;
		char err[CHLB_ERR_MAX];

		if (!chlb_parse_line(bad[i].line, &c, err, sizeof(err)))
			fail_msg("'%s' accepted", bad[i].line);
		if (!strstr(err, bad[i].token))
			fail_msg("'%s': message '%s' lacks %s", bad[i].line, err, bad[i].token);
	}
}

static void limits(void **st)
{
	char line[CHLB_LINE_MAX + 10];
	struct chlb_cmd c;
	char err[CHLB_ERR_MAX];

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	assert_int_equal(chlb_parse_line(line, &c, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "too long"));
	strcpy(line, "service add 10.0.0.1:1/tcp");
	for (int i = 0; i < CHLB_TOKENS_MAX; i++)
		strcat(line, " x");
	assert_int_equal(chlb_parse_line(line, &c, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "too many tokens"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(service_add_full), cmocka_unit_test(force_word),
		cmocka_unit_test(backend_forms),    cmocka_unit_test(bad_input_names_token),
		cmocka_unit_test(limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
