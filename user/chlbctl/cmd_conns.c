// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl conns [VIP] [--backend ADDR] [--persist] [--json]: the connection
 * table, the analogue of `ipvsadm -Lnc`; with --persist, the client affinity
 * entries of persist services instead. Text: the entries per service (live, ended,
 * stale, held) and per backend. JSON: the same counts plus the entries
 * themselves, each with its state (at most chlbd's CHLBD_CONNS_LIST_MAX,
 * then "truncated": true).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chlbctl.h"
#include "client.h"

static long long num(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? (long long)json_object_get_int64(v) : 0;
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : "-";
}

static void show_conns(json_object *r)
{
	json_object *svcs, *bes;
	long long size = num(r, "ct_size"), n = num(r, "entries");

	printf("connection table: %lld of %lld entries (%.2f%%)\n", n, size,
	       size ? 100.0 * (double)n / (double)size : 0.0);
	/* HELD: placeholders waiting for a sync peer's entry, their flows' packets dropped */
	printf("%-44s %10s %10s %10s %10s %10s\n", "SERVICE / BACKEND", "ENTRIES", "LIVE", "ENDED",
	       "STALE", "HELD");
	if (!json_object_object_get_ex(r, "services", &svcs))
		return;
	for (size_t i = 0; i < json_object_array_length(svcs); i++) {
		json_object *s = json_object_array_get_idx(svcs, i);

		printf("%-44s %10lld %10lld %10lld %10lld %10lld\n", str(s, "service"),
		       num(s, "entries"), num(s, "live"), num(s, "ended"), num(s, "stale"),
		       num(s, "held"));
		if (!json_object_object_get_ex(s, "backends", &bes))
			continue;
		for (size_t j = 0; j < json_object_array_length(bes); j++) {
			json_object *b = json_object_array_get_idx(bes, j);
			char name[96];

			snprintf(name, sizeof(name), "  %s (slot %s, gen %s)", str(b, "address"),
				 str(b, "slot"), str(b, "gen"));
			printf("%-44s %10s %10lld %10lld\n", name, "", num(b, "live"),
			       num(b, "ended"));
		}
	}
	if (json_object_object_get_ex(r, "other", NULL))
		printf("entries of no configured service: %lld\n", num(r, "other"));
}

/* conns --persist: the client affinity entries, one line each */
static void show_persist(json_object *r)
{
	json_object *a;
	long long size = num(r, "persist_size"), n = num(r, "entries");

	printf("client affinity table: %lld of %lld entries (%.2f%%), %lld inserts, %lld "
	       "evictions\n",
	       n, size, size ? 100.0 * (double)n / (double)size : 0.0, num(r, "inserts"),
	       num(r, "evictions"));
	printf("%-44s %-28s %-40s %8s %s\n", "CLIENT", "SERVICE", "BACKEND", "AGE_S", "HOLDS");
	if (!json_object_object_get_ex(r, "persist", &a))
		return;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i), *h;

		printf("%-44s %-28s %-40s %8s %s\n", str(e, "client"), str(e, "service"),
		       str(e, "backend"), str(e, "age_s"),
		       json_object_object_get_ex(e, "holds", &h) && json_object_get_boolean(h)
			   ? "yes"
			   : "no");
	}
	if (json_object_get_boolean(json_object_object_get(r, "truncated")))
		printf("(%lld listed: the list stops there)\n", num(r, "listed"));
}

int do_conns(int argc, char **argv)
{
	const char *vip = NULL, *backend = NULL;
	json_object *r;
	char *line;
	bool persist;
	int rc;

	if (ctl_take_flag(&argc, argv, "--json", "-j"))
		ctl.json = true;
	persist = ctl_take_flag(&argc, argv, "--persist", NULL);
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--backend") || !strcmp(argv[i], "-b")) {
			if (i + 1 >= argc)
				return p_usage("conns: '%s' needs a backend address", argv[i]);
			if (backend)
				return p_usage("conns: '%s' given twice", argv[i]);
			backend = argv[++i];
		} else if (argv[i][0] == '-') {
			return p_usage("conns: unknown option '%s' (expected --backend ADDR, "
				       "--persist, --json)",
				       argv[i]);
		} else if (!vip) {
			vip = argv[i];
		} else {
			return p_usage("conns: unexpected argument '%s'", argv[i]);
		}
	}
	/* the entries themselves only for JSON: text shows the counts */
	if (asprintf(&line, "conns%s%s%s%s%s", vip ? " " : "", vip ? vip : "",
		     backend ? " backend " : "", backend ? backend : "",
		     persist	? " persist"
		     : ctl.json ? " list"
				: "") < 0)
		return CHLBCTL_EXIT_FAIL;
	rc = ctl_check_statement(line);
	if (!rc)
		rc = ctl_request(line, &r);
	free(line);
	if (rc)
		return rc;
	if (ctl.json)
		ctl_print_json(r);
	else if (persist)
		show_persist(r);
	else
		show_conns(r);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}
