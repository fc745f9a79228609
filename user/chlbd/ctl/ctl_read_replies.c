// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Read-only replies: service list, backend list, stats, which. */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "chlbd.h"
#include "ctl/ctl.h"
#include "served_tables.h"
#include "conns.h"
#include "health/health.h"
#include "ready.h"
#include "base/json_out.h"
#include "sync/sync.h"

static json_object *no_such_service(const struct chlb_vip *vip)
{
	char b[CHLB_ADDRSTR], msg[CHLB_ADDRSTR + 32];

	snprintf(msg, sizeof(msg), "'%s': no such service", chlb_fmt_vip(vip, b, sizeof(b)));
	return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
}

static void add_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static void add_int(json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void add_hex(json_object *o, const char *k, __u32 v)
{
	char b[16];

	snprintf(b, sizeof(b), "%08x", v);
	add_str(o, k, b);
}

/* The service's health check and policy as configured (the effective check, defaults filled in). */
static json_object *check_json(const struct chlb_svc_cfg *s)
{
	json_object *o = json_object_new_object();
	struct chlb_check k;
	char b[16];
	int over = 0;

	chlb_check_effective(s, NULL, &k);
	add_str(o, "type", chlb_check_type_name(k.type));
	add_str(o, "via", chlb_check_via_name(k.via));
	add_int(o, "port", k.port); /* 0: the VIP's */
	add_int(o, "interval_ms", k.interval_ms);
	add_int(o, "timeout_ms", k.timeout_ms);
	add_int(o, "rise", k.rise);
	add_int(o, "fall", k.fall);
	add_str(o, "path", k.path);
	snprintf(b, sizeof(b), "%u-%u", k.expect_lo, k.expect_hi);
	add_str(o, "expect", b);
	add_str(o, "host", k.host);
	add_str(o, "on_down", chlb_on_down_name(s->health.on_down));
	add_int(o, "slow_start_s", s->health.slow_start_s);
	add_int(o, "panic_pct", s->health.panic_pct);
	for (__u32 i = 0; i < s->nbe; i++)
		over += chlb_be_check(&s->be[i])->set != 0;
	add_int(o, "backend_overrides", over); /* backends with check options of their own */
	return o;
}

static json_object *svc_json(const struct chlb_svc_cfg *s)
{
	struct chlb_rt_svc *r = chlb_rt_find(D.rt, &s->vip);
	json_object *o = json_object_new_object();
	char b[CHLB_ADDRSTR];

	add_str(o, "service", chlb_fmt_vip(&s->vip, b, sizeof(b)));
	add_int(o, "id", r ? r - D.rt->svc : -1);
	add_str(o, "algo", chlb_algo_name(s->algo));
	if (s->algo == CHLB_ALGO_RING)
		add_int(o, "vnodes", s->vnodes);
	if (s->algo == CHLB_ALGO_RING && s->vnodes_target) {
		/* the K above is the one picked for this set */
		json_object_object_add(o, "vnodes_auto", json_object_new_boolean(1));
		json_object_object_add(o, "target_balance",
				       chlb_json_fixed(s->vnodes_target / 1000.0, 3));
		json_object_object_add(o, "vnodes_balance", chlb_json_fixed(s->vnodes_balance, 4));
		json_object_object_add(o, "target_met", json_object_new_boolean(s->vnodes_met));
	}
	if (chlb_algo_has_table(s->algo))
		add_int(o, "table", s->table_size);
	if (chlb_algo_has_order(s->algo))
		add_int(o, "buckets", s->order.n);
	add_str(o, "fwd", chlb_fwd_name(s->fwd));
	add_str(o, "hash", chlb_hash_name(s->hash));
	if (s->mtu)
		add_int(o, "mtu", s->mtu);
	if (s->encap_src.family)
		add_str(o, "encap_src", chlb_fmt_addr(&s->encap_src, b, sizeof(b)));
	if (s->nallow) {
		json_object *al = json_object_new_array();
		char p[64];

		for (__u32 i = 0; i < s->nallow; i++)
			json_object_array_add(al, json_object_new_string(
						      chlb_fmt_prefix(&s->allow[i], p, sizeof(p))));
		json_object_object_add(o, "allow", al);
	}
	if (s->persist_s) {
		add_int(o, "persist_s", s->persist_s);
		add_int(o, "netmask", s->persist_plen);
	}
	add_int(o, "backends", s->nbe);
	json_object_object_add(o, "check", check_json(s));
	if (r && r->nview) {
		struct served_table cur;

		/* what it decides, by address: equal on hosts that decide alike */
		if (!served_current(r, &cur) && cur.has_fp)
			add_hex(o, "fingerprint", cur.fp);
		else
			pr_debug("service list: %s: no fingerprint: %s",
				 chlb_fmt_vip(&s->vip, b, sizeof(b)), cur.why);
		add_int(o, "tables", r->nview);
		add_int(o, "swaps", (int64_t)r->swaps);
		json_object_object_add(o, "last_swap_ms", json_object_new_double(r->last_swap_ms));
	}
	return o;
}

json_object *reply_services(const struct chlb_cmd *c)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	for (__u32 i = 0; i < D.state.nsvc; i++) {
		if (c->has_vip && !chlb_vip_eq(&c->vip, &D.state.svc[i].vip))
			continue;
		json_object_array_add(arr, svc_json(&D.state.svc[i]));
	}
	if (c->has_vip && !json_object_array_length(arr)) {
		json_object_put(arr);
		json_object_put(o);
		return no_such_service(&c->vip);
	}
	json_object_object_add(o, "services", arr);
	return o;
}

static const char *be_state(__u8 s)
{
	return s == CHLB_BE_LIVE ? "live" : s == CHLB_BE_DEAD ? "dead" : "empty";
}

json_object *reply_backends(const struct chlb_cmd *c)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	char b[CHLB_ADDRSTR];
	bool found = false;
	/* entries per backend, so a drain can be watched to its end */
	struct chlb_ct_tally t;
	int ct_rc = conns_tally(&t);

	if (ct_rc)
		pr_warn("backend list: couldn't read the connection table: %s", strerror(-ct_rc));
	for (__u32 i = 0; i < D.state.nsvc; i++) {
		const struct chlb_svc_cfg *s = &D.state.svc[i];
		__u32 *bucket;
		int id;

		if (c->has_vip && !chlb_vip_eq(&c->vip, &s->vip))
			continue;
		found = true;
		id = chlb_rt_svc_id(D.rt, &s->vip);
		/* jump, jtable: each backend's bucket (desired state; save writes it) */
		bucket = s->nbe ? malloc(s->nbe * sizeof(*bucket)) : NULL;
		if (bucket && chlb_svc_buckets(s, bucket)) {
			free(bucket);
			bucket = NULL;
		}
		for (__u32 j = 0; j < s->nbe; j++) {
			json_object *e = json_object_new_object();
			/* the service's own slot: an address in two services has two */
			int slot = chlb_rt_be_slot(D.rt, id, &s->be[j].addr);

			add_str(e, "service", chlb_fmt_vip(&s->vip, b, sizeof(b)));
			add_str(e, "address", s->be[j].name);
			add_int(e, "weight", s->be[j].weight);
			if (bucket && bucket[j] != CHLB_TOMBSTONE)
				add_int(e, "bucket", bucket[j]);
			add_int(e, "slot", slot);
			if (slot >= 0) {
				add_int(e, "gen", D.rt->be[slot].gen);
				add_str(e, "state", s->be[j].weight ? "live" : "draining");
			}
			if (!ct_rc) {
				add_int(e, "conns", (int64_t)t.svc[i].be[j].live);
				add_int(e, "conns_ended", (int64_t)t.svc[i].be[j].ended);
			}
			health_be_json(s, &s->be[j], e);
			json_object_array_add(arr, e);
		}
		free(bucket);
	}
	if (!ct_rc)
		chlb_ct_tally_free(&t);
	if (c->has_vip && !found) {
		json_object_put(arr);
		json_object_put(o);
		return no_such_service(&c->vip);
	}
	json_object_object_add(o, "backends", arr);
	return o;
}

/*
 * `stats` reports the counters as the data plane has them, and when they
 * were read (CLOCK_MONOTONIC): no rates. A reader computes rates from two
 * of its own replies (chlbctl stats --watch does; Prometheus does the same
 * with --metrics), so any number of readers never disturb each other's
 * rates, and chlbd keeps nothing per reader. `stats reset` zeroes the
 * counters first; "resets" counts the resets since chlbd started, so a
 * reader can tell a reset from a wrap (or a restart: it starts at 0 again).
 */
static __u64 resets, reset_ns;

/* The service owning a backend slot (one per service and backend), or NULL. */
static const struct chlb_rt_svc *be_owner(__u32 slot)
{
	int id = D.rt->be[slot].svc;

	return id >= 0 && id < CHLB_MAX_SERVICES && D.rt->svc[id].used ? &D.rt->svc[id] : NULL;
}

/* live, draining (weight 0 in its service), dead (removed) or empty */
static const char *be_slot_state(__u32 slot)
{
	const struct chlb_rt_be *r = &D.rt->be[slot];
	const struct chlb_rt_svc *o = be_owner(slot);
	const struct chlb_svc_cfg *cfg = o ? chlb_state_find(&D.state, &o->vip) : NULL;
	const struct chlb_cfg_be *b = cfg ? chlb_svc_find_be(cfg, &r->addr) : NULL;

	if (r->state == CHLB_BE_LIVE && b && !b->weight)
		return "draining";
	return be_state(r->state);
}

static json_object *counters_json(const struct chlb_counters *c)
{
	json_object *o = json_object_new_object();

	add_int(o, "packets", (int64_t)c->packets);
	add_int(o, "bytes", (int64_t)c->bytes);
	add_int(o, "new_flows", (int64_t)c->new_flows);
	add_int(o, "no_route", (int64_t)c->no_route);
	add_int(o, "drop_source", (int64_t)c->drop_source); /* services' allow-lists */
	return o;
}

/* stats reset: every counter but ct_insert (chlb_dp_reset_counters) */
static json_object *stats_reset(void)
{
	int rc = chlb_dp_reset_counters(D.dp);
	char msg[128];

	if (rc) {
		snprintf(msg, sizeof(msg), "couldn't zero the counters: %s", strerror(-rc));
		pr_warn("stats reset: %s", msg);
		return chlbd_jerr_kind(msg, CHLBD_ERR_FAILED);
	}
	resets++;
	reset_ns = chlb_now_ns();
	pr_info("stats reset: data-plane counters zeroed (ct_insert kept: evictions = inserts - "
		"entries)");
	return NULL;
}

json_object *reply_stats(const struct chlb_cmd *cmd)
{
	json_object *o, *g, *sa, *ba, *err;
	struct chlb_global_stats gs;
	char b[CHLB_ADDRSTR];
	__u64 now;

	if (cmd->reset && (err = stats_reset()))
		return err;
	o = json_object_new_object();
	g = json_object_new_object();
	sa = json_object_new_array();
	ba = json_object_new_array();
	now = chlb_now_ns();
	add_int(o, "time_ns", (int64_t)now);
	add_int(o, "resets", (int64_t)resets);
	json_object_object_add(o, "ready", json_object_new_boolean(chlbd_is_ready())); /* ready.h */
	if (reset_ns)
		json_object_object_add(o, "since_reset_s",
				       json_object_new_double((double)(now - reset_ns) / 1e9));
	if (!chlb_dp_read_global(D.dp, &gs)) {
		for (int i = 0; i < CHLB_R_MAX; i++)
			add_int(g, chlb_reason_names[i], (int64_t)gs.reason[i]);
		conns_stats(o, gs.reason[CHLB_R_CT_INSERT]);
	}
	for (__u32 i = 0; i < D.state.nsvc; i++) {
		int id = chlb_rt_svc_id(D.rt, &D.state.svc[i].vip);
		struct chlb_counters c;
		json_object *e;

		if (id < 0 || chlb_dp_read_service_stats(D.dp, (__u32)id, &c))
			continue;
		e = counters_json(&c);
		add_str(e, "service", chlb_fmt_vip(&D.state.svc[i].vip, b, sizeof(b)));
		add_int(e, "id", id);
		json_object_array_add(sa, e);
	}
	for (__u32 i = 0; i < CHLB_MAX_BACKENDS; i++) {
		const struct chlb_rt_be *r = &D.rt->be[i];
		const struct chlb_rt_svc *own;
		struct chlb_counters c;
		json_object *e;

		if (r->state == CHLB_BE_EMPTY || chlb_dp_read_backend_stats(D.dp, i, &c))
			continue;
		/* a row per (service, backend): slots are per pair */
		e = counters_json(&c);
		own = be_owner(i);
		json_object_object_add(
		    e, "service",
		    own ? json_object_new_string(chlb_fmt_vip(&own->vip, b, sizeof(b))) : NULL);
		add_str(e, "address", chlb_fmt_addr(&r->addr, b, sizeof(b)));
		add_int(e, "slot", i);
		add_int(e, "gen", r->gen);
		add_str(e, "state", be_slot_state(i));
		json_object_array_add(ba, e);
	}
	json_object_object_add(o, "global", g);
	json_object_object_add(o, "services", sa);
	json_object_object_add(o, "backends", ba);
	if (sync_configured())
		json_object_object_add(o, "sync", sync_json());
	return o;
}

static json_object *be_ref(__u32 slot)
{
	json_object *o = json_object_new_object();
	char b[CHLB_ADDRSTR];

	add_int(o, "slot", slot);
	if (slot < CHLB_MAX_BACKENDS) {
		const struct chlb_rt_svc *s = be_owner(slot);

		add_str(o, "backend", chlb_fmt_addr(&D.rt->be[slot].addr, b, sizeof(b)));
		add_str(o, "state", be_state(D.rt->be[slot].state));
		/* the slot's service: the flow's own, unless its entry predates an exact service */
		json_object_object_add(
		    o, "service",
		    s ? json_object_new_string(chlb_fmt_vip(&s->vip, b, sizeof(b))) : NULL);
	}
	return o;
}

static struct chlb_rt_svc *svc_for_flow(const struct chlb_flow *f, const struct chlb_svc_cfg **cfg)
{
	struct chlb_vip v = { .addr.family = f->family, .proto = f->proto };

	memcpy(v.addr.a, f->dst, 16);
	v.port = (__u16)((f->dport >> 8) | ((f->dport & 0xff) << 8));
	for (int pass = 0; pass < 2; pass++, v.port = 0) {
		struct chlb_rt_svc *s = chlb_rt_find(D.rt, &v);

		*cfg = chlb_state_find(&D.state, &v);
		if (s && *cfg)
			return s;
	}
	return NULL;
}

/* which: name the destination and the port-0 service also looked for, as no_such_service does */
static json_object *no_service_for(const struct chlb_flow *f)
{
	struct chlb_vip v = { .addr.family = f->family, .proto = f->proto };
	char b[CHLB_ADDRSTR], b0[CHLB_ADDRSTR], msg[2 * CHLB_ADDRSTR + 64];

	memcpy(v.addr.a, f->dst, 16);
	v.port = (__u16)((f->dport >> 8) | ((f->dport & 0xff) << 8));
	chlb_fmt_vip(&v, b, sizeof(b));
	v.port = 0;
	snprintf(msg, sizeof(msg), "'%s': no such service (nor '%s')", b,
		 chlb_fmt_vip(&v, b0, sizeof(b0)));
	return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
}

/*
 * A held placeholder the data plane still honours (bpf/chlb_stick.h
 * conn_held, include/chlb_maps.h): waiting for a sync peer's entry.
 */
static bool conn_held(const struct chlb_conn *c)
{
	__u64 now = chlb_coarse_now_ns();

	/* written after the clock was read: held */
	return (c->flags & CHLB_CONN_F_HELD) &&
	       (c->last_ns >= now || now - c->last_ns < CHLB_CONN_HELD_MAX_NS);
}

/* Is the flow's source in one of the service's allow-list prefixes (bpf/chlb_pipeline.h)? */
static bool source_listed(const struct chlb_svc_cfg *cfg, const struct chlb_flow *f)
{
	struct chlb_prefix host = { .addr.family = f->family,
				    .plen = f->family == CHLB_AF_INET ? 32 : 128 };

	memcpy(host.addr.a, f->src, 16);
	for (__u32 i = 0; cfg && i < cfg->nallow; i++)
		if (chlb_prefix_contains(&cfg->allow[i], &host))
			return true;
	return false;
}

/*
 * The client's affinity entry (bpf/chlb_persist.h) as JSON in *out, and its
 * backend slot when it holds (LIVE, its generation, not drained or down,
 * seen within the timeout), else ~0u. *crc: what the tables decide the
 * client by (its masked source's CRC).
 */
static __u32 persist_entry(const struct chlb_svc_cfg *cfg, __u32 id, const struct chlb_flow *f,
			   json_object **out, __u32 *crc)
{
	struct chlb_persist_key key = { .svc_id = id };
	struct chlb_prefix client = { .addr.family = f->family, .plen = cfg->persist_plen };
	json_object *o = json_object_new_object(), *e;
	struct chlb_conn c;
	char b[64];
	__u32 slot = ~0u;

	memcpy(key.addr, f->src, 16);
	chlb_persist_mask(key.addr, f->family, cfg->persist_plen);
	memcpy(client.addr.a, key.addr, 16);
	*crc = chlb_src_crc(key.addr, f->family);
	add_str(o, "client", chlb_fmt_prefix(&client, b, sizeof(b)));
	add_int(o, "timeout_s", cfg->persist_s);
	if (chlb_dp_persist_lookup(D.dp, &key, &c)) {
		json_object_object_add(o, "entry", NULL);
	} else {
		__u64 now = chlb_coarse_now_ns(), age = now > c.last_ns ? now - c.last_ns : 0;
		bool valid = chlbd_persist_holds(&c, cfg, age);

		e = be_ref(c.backend);
		add_int(e, "gen", c.gen);
		add_int(e, "age_ms", (int64_t)(age / 1000000));
		json_object_object_add(e, "valid", json_object_new_boolean(valid));
		json_object_object_add(o, "entry", e);
		if (valid)
			slot = c.backend;
	}
	*out = o;
	return slot;
}

/*
 * Mirrors bpf/chlb_stick.h: what the data plane does with this flow, by the
 * tables its view names now (chlbd's own, or after a restart the pinned ones
 * it has not rebuilt yet: "adopted") and the hash fields of that view.
 */
json_object *reply_which(const struct chlb_cmd *c)
{
	const struct chlb_svc_cfg *cfg;
	struct chlb_rt_svc *s = svc_for_flow(&c->flow, &cfg);
	json_object *o, *tabs;
	struct chlb_service v;
	struct chlb_conn conn;
	__u32 crc, d0 = ~0u, dold = ~0u, old = 0, affine = ~0u;
	json_object *persist = NULL;
	char b[CHLB_ADDRSTR];
	const char *why;
	bool held;

	if (!s)
		return no_service_for(&c->flow);
	if (served_view(s, &v))
		return chlbd_jerr_kind("the data plane has no view of the service",
				       CHLBD_ERR_FAILED);
	o = json_object_new_object();
	tabs = json_object_new_array();
	crc = chlb_flow_crc(&c->flow, v.hash_fields);
	/* a persistent service: its tables decide a client by its masked source */
	if ((v.flags & CHLB_SVC_F_PERSIST) && cfg && cfg->persist_s)
		affine = persist_entry(cfg, (__u32)(s - D.rt->svc), &c->flow, &persist, &crc);
	add_str(o, "service", chlb_fmt_vip(&s->vip, b, sizeof(b)));
	add_hex(o, "crc", crc);
	for (__u32 i = 0; i < v.ntables; i++) {
		json_object *t = json_object_new_object();
		struct served_table st;
		__u32 d;

		add_int(t, "table_slot", v.table[i]);
		dold = ~0u; /* the data plane asks the OLDEST table; none = current */
		old = i;
		if (served_table(v.table[i], &st)) {
			add_str(t, "decision", st.why[0] ? st.why : "unknown");
		} else {
			if (st.has_fp)
				add_hex(t, "fingerprint", st.fp);
			json_object_object_add(t, "adopted", json_object_new_boolean(st.adopted));
			if (chlb_table_decide(st.t, crc, &d)) {
				add_str(t, "decision", "no backend");
			} else {
				json_object_object_add(t, "decision", be_ref(d));
				if (!i)
					d0 = d;
				dold = d;
			}
		}
		json_object_array_add(tabs, t);
	}
	json_object_object_add(o, "tables", tabs);
	if (persist)
		json_object_object_add(o, "persist", persist);
	if ((v.flags & CHLB_SVC_F_ALLOW) && !source_listed(cfg, &c->flow)) {
		/* dropped before any entry or table is looked at */
		add_str(o, "dropped",
			"the source is not in the service's allow-list (drop_source)");
		json_object_object_add(o, "new_flow", NULL);
		json_object_object_add(o, "established", NULL);
		add_str(o, "established_by", "nothing: the source is not in the allow-list");
		json_object_object_add(o, "conn", NULL);
		return o;
	}
	if (affine != ~0u) {
		/* the client's affinity entry holds: new flows follow it, not a table */
		json_object_object_add(o, "new_flow", be_ref(affine));
		add_str(o, "new_flow_by", "client affinity entry");
	} else {
		json_object_object_add(o, "new_flow", d0 == ~0u ? NULL : be_ref(d0));
		if (d0 != ~0u)
			add_int(o, "new_flow_table", 0);
	}
	if (!chlb_dp_conn_lookup(D.dp, &c->flow, &conn)) {
		json_object *e = be_ref(conn.backend);
		bool valid = conn.backend < CHLB_MAX_BACKENDS &&
			     D.rt->be[conn.backend].state == CHLB_BE_LIVE &&
			     D.rt->be[conn.backend].gen == conn.gen;

		bool udp = c->flow.proto == IPPROTO_UDP;
		__u64 idle_ms =
		    udp ? (D.udp_timeout_ms ? D.udp_timeout_ms : CHLB_DP_DEFAULT_UDP_IDLE_MS)
			: D.tcp_timeout_ms;

		if (idle_ms && conn.last_ns) {
			/* the data plane stamps entries with the coarse monotonic clock */
			__u64 now = chlb_coarse_now_ns();

			add_int(e, "idle_ms",
				now > conn.last_ns ? (int64_t)((now - conn.last_ns) / 1000000) : 0);
			if (now > conn.last_ns && now - conn.last_ns >= idle_ms * 1000000ull)
				valid = false;
		}
		/* a FIN or RST was seen: the next SYN on this 5-tuple is decided afresh */
		json_object_object_add(e, "ended",
				       json_object_new_boolean(conn.flags & CHLB_CONN_F_ENDED));
		add_int(e, "gen", conn.gen);
		json_object_object_add(e, "valid", json_object_new_boolean(valid));
		held = !valid && conn_held(&conn);
		json_object_object_add(e, "held", json_object_new_boolean(held));
		json_object_object_add(o, "conn", e);
		if (valid) {
			json_object_object_add(o, "established", be_ref(conn.backend));
			add_str(o, "established_by", "connection entry");
			return o;
		}
		if (held) {
			/* the data plane drops every packet of it, a SYN too (bpf/chlb_stick.h) */
			json_object_object_add(o, "established", NULL);
			add_str(o, "established_by",
				"nothing: held (dropped until a sync peer's entry arrives)");
			return o;
		}
	} else {
		json_object_object_add(o, "conn", NULL);
	}
	if (affine != ~0u) {
		/* an entry-less packet of a persistent client follows its affinity entry first */
		json_object_object_add(o, "established", be_ref(affine));
		add_str(o, "established_by", "client affinity entry");
		return o;
	}
	why = "oldest table in the view";
	if (dold == ~0u || D.rt->be[dold].state != CHLB_BE_LIVE) {
		/* said as it is: an empty oldest table was once called "a removed backend" */
		why = d0 == ~0u	    ? "the tables (none has a backend for it)"
		      : dold == ~0u ? "current table (the oldest has no backend for it)"
				    : "current table (the oldest names a removed backend)";
		dold = d0;
		old = 0;
	}
	json_object_object_add(o, "established", dold == ~0u ? NULL : be_ref(dold));
	add_str(o, "established_by", why);
	if (dold != ~0u)
		add_int(o, "established_table", old);
	return o;
}
