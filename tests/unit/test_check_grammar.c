// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Health-check settings in the grammar and the desired state: every
 * keyword parses and lands in the state, the defaults, a backend's override
 * merged over its service's check (chlb_check_effective), every bad value
 * refused with a message naming the token and the state left as it was,
 * save -> load byte-identical, and a state without checks written as before.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "config/plan.h"
#include "config/state.h"

#define VIP  "10.0.0.10:80/tcp"
#define VIP0 "10.0.0.20:*/tcp" /* every port */
#define BE1  "10.1.0.2"
#define BE2  "10.1.0.3"

/* One statement straight into st (no copy): a refused one must leave st as it was. */
static int run(struct chlb_state *st, const char *line, char *err)
{
	struct chlb_cmd c;
	int rc = chlb_parse_line(line, &c, err, CHLB_ERR_MAX);

	return rc ? rc : chlb_state_exec(st, &c, err, CHLB_ERR_MAX);
}

static void must(struct chlb_state *st, const char *line)
{
	char err[CHLB_ERR_MAX];

	if (run(st, line, err))
		fail_msg("'%s' refused: %s", line, err);
}

static void must_fail(struct chlb_state *st, const char *line, const char *needle)
{
	char err[CHLB_ERR_MAX];
	char *before = chlb_state_format(st, false), *after;

	if (!run(st, line, err))
		fail_msg("'%s' taken", line);
	if (!strstr(err, needle))
		fail_msg("'%s': message '%s' lacks \"%s\"", line, err, needle);
	after = chlb_state_format(st, false);
	if (strcmp(before, after))
		fail_msg("'%s' refused but changed the state:\n%s\n->\n%s", line, before, after);
	free(before);
	free(after);
}

static struct chlb_svc_cfg *svc(const struct chlb_state *st, const char *vip)
{
	struct chlb_vip v;
	char err[CHLB_ERR_MAX];
	struct chlb_svc_cfg *s;

	assert_int_equal(chlb_parse_vip(vip, &v, err, sizeof(err)), 0);
	s = chlb_state_find(st, &v);
	assert_non_null(s);
	return s;
}

static struct chlb_cfg_be *be(const struct chlb_state *st, const char *vip, const char *addr)
{
	struct chlb_addr a;
	struct chlb_cfg_be *b;

	assert_int_equal(chlb_parse_addr(addr, &a), 0);
	b = chlb_svc_find_be(svc(st, vip), &a);
	assert_non_null(b);
	return b;
}

static void defaults(void **unused)
{
	struct chlb_state st;
	struct chlb_check k;
	struct chlb_svc_cfg *s;

	chlb_check_defaults(&k);
	assert_int_equal(k.type, CHLB_CHECK_NONE);
	assert_int_equal(k.via, CHLB_VIA_AUTO);
	assert_int_equal(k.interval_ms, CHLB_CHECK_INTERVAL_MS);
	assert_int_equal(k.timeout_ms, CHLB_CHECK_TIMEOUT_MS);
	assert_int_equal(k.rise, CHLB_CHECK_RISE);
	assert_int_equal(k.fall, CHLB_CHECK_FALL);
	assert_int_equal(k.expect_lo, 200);
	assert_int_equal(k.expect_hi, 399);
	assert_string_equal(k.path, "/");
	assert_string_equal(k.host, "");
	assert_int_equal(k.port, 0);
	assert_int_equal(k.set, 0);

	chlb_state_init(&st);
	must(&st, "service add " VIP);
	must(&st, "backend add " VIP " " BE1);
	s = svc(&st, VIP);
	/* a new service: the defaults, and panic 50 (zeroed memory would mean panic 0) */
	assert_int_equal(s->health.panic_pct, CHLB_PANIC_PCT);
	assert_int_equal(s->health.on_down, CHLB_ON_DOWN_KEEP);
	assert_int_equal(s->health.slow_start_s, 0);
	assert_int_equal(s->check.interval_ms, CHLB_CHECK_INTERVAL_MS);
	assert_string_equal(s->check.path, "/");
	chlb_check_effective(s, &s->be[0], &k);
	assert_int_equal(k.type, CHLB_CHECK_NONE);
	assert_int_equal(k.timeout_ms, CHLB_CHECK_TIMEOUT_MS);
	assert_int_equal(chlb_be_check(&s->be[0])->set, 0);
	/* a service's struct that was zeroed still yields usable values */
	{
		struct chlb_svc_cfg z = { 0 };

		chlb_check_effective(&z, NULL, &k);
		assert_int_equal(k.interval_ms, CHLB_CHECK_INTERVAL_MS);
		assert_int_equal(k.rise, CHLB_CHECK_RISE);
		assert_string_equal(k.path, "/");
	}
	chlb_state_free(&st);
}

static void every_keyword_lands(void **unused)
{
	struct chlb_state st;
	struct chlb_svc_cfg *s;

	chlb_state_init(&st);
	must(&st,
	     "service add " VIP " check http path /healthz?x=1 expect 200-204 host "
	     "www.example.com:8080 port 8080 interval 500 timeout 400 rise 5 fall 7 via direct "
	     "on-down reset slow-start 30 panic 0");
	s = svc(&st, VIP);
	assert_int_equal(s->check.type, CHLB_CHECK_HTTP);
	assert_string_equal(s->check.path, "/healthz?x=1");
	assert_int_equal(s->check.expect_lo, 200);
	assert_int_equal(s->check.expect_hi, 204);
	assert_string_equal(s->check.host, "www.example.com:8080");
	assert_int_equal(s->check.port, 8080);
	assert_int_equal(s->check.interval_ms, 500);
	assert_int_equal(s->check.timeout_ms, 400);
	assert_int_equal(s->check.rise, 5);
	assert_int_equal(s->check.fall, 7);
	assert_int_equal(s->check.via, CHLB_VIA_DIRECT);
	assert_int_equal(s->health.on_down, CHLB_ON_DOWN_RESET);
	assert_int_equal(s->health.slow_start_s, 30);
	assert_int_equal(s->health.panic_pct, 0);
	/* service set changes only what it gives */
	must(&st, "service set " VIP " check tcp via vip panic 100");
	s = svc(&st, VIP);
	assert_int_equal(s->check.type, CHLB_CHECK_TCP);
	assert_int_equal(s->check.via, CHLB_VIA_VIP);
	assert_int_equal(s->check.interval_ms, 500);
	assert_int_equal(s->health.panic_pct, 100);
	assert_int_equal(s->health.on_down, CHLB_ON_DOWN_RESET);
	must(&st, "service set " VIP " check none");
	assert_int_equal(svc(&st, VIP)->check.type, CHLB_CHECK_NONE);
	chlb_state_free(&st);
}

static void backend_override_merges(void **unused)
{
	struct chlb_state st;
	struct chlb_check k;
	struct chlb_cfg_be *b;

	chlb_state_init(&st);
	must(&st, "service add " VIP " check http path /h interval 1000 timeout 500");
	must(&st, "backend add " VIP " " BE1 " weight 50 check tcp port 9000");
	must(&st, "backend add " VIP " " BE2);
	b = be(&st, VIP, BE1);
	assert_int_equal(b->weight, 50);
	assert_int_equal(chlb_be_check(b)->set, CHLB_CK_TYPE | CHLB_CK_PORT);
	chlb_check_effective(svc(&st, VIP), b, &k);
	assert_int_equal(k.type, CHLB_CHECK_TCP);
	assert_int_equal(k.port, 9000);
	assert_int_equal(k.interval_ms, 1000); /* the service's */
	assert_int_equal(k.timeout_ms, 500);
	assert_string_equal(k.path, "/h");
	chlb_check_effective(svc(&st, VIP), be(&st, VIP, BE2), &k);
	assert_int_equal(k.type, CHLB_CHECK_HTTP);
	assert_int_equal(k.port, 0);
	/* the service's change reaches what the backend does not override */
	must(&st, "service set " VIP " interval 3000 rise 4");
	chlb_check_effective(svc(&st, VIP), be(&st, VIP, BE1), &k);
	assert_int_equal(k.interval_ms, 3000);
	assert_int_equal(k.rise, 4);
	assert_int_equal(k.port, 9000);
	/* backend set with check options alone: the weight stays, the override grows */
	must(&st, "backend set " VIP " " BE1 " fall 9");
	b = be(&st, VIP, BE1);
	assert_int_equal(b->weight, 50);
	assert_int_equal(chlb_be_check(b)->set, CHLB_CK_TYPE | CHLB_CK_PORT | CHLB_CK_FALL);
	/* check none on a backend: this one is not checked, the others are */
	must(&st, "backend set " VIP " " BE2 " check none");
	chlb_check_effective(svc(&st, VIP), be(&st, VIP, BE2), &k);
	assert_int_equal(k.type, CHLB_CHECK_NONE);
	chlb_check_effective(svc(&st, VIP), NULL, &k);
	assert_int_equal(k.type, CHLB_CHECK_HTTP);
	/* and weight alone still works */
	must(&st, "backend set " VIP " " BE2 " weight 7");
	assert_int_equal(be(&st, VIP, BE2)->weight, 7);
	assert_int_equal(chlb_be_check(be(&st, VIP, BE2))->set, CHLB_CK_TYPE);
	chlb_state_free(&st);
}

static void bad_values_refused(void **unused)
{
	static const struct {
		const char *line, *needle;
	} bad[] = {
		{ "service set " VIP " check udp", "'udp': unknown check type" },
		{ "service set " VIP " check", "'check': missing value" },
		{ "service set " VIP " interval 99", "'99': check interval out of range" },
		{ "service set " VIP " interval 3600001", "'3600001'" },
		{ "service set " VIP " interval 1s", "'1s'" },
		{ "service set " VIP " timeout 9", "'9': check timeout out of range" },
		{ "service set " VIP " timeout 600001", "'600001'" },
		{ "service set " VIP " rise 0", "'0': rise out of range" },
		{ "service set " VIP " rise 101", "'101'" },
		{ "service set " VIP " fall 0", "'0': fall out of range" },
		{ "service set " VIP " fall -1", "'-1'" },
		{ "service set " VIP " port 0", "'0': check port out of range" },
		{ "service set " VIP " port 65536", "'65536'" },
		{ "service set " VIP " expect 99-200", "'99-200': malformed status range" },
		{ "service set " VIP " expect 200-600", "'200-600'" },
		{ "service set " VIP " expect 300-200", "'300-200'" },
		{ "service set " VIP " expect 200", "'200': malformed status range" },
		{ "service set " VIP " expect 200-", "'200-'" },
		{ "service set " VIP " expect -200", "'-200'" },
		{ "service set " VIP " expect 2x0-300", "'2x0-300'" },
		{ "service set " VIP " path healthz", "'healthz': malformed HTTP path" },
		{ "service set " VIP " path /a\x7f", "malformed HTTP path" },
		{ "service set " VIP " path /\xc3\xa9", "malformed HTTP path" },
		{ "service set " VIP " host bad_name", "'bad_name': malformed host name" },
		{ "service set " VIP " host :80", "':80'" },
		{ "service set " VIP " host a.b:0", "'a.b:0'" },
		{ "service set " VIP " host a.b:65536", "'a.b:65536'" },
		{ "service set " VIP " host a.b:x", "'a.b:x'" },
		{ "service set " VIP " via nat", "'nat': unknown probe path" },
		{ "service set " VIP " on-down drop", "'drop': unknown on-down action" },
		{ "service set " VIP " slow-start 3601", "'3601': slow start out of range" },
		{ "service set " VIP " panic 101", "'101': panic threshold out of range" },
		{ "service set " VIP " check tcp check http", "'check': given twice" },
		/* timeout <= interval, naming both, whichever statement breaks it */
		{ "service set " VIP " timeout 3000",
		  "'timeout 3000': longer than 'interval 2000'" },
		{ "service set " VIP " interval 500",
		  "'timeout 1000': longer than 'interval 500'" },
		{ "service set " VIP " interval 200 timeout 300", "'timeout 300'" },
		{ "backend set " VIP " " BE1 " timeout 2500", "'timeout 2500'" },
		{ "backend add " VIP " 10.1.0.9 interval 100", "'timeout 1000'" },
		/* service options are not a backend's */
		{ "backend set " VIP " " BE1 " panic 10", "'panic': unknown backend option" },
		{ "backend set " VIP " " BE1 " on-down reset", "'on-down'" },
		{ "backend set " VIP " " BE1 " slow-start 5", "'slow-start'" },
		/* backend set needs at least one option */
		{ "backend set " VIP " " BE1, "nothing to set (expected at least one of weight" },
		/* a VIP of every port: a check needs a port */
		{ "service set " VIP0 " check tcp",
		  "'check tcp': 10.0.0.20:*/tcp is a VIP of every "
		  "port" },
		{ "service add 10.0.0.21:0/tcp check http", "needs a port (port N)" },
		{ "backend add " VIP0 " 10.1.0.9 check tcp", "'check tcp'" },
		{ "backend set " VIP0 " " BE1 " check http", "'check http'" },
	};
	struct chlb_state st;

	chlb_state_init(&st);
	must(&st, "service add " VIP);
	must(&st, "backend add " VIP " " BE1);
	must(&st, "service add " VIP0);
	must(&st, "backend add " VIP0 " " BE1);
	must(&st, "backend add " VIP0 " " BE2 " check tcp port 8080");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		must_fail(&st, bad[i].line, bad[i].needle);
	/* what a VIP of every port takes */
	must(&st, "service set " VIP0 " check tcp port 443");
	must(&st, "backend set " VIP0 " " BE1 " check http");
	must(&st, "service set " VIP " interval 100 timeout 100");
	/* the timeout check sees the backend's override when the service changes */
	must(&st, "service set " VIP " interval 2000 timeout 1000");
	must(&st, "backend set " VIP " " BE1 " timeout 1500");
	must_fail(&st, "service set " VIP " interval 1000", "'timeout 1500'");
	/* a refused weight leaves the check override of the same statement undone too */
	must_fail(&st, "backend set " VIP " " BE1 " weight 10001 fall 5", "'10001'");
	chlb_state_free(&st);
}

static char *format(const struct chlb_state *st)
{
	char *t = chlb_state_format(st, false);

	assert_non_null(t);
	return t;
}

static void save_load_round_trip(void **unused)
{
	struct chlb_state st, back;
	char err[CHLB_ERR_MAX], *one, *two;

	chlb_state_init(&st);
	must(&st, "service add " VIP " algo maglev check http path /healthz expect 200-299 "
		  "host api.example.com interval 1500 timeout 700 rise 3 fall 4 via vip on-down "
		  "reset slow-start 20 panic 30");
	must(&st, "backend add " VIP " " BE1 " weight 200 check tcp port 8443 via direct");
	must(&st, "backend add " VIP " " BE2 " check none");
	must(&st, "service add " VIP0 " algo jump check tcp port 22 panic 0");
	must(&st, "backend add " VIP0 " " BE1 " weight 300");
	must(&st, "backend add " VIP0 " " BE2 " timeout 1000"); /* a default, given */
	assert_int_equal(chlb_state_finalize(&st, err, sizeof(err)), 0);
	one = format(&st);
	assert_non_null(strstr(one, "service add " VIP " algo maglev table 65537 fwd ipip hash "
				    "5tuple check http path /healthz expect 200-299 host "
				    "api.example.com interval 1500 timeout 700 rise 3 fall 4 via "
				    "vip on-down reset slow-start 20 panic 30\n"));
	assert_non_null(
	    strstr(one, "backend add " VIP " " BE1 " weight 200 check tcp port 8443 via direct\n"));
	assert_non_null(strstr(one, "backend add " VIP " " BE2 " weight 100 check none\n"));
	assert_non_null(strstr(one, " check tcp port 22 panic 0\n"));
	assert_non_null(strstr(one, BE2 " weight 100 bucket "));
	assert_non_null(strstr(one, " timeout 1000\n"));

	chlb_state_init(&back);
	if (chlb_state_exec_text(&back, one, "saved", err, sizeof(err)))
		fail_msg("saved text refused: %s\n%s", err, one);
	two = format(&back);
	assert_string_equal(one, two);
	/* nothing to rebuild and nothing for the checker: save -> apply is a no-op */
	for (__u32 i = 0; i < st.nsvc; i++) {
		const struct chlb_svc_cfg *b = chlb_state_find(&back, &st.svc[i].vip);

		assert_non_null(b);
		assert_true(chlb_svc_equal(&st.svc[i], b));
		assert_true(chlb_svc_health_equal(&st.svc[i], b));
	}
	free(one);
	free(two);
	chlb_state_free(&back);
	chlb_state_free(&st);
}

/* A state without checks is written exactly as before checks existed. */
static void no_checks_unchanged(void **unused)
{
	static const char want[] =
	    "# chlb state: 2 services; one statement per line (chlbctl grammar)\n"
	    "service add 10.0.0.10:80/tcp algo ring vnodes 160 fwd ipip hash 5tuple\n"
	    "backend add 10.0.0.10:80/tcp 10.1.0.2 weight 100\n"
	    "service add 10.0.0.20:*/tcp algo maglev table 65537 fwd ipip hash src mtu 1500\n"
	    "backend add 10.0.0.20:*/tcp 10.1.0.3 weight 5\n";
	struct chlb_state st, back;
	char err[CHLB_ERR_MAX], *t;

	chlb_state_init(&st);
	if (chlb_state_exec_text(&st, want, "old", err, sizeof(err)))
		fail_msg("%s", err);
	t = format(&st);
	assert_string_equal(t, want);
	free(t);
	/* a check set and put back to its defaults: the policy too */
	must(&st, "service set " VIP " check tcp on-down reset panic 10");
	must(&st, "service set " VIP " check none on-down keep panic 50");
	t = format(&st);
	assert_non_null(strstr(t, "hash 5tuple check none\n")); /* given explicitly: kept */
	free(t);
	chlb_state_init(&back);
	assert_int_equal(chlb_state_exec_text(&back, want, "old", err, sizeof(err)), 0);
	assert_true(chlb_svc_health_equal(svc(&st, VIP), svc(&back, VIP)));
	chlb_state_free(&back);
	chlb_state_free(&st);
}

/* a: a jump service of two backends, finalized. */
static void two_backends(struct chlb_state *a)
{
	char err[CHLB_ERR_MAX];

	chlb_state_init(a);
	must(a, "service add " VIP " algo jump");
	must(a, "backend add " VIP " " BE1);
	must(a, "backend add " VIP " " BE2);
	assert_int_equal(chlb_state_finalize(a, err, sizeof(err)), 0);
}

/* A check-only change rebuilds no table; the checker is told through health_equal. */
static void check_change_is_no_table_change(void **unused)
{
	struct chlb_state a, b;
	char err[CHLB_ERR_MAX];
	json_object *plan, *svcs, *e, *h;
	const struct chlb_svc_cfg *sa, *sb;

	two_backends(&a);
	assert_int_equal(chlb_state_copy(&b, &a), 0);
	must(&b, "service set " VIP " check tcp interval 500 timeout 200 panic 20");
	must(&b, "backend set " VIP " " BE1 " check none");
	assert_int_equal(chlb_state_finalize(&b, err, sizeof(err)), 0);
	sa = svc(&a, VIP);
	sb = svc(&b, VIP);
	assert_true(chlb_svc_equal(sa, sb));
	assert_false(chlb_svc_health_equal(sa, sb));
	plan = chlb_plan(&a, &b);
	assert_true(json_object_object_get_ex(plan, "services", &svcs));
	assert_int_equal(json_object_array_length(svcs), 1);
	e = json_object_array_get_idx(svcs, 0);
	assert_true(json_object_object_get_ex(e, "health", &h));
	assert_string_equal(json_object_get_string(h),
			    "health check settings change: no table change");
	json_object_put(plan);
	/* checks switched off: what the probes hold down serves again, a swap: said */
	plan = chlb_plan(&b, &a);
	assert_true(json_object_object_get_ex(plan, "services", &svcs));
	e = json_object_array_get_idx(svcs, 0);
	assert_true(json_object_object_get_ex(e, "health", &h));
	assert_non_null(strstr(json_object_get_string(h), "hold down serve again (check none)"));
	json_object_put(plan);
	/* an override that only repeats the service's value changes nothing for the checker */
	chlb_state_free(&b);
	assert_int_equal(chlb_state_copy(&b, &a), 0);
	must(&b, "backend set " VIP " " BE1 " interval 2000");
	assert_true(chlb_svc_health_equal(svc(&a, VIP), svc(&b, VIP)));
	plan = chlb_plan(&a, &b);
	assert_true(json_object_object_get_ex(plan, "services", &svcs));
	assert_int_equal(json_object_array_length(svcs), 0);
	json_object_put(plan);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

/* The plan (dry run) of a table change: "health check settings change" only when they do. */
static void plan_names_health_change_only_when_it_is(void **unused)
{
	struct chlb_state a, b;
	char err[CHLB_ERR_MAX];
	json_object *plan, *svcs, *e, *h;

	two_backends(&a);
	/* a backend removed from a service without checks: a table change, no check change */
	assert_int_equal(chlb_state_copy(&b, &a), 0);
	must(&b, "backend del " VIP " " BE2);
	assert_int_equal(chlb_state_finalize(&b, err, sizeof(err)), 0);
	plan = chlb_plan(&a, &b);
	assert_true(json_object_object_get_ex(plan, "services", &svcs));
	assert_int_equal(json_object_array_length(svcs), 1);
	e = json_object_array_get_idx(svcs, 0);
	assert_false(json_object_object_get_ex(e, "health", &h));
	json_object_put(plan);
	/* with a weight change and a kept backend's check override: named */
	must(&b, "backend set " VIP " " BE1 " weight 50 check tcp port 8080");
	assert_int_equal(chlb_state_finalize(&b, err, sizeof(err)), 0);
	plan = chlb_plan(&a, &b);
	assert_true(json_object_object_get_ex(plan, "services", &svcs));
	e = json_object_array_get_idx(svcs, 0);
	assert_true(json_object_object_get_ex(e, "health", &h));
	assert_string_equal(json_object_get_string(h), "health check settings change");
	json_object_put(plan);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

struct lines {
	char text[4096];
};

static void collect(void *ctx, const char *line)
{
	struct lines *l = ctx;
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", line);
}

/* The log's diff says what changed in the check, and that no table changes. */
static void diff_names_check_changes(void **unused)
{
	struct chlb_state a, b;
	struct lines l = { "" };
	struct chlb_diff_count n;

	chlb_state_init(&a);
	must(&a, "service add " VIP);
	must(&a, "backend add " VIP " " BE1);
	assert_int_equal(chlb_state_copy(&b, &a), 0);
	must(&b, "service set " VIP " check http path /x slow-start 10");
	must(&b, "backend set " VIP " " BE1 " check tcp");
	must(&b, "backend add " VIP " " BE2 " check none");
	chlb_state_diff(&a, &b, NULL, collect, &l, &n);
	assert_non_null(strstr(l.text, "service set " VIP " health: check http path /x "
				       "slow-start 10 (no table change)\n"));
	assert_non_null(strstr(l.text, "backend set " VIP " " BE1
				       " check override: check tcp (no table change)\n"));
	assert_non_null(strstr(l.text, "backend add " VIP " " BE2 " weight 100 check none\n"));
	assert_int_equal(n.svc_set, 1);
	assert_int_equal(n.be_set, 1);
	assert_int_equal(n.be_add, 1);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

/* next: the state file text gives, applied over cur as apply -f does (inherit). */
static void apply_file(struct chlb_state *next, const struct chlb_state *cur, const char *text)
{
	char err[CHLB_ERR_MAX];

	chlb_state_init(next);
	assert_int_equal(chlb_state_exec_text(next, text, "f", err, sizeof(err)), 0);
	chlb_state_inherit(next, cur);
}

/* apply -f: the file's checks win; inherit keeps only the jump order, never the old checks */
static void apply_takes_the_files_checks(void **unused)
{
	struct chlb_state cur, next;
	char err[CHLB_ERR_MAX];
	struct chlb_check k;

	chlb_state_init(&cur);
	must(&cur, "service add " VIP " algo jump check tcp interval 500 timeout 200 panic 10");
	must(&cur, "backend add " VIP " " BE1 " check none");
	must(&cur, "backend add " VIP " " BE2);
	assert_int_equal(chlb_state_finalize(&cur, err, sizeof(err)), 0);
	/* the same file again: no table change, nothing for the checker */
	apply_file(&next, &cur,
		   "service add " VIP " algo jump check tcp interval 500 timeout 200 panic 10\n"
		   "backend add " VIP " " BE2 "\n"
		   "backend add " VIP " " BE1 " check none\n");
	assert_true(chlb_svc_equal(svc(&cur, VIP), svc(&next, VIP)));
	assert_true(chlb_svc_health_equal(svc(&cur, VIP), svc(&next, VIP)));
	chlb_state_free(&next);
	/* a file that re-declares the service without checks: back to the defaults */
	apply_file(&next, &cur,
		   "service add " VIP " algo jump\n"
		   "backend add " VIP " " BE1 "\n"
		   "backend add " VIP " " BE2 "\n");
	assert_true(chlb_svc_equal(svc(&cur, VIP), svc(&next, VIP)));
	assert_false(chlb_svc_health_equal(svc(&cur, VIP), svc(&next, VIP)));
	chlb_check_effective(svc(&next, VIP), be(&next, VIP, BE1), &k);
	assert_int_equal(k.type, CHLB_CHECK_NONE);
	assert_int_equal(k.interval_ms, CHLB_CHECK_INTERVAL_MS);
	assert_int_equal(svc(&next, VIP)->health.panic_pct, CHLB_PANIC_PCT);
	chlb_state_free(&next);
	chlb_state_free(&cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(every_keyword_lands),
		cmocka_unit_test(backend_override_merges),
		cmocka_unit_test(bad_values_refused),
		cmocka_unit_test(save_load_round_trip),
		cmocka_unit_test(no_checks_unchanged),
		cmocka_unit_test(check_change_is_no_table_change),
		cmocka_unit_test(plan_names_health_change_only_when_it_is),
		cmocka_unit_test(diff_names_check_changes),
		cmocka_unit_test(apply_takes_the_files_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
