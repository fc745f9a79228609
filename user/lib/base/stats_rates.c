// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Rates between two `stats` replies of one reader (stats_rates.h). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "base/stats_rates.h"

static bool get_i64(json_object *o, const char *k, int64_t *v)
{
	json_object *x;

	if (!o || !json_object_object_get_ex(o, k, &x) || !x)
		return false;
	*v = json_object_get_int64(x);
	return true;
}

static bool same_key(json_object *a, json_object *b, const char *k)
{
	json_object *x, *y;

	if (!json_object_object_get_ex(a, k, &x) || !json_object_object_get_ex(b, k, &y))
		return false;
	if (!x || !y)
		return !x && !y;
	return !strcmp(json_object_get_string(x), json_object_get_string(y));
}

/* The row of arr with the same identity (k1, k2) as row, or NULL. */
static json_object *find_row(json_object *arr, json_object *row, const char *k1, const char *k2)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);

		if (same_key(e, row, k1) && same_key(e, row, k2))
			return e;
	}
	return NULL;
}

static json_object *get_arr(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_array)
		   ? v
		   : NULL;
}

static void add_rate(json_object *o, const char *k, double v)
{
	json_object_object_add(o, k, json_object_new_double(v));
}

/* Rates of one row; none when a counter went down. */
static void row_rates(json_object *prev, json_object *cur, double dt)
{
	static const char *const fields[] = { "packets", "bytes", "new_flows", "no_route" };
	static const char *const rates[] = { "pps", "bps", "new_flows_per_s", "no_route_per_s" };
	int64_t d[4];

	for (int i = 0; i < 4; i++) {
		int64_t a, b;

		if (!get_i64(prev, fields[i], &a) || !get_i64(cur, fields[i], &b) || b < a)
			return;
		d[i] = b - a;
	}
	for (int i = 0; i < 4; i++)
		add_rate(cur, rates[i], (i == 1 ? 8.0 : 1.0) * (double)d[i] / dt);
}

static void rows_rates(json_object *prev, json_object *cur, const char *k, const char *k1,
		       const char *k2, double dt)
{
	json_object *pa = get_arr(prev, k), *ca = get_arr(cur, k);

	for (size_t i = 0; ca && i < json_object_array_length(ca); i++) {
		json_object *row = json_object_array_get_idx(ca, i);
		json_object *p = find_row(pa, row, k1, k2);

		if (p)
			row_rates(p, row, dt);
	}
}

static void global_rates(json_object *prev, json_object *cur, double dt)
{
	json_object *pg, *cg, *out;

	if (!json_object_object_get_ex(prev, "global", &pg) ||
	    !json_object_object_get_ex(cur, "global", &cg) || !pg || !cg)
		return;
	out = json_object_new_object();
	json_object_object_foreach(cg, k, v)
	{
		int64_t a, b = json_object_get_int64(v);

		if (get_i64(pg, k, &a) && b >= a)
			add_rate(out, k, (double)(b - a) / dt);
	}
	json_object_object_add(cur, "global_per_s", out);
}

double chlb_stats_rates(json_object *prev, json_object *cur)
{
	int64_t t0, t1, r0 = 0, r1 = 0;
	double dt;

	if (!get_i64(prev, "time_ns", &t0) || !get_i64(cur, "time_ns", &t1) || t1 <= t0)
		return -1;
	dt = (double)(t1 - t0) / 1e9;
	add_rate(cur, "interval_s", dt);
	get_i64(prev, "resets", &r0);
	get_i64(cur, "resets", &r1);
	if (r0 != r1)
		return dt; /* zeroed in between: differences mean nothing */
	rows_rates(prev, cur, "services", "service", "id", dt);
	rows_rates(prev, cur, "backends", "slot", "gen", dt);
	global_rates(prev, cur, dt);
	return dt;
}
