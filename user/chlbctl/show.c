// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Aligned tables and units for people; --json prints the reply as is. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "show.h"
#include "base/json_out.h"
#include "base/util.h"

/* short names for the tables below: a field's text ("-" when absent), number, array */
static const char *s(json_object *o, const char *k)
{
	return chlb_json_str(o, k, "-");
}
static double d(json_object *o, const char *k)
{
	return chlb_json_double(o, k, 0);
}
static json_object *arr(json_object *o, const char *k)
{
	return chlb_json_array(o, k);
}

static const char *param(json_object *e, char *buf, size_t len)
{
	json_object *v;

	if (json_object_object_get_ex(e, "vnodes", &v))
		snprintf(buf, len, "vnodes %d", json_object_get_int(v));
	else if (json_object_object_get_ex(e, "table", &v))
		snprintf(buf, len, "table %d", json_object_get_int(v));
	else if (json_object_object_get_ex(e, "buckets", &v))
		snprintf(buf, len, "buckets %d", json_object_get_int(v));
	else
		snprintf(buf, len, "-");
	return buf;
}

/* "  check http /healthz 200-399 every 2000 ms ...": a service's check, when it has one */
static void show_check(json_object *e)
{
	json_object *c;

	if (!json_object_object_get_ex(e, "check", &c))
		return;
	if (!strcmp(s(c, "type"), "none") && !d(c, "backend_overrides"))
		return;
	printf("  check %s", s(c, "type"));
	if (!strcmp(s(c, "type"), "http"))
		printf(" %s expect %s%s%s", s(c, "path"), s(c, "expect"),
		       *s(c, "host") ? " host " : "", s(c, "host"));
	if (d(c, "port"))
		printf(" port %s", s(c, "port"));
	printf(" via %s interval %s ms timeout %s ms rise %s fall %s; on-down %s, slow-start %s s, "
	       "panic %s%%; %s backend override(s)\n",
	       s(c, "via"), s(c, "interval_ms"), s(c, "timeout_ms"), s(c, "rise"), s(c, "fall"),
	       s(c, "on_down"), s(c, "slow_start_s"), s(c, "panic_pct"), s(c, "backend_overrides"));
}

/* "  vnodes auto: K 4096 for target 1.05, balance 1.0320 (met)": a ring with vnodes auto */
static void show_vnodes_auto(json_object *e)
{
	json_object *v;
	char t[16];

	if (!json_object_object_get_ex(e, "vnodes_auto", &v) || !json_object_get_boolean(v))
		return;
	printf("  vnodes auto: K %s for target %s, balance %s (%s)\n", s(e, "vnodes"),
	       chlb_fmt_milli((__u32)(d(e, "target_balance") * 1000 + 0.5), t, sizeof(t)),
	       s(e, "vnodes_balance"),
	       json_object_object_get_ex(e, "target_met", &v) && json_object_get_boolean(v)
		   ? "met"
		   : "missed: the largest K the ring's vnode limit allows");
}

/* "  persist: 300 s, netmask /24": a service with client persistence */
static void show_persist(json_object *e)
{
	json_object *v;

	if (!json_object_object_get_ex(e, "persist_s", &v))
		return;
	printf("  persist: %s s, netmask /%s\n", json_object_get_string(v), s(e, "netmask"));
}

void show_services(json_object *r)
{
	json_object *a = arr(r, "services");
	char p[32];

	printf("%-28s %-6s %-14s %-5s %-6s %8s %-8s %6s %6s %9s\n", "SERVICE", "ALGO", "PARAM",
	       "FWD", "HASH", "BACKENDS", "FINGERPR", "TABLES", "SWAPS", "LAST_SWAP");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i);

		printf("%-28s %-6s %-14s %-5s %-6s %8s %-8s %6s %6s %7.2fms\n", s(e, "service"),
		       s(e, "algo"), param(e, p, sizeof(p)), s(e, "fwd"), s(e, "hash"),
		       s(e, "backends"), s(e, "fingerprint"), s(e, "tables"), s(e, "swaps"),
		       d(e, "last_swap_ms"));
		show_vnodes_auto(e);
		show_persist(e);
		show_check(e);
	}
}

void show_backends(json_object *r)
{
	json_object *a = arr(r, "backends");

	/*
	 * BUCKET: jump and jtable, the backend's bucket (desired state; "-" for
	 * the others). CONNS: live connection entries, what a drain waits for
	 * (ended ones are kept too); last, as before buckets existed, so scripts
	 * that read the last column keep working. A checked backend gets a
	 * second line: its health, the weight the table holds (0 down, a
	 * slow-start step), the probe path, probes sent/failed, since when, the
	 * last result (and why, when down).
	 */
	printf("%-28s %-40s %6s %5s %5s %-8s %6s %8s\n", "SERVICE", "BACKEND", "WEIGHT", "SLOT",
	       "GEN", "STATE", "BUCKET", "CONNS");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *h = s(e, "health");

		printf("%-28s %-40s %6s %5s %5s %-8s %6s %8s\n", s(e, "service"), s(e, "address"),
		       s(e, "weight"), s(e, "slot"), s(e, "gen"), s(e, "state"), s(e, "bucket"),
		       s(e, "conns"));
		if (!strcmp(h, "-") || !strcmp(h, "none"))
			continue;
		printf(
		    "    health %s%s, effective weight %s, via %s, probes %s/%s failed, for %ss: "
		    "%s\n",
		    h, d(e, "panic") ? " (panic: ignored)" : "", s(e, "effective_weight"),
		    s(e, "via"), s(e, "probes"), s(e, "probes_failed"), s(e, "since_s"),
		    strcmp(h, "down") ? s(e, "last") : s(e, "reason"));
	}
}

static void human(double v, const char *unit, char *buf, size_t len)
{
	const char *pfx[] = { "", "k", "M", "G", "T" };
	int i = 0;

	if (v < 1000 && !unit[0]) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, "%.1f%s%s", v, pfx[i], unit);
}

/* A rate, or "-" when the row has none (new, or a reset in the interval). */
static void rate(json_object *e, const char *k, const char *unit, char *buf, size_t len)
{
	if (json_object_object_get_ex(e, k, NULL))
		human(d(e, k), unit, buf, len);
	else
		snprintf(buf, len, "-");
}

static void counters_head(bool rates, int w)
{
	printf("  %-*s %10s %10s %10s %10s", w, "", "PACKETS", "BYTES", "NEW_FLOWS", "NO_ROUTE");
	if (rates)
		printf(" %12s %12s %10s", "RATE", "BITRATE", "NEW/S");
	printf("\n");
}

static void counters_row(const char *name, json_object *e, bool rates, int w)
{
	char pk[32], by[32], pps[32], bps[32], nf[32];

	human(d(e, "packets"), "", pk, sizeof(pk));
	human(d(e, "bytes"), "B", by, sizeof(by));
	printf("  %-*s %10s %10s %10s %10s", w, name, pk, by, s(e, "new_flows"), s(e, "no_route"));
	if (rates) {
		rate(e, "pps", "pps", pps, sizeof(pps));
		rate(e, "bps", "bps", bps, sizeof(bps));
		rate(e, "new_flows_per_s", "/s", nf, sizeof(nf));
		printf(" %12s %12s %10s", pps, bps, nf);
	}
	printf("\n");
}

/*
 * One `stats` reply, or a --watch frame: the same reply with the rates
 * chlbctl computed over its interval (stats_rates.h).
 */
/* Entry sync between LB hosts (chlbd --sync-peer): counters, then a line per peer. */
static void show_sync(json_object *r)
{
	json_object *y, *dr, *rj, *a;

	if (!json_object_object_get_ex(r, "sync", &y) || !y)
		return;
	dr = json_object_object_get(y, "dropped");
	rj = json_object_object_get(y, "rejected");
	printf("sync (listening on %s): %s records sent, %s received, %s applied, %s kept; "
	       "dumps %s sent, %s received\n",
	       s(y, "listen"), s(y, "records_sent"), s(y, "records_received"), s(y, "applied"),
	       s(y, "kept"), s(y, "dumps_sent"), s(y, "dumps_received"));
	printf("  deferred (service or backend not here yet): %s, %s of them applied later, %s "
	       "waiting\n",
	       s(y, "deferred"), s(y, "deferred_applied"), s(y, "waiting"));
	printf("  dropped: %s no service, %s no backend, %s stale, %s peer slow, %s error; "
	       "rejected: %s bad input, %s truncated, %s unknown peer, %s auth\n",
	       s(dr, "no_service"), s(dr, "no_backend"), s(dr, "stale"), s(dr, "peer_slow"),
	       s(dr, "error"), s(rj, "bad_input"), s(rj, "truncated"), s(rj, "unknown_peer"),
	       s(rj, "auth"));
	a = arr(y, "peers");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *p = json_object_array_get_idx(a, i);
		json_object *err = json_object_object_get(p, "error"); /* why it is not connected */

		printf("  peer %s: receiving: %s%s%s (%s records, dump %s entries); sending: %s "
		       "(%s records)\n",
		       s(p, "peer"), s(p, "receiving"), err ? ", last error: " : "",
		       err ? json_object_get_string(err) : "", s(p, "records_received"),
		       s(p, "dump_entries"),
		       json_object_get_boolean(json_object_object_get(p, "sending")) ? "yes" : "no",
		       s(p, "records_sent"));
	}
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

/* A backend row's name in `stats`: service, address, slot and state. */
static const char *be_row_name(json_object *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s (slot %s, %s)", s(e, "service"), s(e, "address"), s(e, "slot"),
		 s(e, "state"));
	return buf;
}

void show_stats(json_object *r)
{
	json_object *g, *a, *gr = NULL;
	char name[192];
	int w;
	bool rates = json_object_object_get_ex(r, "interval_s", NULL);

	if (rates)
		printf("rates over the last %.2f s%s\n", d(r, "interval_s"),
		       json_object_object_get_ex(r, "global_per_s", &gr)
			   ? ""
			   : " (none: the counters were reset in it)");
	else if (json_object_object_get_ex(r, "since_reset_s", NULL))
		printf("counters since the last reset, %.1f s ago; rates: chlbctl stats --watch\n",
		       d(r, "since_reset_s"));
	else
		printf("counters since the program was loaded; rates: chlbctl stats --watch\n");
	if (json_object_object_get_ex(r, "ct_size", NULL)) {
		char mem[32];

		human(d(r, "ct_memory_bytes"), "B", mem, sizeof(mem));
		printf("connection table: %s of %s entries (%.2f%%), %s inserts, %s evicted; "
		       "%s, %.0f B per entry\n",
		       s(r, "ct_entries"), s(r, "ct_size"),
		       d(r, "ct_size") ? 100 * d(r, "ct_entries") / d(r, "ct_size") : 0,
		       s(r, "ct_inserts"), s(r, "ct_evictions"), mem, d(r, "ct_bytes_per_entry"));
	}
	if (json_object_object_get_ex(r, "global", &g)) {
		printf("global:\n");
		json_object_object_foreach(g, k, v)
		{
			if (!json_object_get_int64(v))
				continue;
			printf("  %-20s %14lld", k, (long long)json_object_get_int64(v));
			if (gr)
				printf(" %12.1f/s", d(gr, k));
			printf("\n");
		}
	}
	/* the name column as wide as its longest row (IPv6 backends), so the counters line up */
	w = 40;
	a = arr(r, "services");
	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		w = max_int(w, (int)strlen(s(json_object_array_get_idx(a, i), "service")));
	a = arr(r, "backends");
	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		w = max_int(w, (int)strlen(be_row_name(json_object_array_get_idx(a, i), name,
						       sizeof(name))));
	counters_head(rates, w);
	a = arr(r, "services");
	printf("services:\n");
	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		counters_row(s(json_object_array_get_idx(a, i), "service"),
			     json_object_array_get_idx(a, i), rates, w);
	/* a row per (service, backend): the same address in two services is two rows */
	a = arr(r, "backends");
	printf("backends:\n");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i);

		counters_row(be_row_name(e, name, sizeof(name)), e, rates, w);
	}
	show_sync(r);
}

static const char *be(json_object *o, const char *k, char *buf, size_t len)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !v || !json_object_is_type(v, json_type_object))
		return "none";
	snprintf(buf, len, "%s (slot %s, %s)", s(v, "backend"), s(v, "slot"), s(v, "state"));
	return buf;
}

/* " (table N, fingerprint F[, adopted])": which table of the view decided, when one did */
static const char *table_ref(json_object *r, json_object *tables, const char *k, char *buf,
			     size_t len)
{
	json_object *v, *e, *ad;

	if (!json_object_object_get_ex(r, k, &v) || !tables)
		return "";
	e = json_object_array_get_idx(tables, (size_t)json_object_get_int(v));
	if (!e)
		return "";
	snprintf(buf, len, " (table %d, fingerprint %s%s)", json_object_get_int(v),
		 s(e, "fingerprint"),
		 json_object_object_get_ex(e, "adopted", &ad) && json_object_get_boolean(ad)
		     ? ", adopted"
		     : "");
	return buf;
}

/* "persist:      client 10.0.1.0/24, timeout 300 s, entry 10.0.2.2 (slot 3), 1200 ms ago, valid" */
static void show_which_persist(json_object *r)
{
	json_object *p, *e;
	char b[128];

	if (!json_object_object_get_ex(r, "persist", &p))
		return;
	printf("persist:      client %s, timeout %s s, ", s(p, "client"), s(p, "timeout_s"));
	if (!json_object_object_get_ex(p, "entry", &e) || !e) {
		printf("no affinity entry\n");
		return;
	}
	printf("entry %s, %s ms ago, %s\n", be(p, "entry", b, sizeof(b)), s(e, "age_ms"),
	       json_object_get_boolean(json_object_object_get(e, "valid")) ? "valid" : "stale");
}

void show_which(json_object *r)
{
	json_object *t = arr(r, "tables"), *c;
	char b[128], tb[96];

	printf("service:      %s (flow hash crc32c %s)\n", s(r, "service"), s(r, "crc"));
	if (json_object_object_get_ex(r, "dropped", &c)) /* the source allow-list */
		printf("dropped:      %s\n", json_object_get_string(c));
	printf("new flow:     %s%s%s\n", be(r, "new_flow", b, sizeof(b)),
	       table_ref(r, t, "new_flow_table", tb, sizeof(tb)),
	       json_object_object_get_ex(r, "new_flow_by", &c) ? ", by the client affinity entry"
							       : "");
	show_which_persist(r);
	printf("established:  %s, by %s%s\n", be(r, "established", b, sizeof(b)),
	       s(r, "established_by"), table_ref(r, t, "established_table", tb, sizeof(tb)));
	if (json_object_object_get_ex(r, "conn", &c) && c &&
	    json_object_get_boolean(json_object_object_get(c, "held"))) {
		/* a placeholder: no backend yet, every packet of the flow dropped (as `conns`) */
		printf("conn entry:   placeholder (slot %s) gen %s, held (waiting for a sync "
		       "peer's entry; the flow's packets are dropped)\n",
		       s(c, "slot"), s(c, "gen"));
	} else if (json_object_object_get_ex(r, "conn", &c) && c) {
		bool valid = json_object_get_boolean(json_object_object_get(c, "valid"));
		bool ended = json_object_get_boolean(json_object_object_get(c, "ended"));

		/* as `conns` names them: an ended entry is followed, but not counted in CONNS */
		printf("conn entry:   %s (slot %s of %s) gen %s, %s\n", s(c, "backend"),
		       s(c, "slot"), s(c, "service"), s(c, "gen"),
		       !valid  ? "stale"
		       : ended ? "valid, ended (FIN or RST seen)"
			       : "valid");
	} else
		printf("conn entry:   none\n");
	for (size_t i = 0; t && i < json_object_array_length(t); i++) {
		json_object *e = json_object_array_get_idx(t, i), *dv, *ad;
		bool adopted =
		    json_object_object_get_ex(e, "adopted", &ad) && json_object_get_boolean(ad);

		/* adopted: a previous chlbd's table, still serving until the rebuild replaces it */
		printf("table %zu:      slot %s fingerprint %s%s -> ", i, s(e, "table_slot"),
		       s(e, "fingerprint"), adopted ? " (adopted)" : "");
		if (json_object_object_get_ex(e, "decision", &dv) &&
		    json_object_is_type(dv, json_type_object))
			printf("%s (slot %s)\n", s(dv, "backend"), s(dv, "slot"));
		else
			printf("%s\n", s(e, "decision"));
	}
}

void show_plan(json_object *r)
{
	json_object *a = arr(r, "services"), *nf;

	/* what chlbd would refuse without --force (the plan is shown all the same) */
	if (json_object_object_get_ex(r, "needs_force", &nf))
		printf("needs --force: %s\n", json_object_get_string(nf));
	if (!a || !json_object_array_length(a)) {
		printf("dry run: nothing would change\n");
		return;
	}
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *e = json_object_array_get_idx(a, i), *b = arr(e, "backends"), *est;

		/* a hash change moves flows, not hash values: say which share of new flows */
		if (!strcmp(s(e, "basis"), "flows"))
			printf("%s: %s, hash %s -> %s: %.2f%% of new flows go to another backend "
			       "(they are hashed on other fields)\n",
			       s(e, "service"), s(e, "action"), s(e, "hash_from"), s(e, "hash_to"),
			       100 * d(e, "moved"));
		else
			printf("%s: %s, %.2f%% of the keyspace moves\n", s(e, "service"),
			       s(e, "action"), 100 * d(e, "moved"));
		if (json_object_object_get_ex(e, "established", &est))
			printf("  %s\n", json_object_get_string(est));
		/* what `service list` will show after it, here and on every host applying it */
		if (json_object_object_get_ex(e, "fingerprint", &est))
			printf("  table fingerprint after: %s\n", json_object_get_string(est));
		if (json_object_object_get_ex(e, "health", &est)) /* check settings */
			printf("  %s\n", json_object_get_string(est));
		if (json_object_object_get_ex(e, "allow", &est)) /* the source allow-list */
			printf("  %s\n", json_object_get_string(est));
		if (json_object_object_get_ex(e, "persist", &est)) /* client persistence */
			printf("  %s\n", json_object_get_string(est));
		for (size_t j = 0; b && j < json_object_array_length(b); j++) {
			json_object *x = json_object_array_get_idx(b, j);
			double bf = d(x, "before"), af = d(x, "after");

			printf("  %-40s %6.2f%% -> %6.2f%%%s\n", s(x, "address"), 100 * bf,
			       100 * af, bf != af ? "" : "  (unchanged)");
		}
	}
}
