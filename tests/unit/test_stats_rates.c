// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats_rates.c: rates from two `stats` replies of one reader. Two readers
 * reading the same counters at interleaved times each get the rate over
 * their own interval; a reset between two reads, a new occupant of a
 * backend slot, a new row or counters that went down give no rate.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>
#include "base/stats_rates.h"

/* A reply as chlbd builds it: one service, one backend slot, two reasons. */
static json_object *reply(double t_s, long long resets, long long pk, long long by, long long nf,
			  long long nr, int gen)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"time_ns\": %lld, \"resets\": %lld,"
		 " \"global\": {\"forwarded\": %lld, \"drop_no_route\": %lld},"
		 " \"services\": [{\"service\": \"10.0.0.10:80/tcp\", \"id\": 0, \"packets\": %lld,"
		 " \"bytes\": %lld, \"new_flows\": %lld, \"no_route\": %lld}],"
		 " \"backends\": [{\"service\": \"10.0.0.10:80/tcp\", \"address\": \"10.1.0.2\","
		 " \"slot\": 3, \"gen\": %d, \"packets\": %lld, \"bytes\": %lld,"
		 " \"new_flows\": %lld, \"no_route\": %lld}]}",
		 (long long)(t_s * 1e9), resets, pk, nr, pk, by, nf, nr, gen, pk, by, nf, nr);
	return json_tokener_parse(buf);
}

static json_object *row(json_object *r, const char *arr, size_t i)
{
	json_object *a;

	assert_true(json_object_object_get_ex(r, arr, &a));
	return json_object_array_get_idx(a, i);
}

static double num(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		fail_msg("no '%s' in %s", k, json_object_to_json_string(o));
	return json_object_get_double(v);
}

static bool has(json_object *o, const char *k)
{
	return json_object_object_get_ex(o, k, NULL);
}

/* The data plane forwards 1000 packets/s of 100 bytes, 10 new flows/s, 2 no-route drops/s. */
static json_object *at(double t)
{
	return reply(t, 0, (long long)(1000 * t), (long long)(100000 * t), (long long)(10 * t),
		     (long long)(2 * t), 1);
}

static void two_readers_interleaved(void **unused)
{
	/* A reads every 2 s, B every 0.5 s, both at once: each its own interval and rate */
	json_object *a = at(10), *b = at(10.25);

	for (int i = 1; i <= 8; i++) {
		json_object *nb = at(10.25 + 0.5 * i);

		assert_true(chlb_stats_rates(b, nb) > 0);
		assert_float_equal(num(nb, "interval_s"), 0.5, 1e-9);
		assert_float_equal(num(row(nb, "backends", 0), "pps"), 1000, 1e-6);
		json_object_put(b);
		b = nb;
		if (i % 4 == 0) {
			json_object *na = at(10 + 2.0 * (i / 4));

			assert_float_equal(chlb_stats_rates(a, na), 2.0, 1e-9);
			assert_float_equal(num(na, "interval_s"), 2.0, 1e-9);
			assert_float_equal(num(row(na, "services", 0), "pps"), 1000, 1e-6);
			assert_float_equal(num(row(na, "services", 0), "bps"), 800000, 1e-3);
			assert_float_equal(num(row(na, "backends", 0), "new_flows_per_s"), 10,
					   1e-9);
			assert_float_equal(num(row(na, "backends", 0), "no_route_per_s"), 2, 1e-9);
			assert_float_equal(
			    num(json_object_object_get(na, "global_per_s"), "forwarded"), 1000,
			    1e-6);
			json_object_put(a);
			a = na;
		}
	}
	json_object_put(a);
	json_object_put(b);
}

static void reset_between_reads(void **unused)
{
	json_object *p = at(10), *c = reply(11, 1, 5, 500, 0, 0, 1);

	/* counters zeroed in between: the interval, no rates */
	assert_float_equal(chlb_stats_rates(p, c), 1, 1e-9);
	assert_false(has(row(c, "services", 0), "pps"));
	assert_false(has(row(c, "backends", 0), "pps"));
	assert_false(has(c, "global_per_s"));
	json_object_put(p);
	json_object_put(c);
}

static void new_occupant_and_restart(void **unused)
{
	/* slot 3's new occupant (gen 2): its row is another backend's */
	json_object *p = at(10), *c = reply(11, 0, 20000, 2000000, 200, 40, 2);

	chlb_stats_rates(p, c);
	assert_false(has(row(c, "backends", 0), "pps"));
	assert_true(has(row(c, "services", 0), "pps"));
	json_object_put(c);
	/* counters that went down (maps recreated): no rates */
	c = reply(11, 0, 3, 300, 0, 0, 1);
	chlb_stats_rates(p, c);
	assert_false(has(row(c, "services", 0), "pps"));
	assert_false(has(row(c, "backends", 0), "pps"));
	json_object_put(c);
	json_object_put(p);
}

static void no_time(void **unused)
{
	json_object *p = at(10), *c = at(10), *e = json_tokener_parse("{}");

	assert_true(chlb_stats_rates(p, c) < 0); /* time did not advance */
	assert_false(has(c, "interval_s"));
	assert_true(chlb_stats_rates(e, c) < 0);
	assert_true(chlb_stats_rates(c, e) < 0);
	json_object_put(p);
	json_object_put(c);
	json_object_put(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_readers_interleaved),
		cmocka_unit_test(reset_between_reads),
		cmocka_unit_test(new_occupant_and_restart),
		cmocka_unit_test(no_time),
	};

	return cmocka_run_group_tests_name("stats_rates", tests, NULL, NULL);
}
