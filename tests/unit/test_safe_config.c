// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Safe configuration, the parts without a daemon: the diff a reload logs
 * (chlb_state_diff(), with changes made since the last load marked), the
 * `force` word kept through save and apply, and the error classes that
 * decide chlbctl's exit code (a bad value, or a conflict with the state).
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

static void exec(struct chlb_state *st, const char *text)
{
	char err[CHLB_ERR_MAX * 2];

	if (chlb_state_exec_text(st, text, "t", err, sizeof(err)))
		fail_msg("%s: %s", text, err);
}

struct lines {
	char text[8192];
	size_t len;
};

static void collect(void *ctx, const char *line)
{
	struct lines *l = ctx;

	l->len += (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s\n", line);
}

#define A "10.0.0.10:80/tcp"
#define B "10.0.0.20:*/udp"
#define BASE                                                                  \
	"service add " A " algo ring\nbackend add " A " 10.1.0.2\n"           \
	"backend add " A " 10.1.0.3 weight 50\nservice add " B " algo jump\n" \
	"backend add " B " 10.1.0.4\n"

static void diff_lines(void **unused)
{
	struct chlb_state cur, next;
	struct chlb_diff_count n;
	struct lines l = { 0 };

	chlb_state_init(&cur);
	chlb_state_init(&next);
	exec(&cur, BASE);
	exec(&next,
	     "service add " A " algo maglev table 65537 fwd l2dsr\n"
	     "backend add " A " 10.1.0.2 weight 0\nbackend add " A " 10.1.0.5\n"
	     "service add 10.0.0.30:443/tcp force\nbackend add 10.0.0.30:443/tcp 10.1.0.6\n");
	assert_int_equal(chlb_state_diff(&cur, &next, NULL, collect, &l, &n), 7);
	assert_string_equal(
	    l.text, "service set " A " algo ring -> maglev, table 65537, fwd ipip -> l2dsr\n"
		    "backend set " A " 10.1.0.2 weight 100 -> 0\n"
		    "backend add " A " 10.1.0.5 weight 100\n"
		    "backend del " A " 10.1.0.3\n"
		    "service add 10.0.0.30:443/tcp algo ring vnodes 160 fwd ipip hash 5tuple "
		    "force\n"
		    "backend add 10.0.0.30:443/tcp 10.1.0.6 weight 100\n"
		    "service del " B " (1 backends)\n");
	assert_int_equal(n.svc_add, 1);
	assert_int_equal(n.svc_set, 1);
	assert_int_equal(n.svc_del, 1);
	assert_int_equal(n.be_add, 2);
	assert_int_equal(n.be_set, 1);
	assert_int_equal(n.be_del, 1);
	/* the same state: nothing */
	assert_int_equal(chlb_state_diff(&cur, &cur, NULL, NULL, NULL, &n), 0);
	chlb_state_free(&cur);
	chlb_state_free(&next);
}

/*
 * A reload of an unchanged file after runtime changes: every line undoes
 * one of them, and says so; what the file itself changed is not marked.
 */
static void diff_marks_runtime_changes(void **unused)
{
	struct chlb_state base, cur, next;
	struct lines l = { 0 };

	chlb_state_init(&base);
	chlb_state_init(&next);
	exec(&base, BASE);
	assert_int_equal(chlb_state_copy(&cur, &base), 0);
	/* what chlbctl did since the file was applied */
	exec(&cur, "backend set " A " 10.1.0.2 weight 0\nbackend add " A " 10.1.0.9\n"
		   "backend del " A " 10.1.0.3\nservice del " B "\n"
		   "service add 10.0.0.40:80/tcp\nservice set " A " hash src\n");
	/* the file again, plus one change of its own */
	exec(&next, BASE "backend add " B " 10.1.0.7\n");
	chlb_state_diff(&cur, &next, &base, collect, &l, NULL);
	assert_string_equal(
	    l.text, "service set " A " hash src -> 5tuple (undoes a change made since the "
		    "last load)\n"
		    "backend set " A " 10.1.0.2 weight 0 -> 100 (undoes a change made since "
		    "the last load)\n"
		    "backend add " A " 10.1.0.3 weight 50 (undoes a change made since the "
		    "last load)\n"
		    "backend del " A " 10.1.0.9 (undoes a change made since the last load)\n"
		    "service add " B " algo jump fwd ipip hash 5tuple (undoes a change made "
		    "since the last load)\n"
		    "backend add " B " 10.1.0.4 weight 100 (undoes a change made since the "
		    "last load)\n"
		    "backend add " B " 10.1.0.7 weight 100\n"
		    "service del 10.0.0.40:80/tcp (0 backends) (undoes a change made since "
		    "the last load)\n");
	chlb_state_free(&base);
	chlb_state_free(&cur);
	chlb_state_free(&next);
}

/* `force` is kept: save writes it, the saved text applies again to the same state */
static void force_round_trip(void **unused)
{
	struct chlb_state a, b;
	char *ta, *tb;

	chlb_state_init(&a);
	chlb_state_init(&b);
	exec(&a,
	     "service add 10.1.0.1:22/tcp algo jump force\nbackend add 10.1.0.1:22/tcp 10.1.0.2\n"
	     "service add 10.0.0.10:*/tcp\nservice set 10.0.0.10:*/tcp force\n"
	     "service add 10.0.0.11:80/tcp\n");
	ta = chlb_state_format(&a, false);
	assert_non_null(strstr(ta, "service add 10.1.0.1:22/tcp algo jump buckets 1 fwd ipip hash "
				   "5tuple force\n"));
	assert_non_null(strstr(ta, "service add 10.0.0.10:*/tcp algo ring vnodes 160 fwd ipip "
				   "hash 5tuple force\n"));
	assert_non_null(strstr(ta, "service add 10.0.0.11:80/tcp algo ring vnodes 160 fwd ipip "
				   "hash 5tuple\n"));
	exec(&b, ta);
	tb = chlb_state_format(&b, false);
	assert_string_equal(ta, tb);
	/* force alone rebuilds nothing */
	assert_true(chlb_svc_equal(chlb_state_find(&a, &b.svc[0].vip), &b.svc[0]));
	free(ta);
	free(tb);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

/* conflicts with the state are told apart from bad values (exit 1 vs 2) */
static void error_classes(void **unused)
{
	static const struct {
		const char *change;
		int rc;
		const char *msg;
	} cases[] = {
		{ "service add " A, -EEXIST, "already exists" },
		{ "backend add " A " 10.1.0.2", -EEXIST, "already in the service" },
		{ "backend add 10.0.0.99:80/tcp 10.1.0.2", -ENOENT, "no such service" },
		{ "backend set " A " 10.1.0.77 weight 5", -ENOENT, "no such backend" },
		{ "backend del " A " 10.1.0.77", -ENOENT, "no such backend" },
		{ "service del 10.0.0.99:80/tcp", -ENOENT, "no such service" },
		{ "service add 10.0.0.11:80/tcp algo maglev table 65536", -EINVAL,
		  "must be prime" },
		{ "service set " A " algo maglev table 2", -EINVAL, "must be larger than" },
		{ "backend add " A " 2001:db8::9", 0, "" },
		{ "service add 10.0.0.12:80/tcp fwd l2dsr\nbackend add 10.0.0.12:80/tcp "
		  "2001:db8::9",
		  -EINVAL, "fwd l2dsr needs an IPv4 backend" },
		{ "service add 10.0.0.12/tcp", -EINVAL, "'10.0.0.12:*/tcp'" },
		{ "service add 10.0.0.12:80/tcp vnodes 0", -EINVAL, "'0'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct chlb_state st;
		char err[CHLB_ERR_MAX * 2] = "";
		int rc;

		chlb_state_init(&st);
		exec(&st, BASE);
		rc = chlb_state_exec_text(&st, cases[i].change, "t", err, sizeof(err));
		if (rc != cases[i].rc || !strstr(err, cases[i].msg))
			fail_msg("'%s': %d '%s', want %d '%s'", cases[i].change, rc, err,
				 cases[i].rc, cases[i].msg);
		assert_int_equal(chlb_state_bad_value(rc), rc == -EINVAL);
		chlb_state_free(&st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(diff_lines),
		cmocka_unit_test(diff_marks_runtime_changes),
		cmocka_unit_test(force_round_trip),
		cmocka_unit_test(error_classes),
	};

	return cmocka_run_group_tests_name("safe_config", tests, NULL, NULL);
}
