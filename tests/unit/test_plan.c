// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --dry-run (plan.c): the share that moves is right for a membership
 * change (keyspace), and for a hash-field change, where every flow gets
 * another hash: with n equal backends a re-keyed flow stays only by chance
 * (1/n), so about 1 - 1/n of new flows move (not 0%, which is what the same
 * hash decided in both tables says). What happens to running flows is
 * stated for TCP and UDP, naming removed backends.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "config/plan.h"

static void exec(struct chlb_state *st, const char *text)
{
	char err[CHLB_ERR_MAX * 2];

	if (chlb_state_exec_text(st, text, "t", err, sizeof(err)))
		fail_msg("%s: %s", text, err);
}

/* The plan of cur + change, for the one service it touches. */
static json_object *plan(const char *cur_text, const char *change)
{
	struct chlb_state cur, next;
	json_object *p, *svcs, *s;

	chlb_state_init(&cur);
	exec(&cur, cur_text);
	assert_int_equal(chlb_state_copy(&next, &cur), 0);
	exec(&next, change);
	p = chlb_plan(&cur, &next);
	assert_true(json_object_object_get_ex(p, "services", &svcs));
	assert_int_equal(json_object_array_length(svcs), 1);
	s = json_object_get(json_object_array_get_idx(svcs, 0));
	json_object_put(p);
	chlb_state_free(&cur);
	chlb_state_free(&next);
	return s;
}

static double num(json_object *o, const char *k)
{
	json_object *v;

	assert_true(json_object_object_get_ex(o, k, &v));
	return json_object_get_double(v);
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		return "";
	return json_object_get_string(v);
}

static void assert_near(double got, double want, double tol)
{
	if (got < want - tol || got > want + tol)
		fail_msg("%.4f, want %.4f +- %.4f", got, want, tol);
}

#define THREE_JUMP                                                                       \
	"service add 10.0.0.10:80/tcp algo jump\n"                                       \
	"backend add 10.0.0.10:80/tcp 10.1.0.2\nbackend add 10.0.0.10:80/tcp 10.1.0.3\n" \
	"backend add 10.0.0.10:80/tcp 10.1.0.4\n"

static void hash_change_moves_new_flows(void **unused)
{
	json_object *s = plan(THREE_JUMP, "service set 10.0.0.10:80/tcp hash src\n");

	/* jump's three shares are exactly 1/3: a re-keyed flow stays with p = 1/3 */
	assert_near(num(s, "moved"), 2.0 / 3, 0.005);
	assert_string_equal(str(s, "basis"), "flows");
	assert_string_equal(str(s, "hash_from"), "5tuple");
	assert_string_equal(str(s, "hash_to"), "src");
	assert_string_equal(str(s, "established"),
			    "established connections keep their connection entries and their "
			    "backends");
	json_object_put(s);
	/* and back */
	s = plan(THREE_JUMP "service set 10.0.0.10:80/tcp hash src\n",
		 "service set 10.0.0.10:80/tcp hash 5tuple\n");
	assert_near(num(s, "moved"), 2.0 / 3, 0.005);
	assert_string_equal(str(s, "hash_to"), "5tuple");
	json_object_put(s);
}

static void hash_change_many_backends(void **unused)
{
	char text[4096];
	int n = 0;
	json_object *s;

	n += snprintf(text + n, sizeof(text) - n,
		      "service add [2001:db8::10]:0/udp algo maglev table 4099\n");
	for (int i = 1; i <= 20; i++)
		n += snprintf(text + n, sizeof(text) - n,
			      "backend add [2001:db8::10]:0/udp 2001:db8::%d\n", i);
	/* IPv6, every port, 20 backends: "almost every new flow" is 1 - 1/20 */
	s = plan(text, "service set [2001:db8::10]:0/udp hash src\n");
	assert_near(num(s, "moved"), 0.95, 0.01);
	assert_non_null(strstr(str(s, "established"), "UDP flows without a connection entry move"));
	json_object_put(s);
}

static void membership_change_is_keyspace(void **unused)
{
	json_object *s = plan(THREE_JUMP, "backend add 10.0.0.10:80/tcp 10.1.0.5\n");

	/* jump moves exactly the new backend's share */
	assert_near(num(s, "moved"), 0.25, 0.005);
	assert_string_equal(str(s, "basis"), "keyspace");
	assert_string_equal(str(s, "hash_from"), "");
	json_object_put(s);

	s = plan(THREE_JUMP, "backend del 10.0.0.10:80/tcp 10.1.0.3\n");
	assert_string_equal(str(s, "established"),
			    "established connections keep their connection entries and their "
			    "backends; those of removed backends (10.1.0.3) are decided again");
	json_object_put(s);

	/* options the view carries only: nothing moves, and the plan says 0 */
	s = plan(THREE_JUMP, "service set 10.0.0.10:80/tcp mtu 1500\n");
	assert_near(num(s, "moved"), 0, 0);
	json_object_put(s);

	s = plan("service add 10.0.0.20:53/udp algo jump\nbackend add 10.0.0.20:53/udp 10.1.0.2\n",
		 "backend add 10.0.0.20:53/udp 10.1.0.3\n");
	assert_non_null(strstr(str(s, "established"), "active UDP flows keep their backends"));
	/* a new UDP flow has no SYN: the oldest table decides it until it leaves the view */
	assert_non_null(strstr(str(s, "established"), "new UDP flows go by the oldest table"));
	assert_non_null(strstr(str(s, "established"), "(for the UDP timeout and a second)"));
	json_object_put(s);

	/* a forwarding change moves nothing, but every established packet changes form */
	s = plan(THREE_JUMP, "service set 10.0.0.10:80/tcp fwd l2dsr\n");
	assert_near(num(s, "moved"), 0, 0);
	assert_non_null(strstr(str(s, "established"),
			       "; forwarding ipip -> l2dsr: their packets arrive unencapsulated"));
	json_object_put(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hash_change_moves_new_flows),
		cmocka_unit_test(hash_change_many_backends),
		cmocka_unit_test(membership_change_is_keyspace),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
