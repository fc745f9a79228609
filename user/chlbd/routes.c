// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Route export (routes.h): what table --route-table holds follows what
 * chlbd serves. A full reconcile each time (list the table's chlb routes,
 * add what is missing, remove what is extra) rather than an edit per
 * change: the same code adopts a previous chlbd's routes at start, follows
 * commits, and repairs a route someone removed by hand. Nothing is added
 * until chlbd is ready (ready.h), which calls it again when it becomes so.
 */
#include <stdlib.h>
#include <string.h>
#include "chlbd.h"
#include "ctl/ctl.h"
#include "health/health.h"
#include "ready.h"
#include "routes.h"
#include "dp/route.h"

static __u64 synced_changes; /* D.rt->changes at the last sync */

/*
 * Until ready (ready.h): the routes found in the table at the first sync
 * that are kept (chlbd_ready_keeps_adopted(): a restart on its pins with its
 * configuration); a route removed meanwhile leaves the set, none joins it.
 */
static struct chlb_addr *held;
static int nheld;
static bool listed_once;

bool chlbd_vip_servable(const struct chlb_svc_cfg *svc)
{
	/*
	 * The effective form (health/health_apply.c): weights 0 for backends that are
	 * down, every configured weight in panic; what the data plane serves.
	 * A service not (yet) applied counts with its configured weights.
	 */
	const struct chlb_svc_cfg *eff = chlb_state_find(health_applied(), &svc->vip);

	if (!eff)
		eff = svc;
	for (__u32 i = 0; i < eff->nbe; i++)
		if (eff->be[i].weight > 0)
			return true;
	return false;
}

static bool addr_in(const struct chlb_addr *a, const struct chlb_addr *set, int n)
{
	for (int i = 0; i < n; i++)
		if (chlb_addr_eq(a, &set[i]))
			return true;
	return false;
}

/* The VIP addresses to route, deduplicated, into want (D.state.nsvc at most); how many. */
static int wanted(struct chlb_addr *want)
{
	int n = 0;

	for (__u32 i = 0; i < D.state.nsvc; i++) {
		const struct chlb_svc_cfg *s = &D.state.svc[i];

		if (chlbd_vip_servable(s) && !addr_in(&s->vip.addr, want, n))
			want[n++] = s->vip.addr;
	}
	return n;
}

/* The table's chlb routes, malloc'd into *have; how many, or -errno (logged). */
static int listed(struct chlb_addr **have)
{
	char err[256];
	int max = 64, n;

	for (;;) {
		*have = calloc((size_t)max, sizeof(**have));
		if (!*have)
			return -ENOMEM;
		n = chlb_route_dump(D.route_table, CHLB_RTPROT, *have, max, err, sizeof(err));
		if (n < 0)
			pr_err("route export: %s", err);
		if (n <= max)
			return n;
		free(*have);
		max = n + 16; /* routes were added meanwhile: try with room for them */
	}
}

/* Adds or removes a route; 1 if it did, 0 if it failed (logged). */
static int route_set(bool add, const struct chlb_addr *a)
{
	char err[256], text[64];
	int rc = chlb_route_host(add, D.route_table, CHLB_RTPROT, a, err, sizeof(err));

	if (rc) {
		pr_err("route export: %s", err);
		return 0;
	}
	pr_info("route export: %s %s table %u", chlb_fmt_addr(a, text, sizeof(text)),
		add ? "added to" : "removed from", D.route_table);
	return 1;
}

/* Keeps the n addresses of a that are in set; how many. */
static int keep_in(struct chlb_addr *a, int n, const struct chlb_addr *set, int nset)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (addr_in(&a[i], set, nset))
			a[k++] = a[i];
	return k;
}

/*
 * The first listing: the routes a previous chlbd left, kept until ready if
 * chlbd_ready_keeps_adopted() (an empty set otherwise: they go).
 */
static void adopt(const struct chlb_addr *have, int nhave)
{
	listed_once = true;
	if (!nhave || !chlbd_ready_keeps_adopted())
		return;
	held = calloc((size_t)nhave, sizeof(*held));
	if (!held)
		return; /* out of memory: they go, and come back once ready */
	memcpy(held, have, (size_t)nhave * sizeof(*held));
	nheld = nhave;
	pr_info("route export: %d routes adopted from the previous chlbd; kept, and no other "
		"added, until ready",
		nhave);
}

int chlbd_routes_sync(void)
{
	struct chlb_addr *want, *have = NULL;
	const char *why;
	int nwant, nhave, changed = 0;
	bool ready = chlbd_ready(&why);

	if (!D.route_table)
		return 0;
	synced_changes = D.rt ? D.rt->changes : 0;
	want = calloc(D.state.nsvc + 1, sizeof(*want));
	if (!want)
		return -ENOMEM;
	nwant = D.routes_withdrawn ? 0 : wanted(want);
	nhave = listed(&have);
	if (nhave < 0) {
		free(want);
		free(have);
		return nhave;
	}
	if (!listed_once)
		adopt(have, nhave);
	if (ready) {
		free(held);
		held = NULL;
		nheld = 0;
	} else {
		/* not ready: only adopted routes it still serves; what goes does not come back */
		nwant = keep_in(want, nwant, held, nheld);
		nheld = keep_in(held, nheld, want, nwant);
	}
	for (int i = 0; i < nhave; i++)
		if (!addr_in(&have[i], want, nwant))
			changed += route_set(false, &have[i]);
	for (int i = 0; i < nwant; i++)
		if (!addr_in(&want[i], have, nhave))
			changed += route_set(true, &want[i]);
	free(want);
	free(have);
	return changed;
}

static json_object *addr_array(const struct chlb_addr *a, int n)
{
	json_object *arr = json_object_new_array();
	char text[64];

	for (int i = 0; i < n; i++)
		json_object_array_add(
		    arr, json_object_new_string(chlb_fmt_addr(&a[i], text, sizeof(text))));
	return arr;
}

json_object *reply_routes(const struct chlb_cmd *c)
{
	struct chlb_addr *want, *have = NULL;
	json_object *o = json_object_new_object();
	int nwant, nhave = 0;

	const char *why;
	bool ready = chlbd_ready(&why);

	(void)c;
	json_object_object_add(o, "route_table", json_object_new_int64(D.route_table));
	json_object_object_add(o, "withdrawn", json_object_new_boolean(D.routes_withdrawn));
	json_object_object_add(o, "ready", json_object_new_boolean(ready));
	if (!ready) /* what the routes wait for (ready.h) */
		json_object_object_add(o, "withheld", json_object_new_string(why));
	want = calloc(D.state.nsvc + 1, sizeof(*want));
	nwant = want ? wanted(want) : 0;
	if (D.route_table)
		nhave = listed(&have);
	json_object_object_add(o, "routes", addr_array(have, nhave > 0 ? nhave : 0));
	json_object_object_add(o, "servable", addr_array(want, nwant));
	free(want);
	free(have);
	return o;
}

json_object *chlbd_routes_set_withdrawn(bool withdraw)
{
	json_object *o;
	int n;

	if (!D.route_table)
		return chlbd_jerr_kind("chlbd runs without --route-table: it exports no routes",
				       CHLBD_ERR_CONFLICT);
	D.routes_withdrawn = withdraw;
	pr_info("route export: %s requested", withdraw ? "withdraw" : "announce");
	if (!withdraw)
		chlbd_ready_force(); /* the operator says this host is ready */
	n = chlbd_routes_sync();
	if (n < 0)
		return chlbd_jerr_kind("route export: the table could not be read: see the log",
				       CHLBD_ERR_FAILED);
	o = reply_routes(NULL);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "changed", json_object_new_int(n));
	return o;
}

__u64 chlbd_routes_tick(__u64 now)
{
	bool became;
	__u64 next = chlbd_ready_tick(now, &became);

	if (became)
		chlbd_routes_sync();
	return next;
}

void chlbd_routes_follow(void)
{
	if (D.route_table && D.rt && D.rt->changes != synced_changes)
		chlbd_routes_sync();
}

void chlbd_routes_withdraw_all(void)
{
	int n;

	if (!D.route_table)
		return;
	D.routes_withdrawn = true;
	n = chlbd_routes_sync();
	if (n >= 0)
		pr_info("route export: %d routes withdrawn from table %u", n, D.route_table);
}
