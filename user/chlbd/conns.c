// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `conns [VIP] [backend ADDR] [list]`: the connection table by service and
 * backend (live, ended, stale, held: see user/lib/engine/conn_tally.h), and with `list`
 * the entries themselves, the analogue of `ipvsadm -Lnc`. The entries are
 * printed as JSON text straight into the reply: a json-c object per entry
 * costs about a kilobyte of heap, 100 MB for a full list.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "conns.h"
#include "dp/dp_conns.h" /* CHLB_DP_CONNS_BATCH: entries per step */

/* An empty tally of st (D.state or a copy of it) with chlbd's timeouts. */
static int tally_init(struct chlb_ct_tally *t, const struct chlb_state *st)
{
	__u64 udp_ms = D.udp_timeout_ms ? D.udp_timeout_ms : CHLB_DP_DEFAULT_UDP_IDLE_MS;

	return chlb_ct_tally_init(t, st, D.rt, chlb_coarse_now_ns(), udp_ms * 1000000ull,
				  (__u64)D.tcp_timeout_ms * 1000000ull);
}

int conns_tally_init(struct chlb_ct_tally *t)
{
	return tally_init(t, &D.state);
}

static int tally_one(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	int s, b;

	chlb_ct_tally_add(ctx, f, c, &s, &b);
	return 0;
}

int conns_tally_walk(struct chlb_ct_tally *t)
{
	int rc = chlb_dp_conns_foreach(D.dp, tally_one, t);

	return rc < 0 ? rc : rc ? -EIO : 0;
}

int conns_tally(struct chlb_ct_tally *t)
{
	int rc = conns_tally_init(t);

	if (rc)
		return rc;
	rc = conns_tally_walk(t);
	if (rc)
		chlb_ct_tally_free(t);
	return rc;
}

/*
 * ---- The background tally ----
 *
 * /metrics and `stats` never walk the table: a pass runs from the event
 * loop's timer a batch per step (chlb_dp_conns_next_batch), requests in
 * between, and they serve the last complete pass. A pass starts
 * TALLY_PERIOD_NS after the previous one ended; after a change
 * (chlb_rt.changes: a service or backend added, removed or moved) already
 * as long after it as the previous pass took (at most half the loop's
 * time goes to passes), so a change shows within two passes. On a table
 * one cheap step covers, a request runs the pass itself (bounded by that
 * step), so a small table's counts are always current.
 * Each pass counts against a copy of D.state (taken when it starts: the
 * state may change during it), which maps to D.state by VIP and address.
 */
#define TALLY_PERIOD_NS 5000000000ull /* from the end of a pass to the start of the next */
#define TALLY_CHEAP_NS	5000000ull    /* a one-step pass this cheap (CPU): requests refresh it */
#define TALLY_BATCH_MAX (1u << 20)    /* ENOSPC growth stops here */

static struct {
	struct conns_pass *run, *last; /* the pass going on, the last complete one */
	struct chlb_dp_conns_cursor cur;
	struct chlb_flow *keys;
	struct chlb_conn *vals;
	__u32 cap;     /* entries keys[] and vals[] hold */
	__u64 next_ns; /* when the next pass starts (0: at once) */
	__u64 changes; /* D.rt->changes when the pass going on (or the last) started */
	bool failing;  /* a step failed: logged once until a pass completes */
} bg;

static void pass_free(struct conns_pass *p)
{
	if (!p)
		return;
	chlb_ct_tally_free(&p->t);
	chlb_state_free(&p->st);
	free(p);
}

static struct conns_pass *pass_new(__u64 now)
{
	struct conns_pass *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (chlb_state_copy(&p->st, &D.state)) {
		free(p);
		return NULL;
	}
	if (tally_init(&p->t, &p->st)) {
		chlb_state_free(&p->st);
		free(p);
		return NULL;
	}
	p->started_ns = now;
	return p;
}

/* The pass is complete: it becomes the last one; its inserts for the evictions. */
static void pass_done(struct conns_pass *p, __u64 now)
{
	struct chlb_global_stats gs;

	p->ended_ns = now;
	if (!chlb_dp_read_global(D.dp, &gs)) {
		p->inserts = gs.reason[CHLB_R_CT_INSERT];
		p->have_inserts = true;
	}
	bg.next_ns = now + TALLY_PERIOD_NS;
	if (bg.last && bg.last->started_ns > p->started_ns) {
		pass_free(p); /* a `conns` walk that started later ended first: keep it */
	} else {
		pass_free(bg.last);
		bg.last = p;
	}
	if (bg.failing)
		pr_info("connection table: background count works again");
	bg.failing = false;
}

/* One batch of the pass going on into its tally. 0 or -errno. */
static int pass_step(struct conns_pass *p)
{
	__u32 n;
	int rc;

	if (!bg.keys) {
		bg.cap = CHLB_DP_CONNS_BATCH;
		bg.keys = calloc(bg.cap, sizeof(*bg.keys));
		bg.vals = calloc(bg.cap, sizeof(*bg.vals));
		if (!bg.keys || !bg.vals)
			goto nomem;
	}
	n = bg.cap;
	rc = chlb_dp_conns_next_batch(D.dp, &bg.cur, bg.keys, bg.vals, &n);
	if (rc == -ENOSPC && bg.cap < TALLY_BATCH_MAX) {
		/* one bucket holds more: bigger buffers, the same bucket next step */
		free(bg.keys);
		free(bg.vals);
		bg.keys = NULL;
		bg.vals = NULL;
		bg.cap *= 2;
		bg.keys = calloc(bg.cap, sizeof(*bg.keys));
		bg.vals = calloc(bg.cap, sizeof(*bg.vals));
		if (!bg.keys || !bg.vals)
			goto nomem;
		return 0;
	}
	if (rc)
		return rc;
	p->t.now_ns = chlb_coarse_now_ns(); /* idle timeouts as of this batch */
	for (__u32 i = 0; i < n; i++) {
		int s, b;

		chlb_ct_tally_add(&p->t, &bg.keys[i], &bg.vals[i], &s, &b);
	}
	p->steps++;
	return 0;
nomem:
	free(bg.keys);
	free(bg.vals);
	bg.keys = NULL;
	bg.vals = NULL;
	return -ENOMEM;
}

static void pass_abort(int rc, __u64 now)
{
	if (!bg.failing)
		pr_warn("connection table: background count failed: %s; retrying every %llu s",
			chlb_strerror(rc), TALLY_PERIOD_NS / 1000000000ull);
	bg.failing = true;
	pass_free(bg.run);
	bg.run = NULL;
	bg.next_ns = now + TALLY_PERIOD_NS;
}

/* Start a pass now. 0 or -errno. */
static int pass_start(__u64 now)
{
	bg.run = pass_new(now);
	if (!bg.run)
		return -ENOMEM;
	memset(&bg.cur, 0, sizeof(bg.cur));
	bg.changes = D.rt->changes;
	return 0;
}

/* chlbd's CPU time: what a step costs, whatever else runs on the host */
static __u64 cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* One step of the pass going on; completes it when it was the last. */
static void step(__u64 now)
{
	__u64 c0 = cpu_ns();
	int rc = pass_step(bg.run);

	if (rc) {
		pass_abort(rc, now);
		return;
	}
	bg.run->cpu_ns += cpu_ns() - c0;
	if (bg.cur.done) {
		pass_done(bg.run, chlb_now_ns());
		bg.run = NULL;
	}
}

/* When the next pass is due: sooner after a change, by as long as the last pass took. */
static __u64 next_due(void)
{
	__u64 took;

	if (!bg.last || D.rt->changes == bg.changes)
		return bg.next_ns;
	took = bg.last->ended_ns - bg.last->started_ns;
	return took < TALLY_PERIOD_NS ? bg.last->ended_ns + took : bg.next_ns;
}

__u64 conns_tally_step(__u64 now)
{
	if (!D.dp || !D.rt)
		return 0;
	if (!bg.run) {
		if (now < next_due())
			return next_due();
		if (pass_start(now)) {
			pass_abort(-ENOMEM, now);
			return bg.next_ns;
		}
	}
	step(now);
	return bg.run ? now : next_due(); /* the next step after the loop's pending events */
}

const struct conns_pass *conns_tally_last(void)
{
	__u64 now = chlb_now_ns();
	const struct conns_pass *l = bg.last;

	/* a table one cheap step covers: count it now rather than serve an older count */
	if (!bg.run && (!l || (l->steps <= 1 && l->cpu_ns < TALLY_CHEAP_NS)) && D.dp && D.rt &&
	    !pass_start(now))
		step(now);
	return bg.last;
}

void conns_tally_adopt(struct chlb_ct_tally *t, __u64 started_ns)
{
	struct conns_pass *p = calloc(1, sizeof(*p));

	/* only a walk of D.state as it is */
	if (!p || chlb_state_copy(&p->st, &D.state)) {
		free(p);
		return;
	}
	if (t->st != &D.state || D.state.nsvc != p->st.nsvc) {
		chlb_state_free(&p->st);
		free(p);
		return;
	}
	/* t's arrays follow D.state's layout, which the copy has: t moves over to it */
	p->t = *t;
	p->t.st = &p->st;
	memset(t, 0, sizeof(*t));
	t->st = &D.state;
	p->started_ns = started_ns;
	/* the steps the background would take: a table one step covers stays fresh */
	p->steps = (__u32)(p->t.entries / CHLB_DP_CONNS_BATCH) + 1;
	p->cpu_ns = 0; /* unknown: a huge empty table's one step, if so, is measured next */
	if (!bg.run)
		bg.changes = D.rt->changes;
	pass_done(p, chlb_now_ns());
}

int conns_pass_svc(const struct conns_pass *p, __u32 i)
{
	const struct chlb_vip *v = &D.state.svc[i].vip;
	const struct chlb_svc_cfg *s;

	if (i < p->st.nsvc && !chlb_vip_cmp(&p->st.svc[i].vip, v))
		return (int)i;
	s = chlb_state_find(&p->st, v);
	return s ? (int)(s - p->st.svc) : -1;
}

const struct chlb_ct_be *conns_pass_be(const struct conns_pass *p, int ps, __u32 i, __u32 j,
				       int slot)
{
	const struct chlb_svc_cfg *cur = &D.state.svc[i], *was;
	const struct chlb_ct_owner *o;

	if (ps < 0)
		return NULL;
	was = &p->st.svc[ps];
	if (j < was->nbe && !chlb_addr_cmp(&was->be[j].addr, &cur->be[j].addr))
		return &p->t.svc[ps].be[j];
	/* moved in the list: the pair its slot was when the pass started */
	if (slot < 0 || slot >= CHLB_MAX_BACKENDS)
		return NULL;
	o = &p->t.by_slot[slot];
	if (o->svc != ps || o->be < 0 || chlb_addr_cmp(&was->be[o->be].addr, &cur->be[j].addr))
		return NULL;
	return &p->t.svc[ps].be[o->be];
}

static void add_u64(json_object *o, const char *k, __u64 v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

void conns_stats(json_object *o, __u64 inserts)
{
	const struct conns_pass *p = conns_tally_last();
	__u64 entries, mem = 0;
	__u32 size = 0;
	int rc = chlb_dp_conn_size(D.dp, &size, &mem);

	if (rc) {
		pr_warn("stats: couldn't read the connection table: %s", strerror(-rc));
		return;
	}
	add_u64(o, "ct_size", size);
	add_u64(o, "ct_inserts", inserts);
	if (p) {
		/* the last background pass's count (no walk here), and how old it is */
		entries = p->t.entries;
		add_u64(o, "ct_entries", entries);
		/*
		 * The data plane inserts with BPF_NOEXIST and never deletes, so an
		 * insert that is not in the table any more was evicted: inserts when
		 * the pass ended. Not below 0: counters reset (or a table adopted
		 * without its counters) lag behind.
		 */
		if (p->have_inserts)
			inserts = p->inserts;
		add_u64(o, "ct_evictions", inserts > entries ? inserts - entries : 0);
		json_object_object_add(o, "ct_tally_age_s",
				       json_object_new_double(conns_pass_age_s(p)));
	}
	add_u64(o, "ct_memory_bytes", mem);
	json_object_object_add(o, "ct_bytes_per_entry",
			       json_object_new_double(size ? (double)mem / size : 0));
}

double conns_pass_age_s(const struct conns_pass *p)
{
	__u64 now = chlb_now_ns();

	return now > p->ended_ns ? (double)(now - p->ended_ns) / 1e9 : 0;
}

/* One walk for `conns`: the tally, and the entries that pass the filters. */
struct walk {
	struct chlb_ct_tally t;
	int svc; /* only this service's entries; -1: all */
	bool
	    by_backend; /* only entries of the backend's slots (one per service), their generation */
	bool slot[CHLB_MAX_BACKENDS];
	FILE *out; /* the list, or NULL: counts only */
	__u64 listed;
	bool truncated;
};

static void put_hostport(FILE *o, const struct chlb_addr *a, __u16 port)
{
	char b[CHLB_ADDRSTR];

	chlb_fmt_addr(a, b, sizeof(b));
	fprintf(o, a->family == CHLB_AF_INET6 ? "[%s]:%u" : "%s:%u", b, port);
}

static void put_entry(struct walk *w, const struct chlb_flow *f, const struct chlb_conn *c,
		      enum chlb_conn_state state, int svc)
{
	const struct chlb_rt_be *rb = c->backend < CHLB_MAX_BACKENDS ? &D.rt->be[c->backend] : NULL;
	struct chlb_addr client = { .family = f->family };
	struct chlb_vip dst;
	char b[CHLB_ADDRSTR];
	FILE *o = w->out;

	memcpy(client.a, f->src, f->family == CHLB_AF_INET6 ? 16 : 4);
	chlb_flow_dst_vip(f, &dst);
	fprintf(o, "%s{\"client\":\"", w->listed ? "," : "");
	put_hostport(o, &client, ntohs(f->sport));
	fprintf(o, "\",\"vip\":\"%s\",\"service\":", chlb_fmt_vip(&dst, b, sizeof(b)));
	if (svc >= 0)
		fprintf(o, "\"%s\"", chlb_fmt_vip(&D.state.svc[svc].vip, b, sizeof(b)));
	else
		fputs("null", o);
	/* the address only while the slot still holds the generation the entry names */
	if (rb && rb->state != CHLB_BE_EMPTY && rb->gen == c->gen)
		fprintf(o, ",\"backend\":\"%s\"", chlb_fmt_addr(&rb->addr, b, sizeof(b)));
	else
		fputs(",\"backend\":null", o);
	fprintf(o, ",\"slot\":%u,\"gen\":%u,\"state\":\"%s\"", c->backend, c->gen,
		chlb_conn_state_name(state));
	if (f->proto == IPPROTO_UDP && c->last_ns)
		fprintf(o, ",\"idle_s\":%.1f",
			w->t.now_ns > c->last_ns ? (double)(w->t.now_ns - c->last_ns) / 1e9 : 0.0);
	fputc('}', o);
	w->listed++;
}

static int walk_one(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct walk *w = ctx;
	enum chlb_conn_state state;
	int s, b;

	state = chlb_ct_tally_add(&w->t, f, c, &s, &b);
	if (!w->out || (w->svc >= 0 && s != w->svc))
		return 0;
	if (w->by_backend && (c->backend >= CHLB_MAX_BACKENDS || !w->slot[c->backend] ||
			      c->gen != D.rt->be[c->backend].gen))
		return 0;
	if (w->listed >= CHLBD_CONNS_LIST_MAX)
		w->truncated = true;
	else
		put_entry(w, f, c, state, s);
	return 0;
}

static json_object *svc_json(const struct walk *w, __u32 i, const struct chlb_addr *only)
{
	const struct chlb_svc_cfg *s = &D.state.svc[i];
	const struct chlb_ct_svc *ts = &w->t.svc[i];
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	char b[CHLB_ADDRSTR];

	json_object_object_add(o, "service",
			       json_object_new_string(chlb_fmt_vip(&s->vip, b, sizeof(b))));
	add_u64(o, "entries", ts->entries);
	add_u64(o, "live", ts->live);
	add_u64(o, "ended", ts->ended);
	add_u64(o, "stale", ts->stale);
	add_u64(o, "held", ts->held);
	for (__u32 j = 0; j < s->nbe; j++) {
		const struct chlb_ct_be *tb = &ts->be[j];
		json_object *e;

		if (only && chlb_addr_cmp(only, &s->be[j].addr))
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "address", json_object_new_string(s->be[j].name));
		json_object_object_add(e, "slot", json_object_new_int(tb->slot));
		if (tb->slot >= 0)
			add_u64(e, "gen", D.rt->be[tb->slot].gen);
		add_u64(e, "live", tb->live);
		add_u64(e, "ended", tb->ended);
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "backends", arr);
	return o;
}

/* Which service and backend the request names; an error reply when one does not exist. */
static json_object *resolve(const struct chlb_cmd *c, struct walk *w)
{
	char b[CHLB_ADDRSTR], msg[2 * CHLB_ADDRSTR + 64];
	bool member = false;

	w->svc = -1;
	if (c->has_vip) {
		const struct chlb_svc_cfg *s = chlb_state_find(&D.state, &c->vip);

		if (!s) {
			snprintf(msg, sizeof(msg), "'%s': no such service",
				 chlb_fmt_vip(&c->vip, b, sizeof(b)));
			return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
		}
		w->svc = (int)(s - D.state.svc);
	}
	if (!c->backend.family)
		return NULL;
	for (__u32 i = 0; i < D.state.nsvc && !member; i++)
		member = (w->svc < 0 || (int)i == w->svc) &&
			 chlb_svc_find_be(&D.state.svc[i], &c->backend);
	if (!member) {
		snprintf(msg, sizeof(msg), "'%s': %s", chlb_fmt_addr(&c->backend, b, sizeof(b)),
			 c->has_vip ? "no such backend in the service"
				    : "not a backend of any service");
		return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
	}
	w->by_backend = true;
	/* its slot in each service that has it (in the one named, with a VIP) */
	for (__u32 i = 0; i < D.state.nsvc; i++) {
		int slot;

		if (w->svc >= 0 && (int)i != w->svc)
			continue;
		slot =
		    chlb_rt_be_slot(D.rt, chlb_rt_svc_id(D.rt, &D.state.svc[i].vip), &c->backend);
		if (slot >= 0)
			w->slot[slot] = true;
	}
	return NULL;
}

/* o as text with the list spliced in before its closing brace. */
static char *splice(json_object *o, const char *list, size_t len)
{
	const char *head = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	size_t hlen = strlen(head);
	char *s = malloc(hlen + len + 16);

	if (s) {
		memcpy(s, head, hlen - 1); /* without the final '}' */
		memcpy(s + hlen - 1, ",\"conns\":[", 10);
		memcpy(s + hlen + 9, list, len);
		memcpy(s + hlen + 9 + len, "]}", 3);
	}
	json_object_put(o);
	return s;
}

char *view_conns(const struct chlb_cmd *c)
{
	struct walk w = { .svc = -1 };
	json_object *o, *arr, *e;
	char *list = NULL, *reply, msg[128];
	size_t len = 0;
	__u32 size = 0;
	__u64 t0;
	int rc;

	e = resolve(c, &w);
	if (e)
		return chlbd_reply(e);
	if (c->list && !(w.out = open_memstream(&list, &len)))
		return chlbd_reply(chlbd_jerr_kind("out of memory", CHLBD_ERR_FAILED));
	t0 = chlb_now_ns();
	rc = conns_tally_init(&w.t);
	if (!rc)
		rc = chlb_dp_conns_foreach(D.dp, walk_one, &w);
	if (w.out)
		fclose(w.out);
	if (!rc)
		rc = chlb_dp_conn_size(D.dp, &size, NULL);
	if (rc) {
		snprintf(msg, sizeof(msg), "couldn't read the connection table: %s",
			 chlb_strerror(rc));
		chlb_ct_tally_free(&w.t);
		free(list);
		return chlbd_reply(chlbd_jerr_kind(msg, CHLBD_ERR_FAILED));
	}
	o = json_object_new_object();
	arr = json_object_new_array();
	add_u64(o, "ct_size", size);
	add_u64(o, "entries", w.t.entries);
	if (!c->has_vip && !w.by_backend)
		add_u64(o, "other", w.t.other);
	for (__u32 i = 0; i < D.state.nsvc; i++) {
		if ((w.svc >= 0 && (int)i != w.svc) ||
		    (w.by_backend && !chlb_svc_find_be(&D.state.svc[i], &c->backend)))
			continue;
		json_object_array_add(arr, svc_json(&w, i, w.by_backend ? &c->backend : NULL));
	}
	json_object_object_add(o, "services", arr);
	conns_tally_adopt(&w.t, t0); /* the background's last pass: this one is newer */
	chlb_ct_tally_free(&w.t);
	if (!c->list)
		return chlbd_reply(o);
	add_u64(o, "listed", w.listed);
	json_object_object_add(o, "truncated", json_object_new_boolean(w.truncated));
	add_u64(o, "list_max", CHLBD_CONNS_LIST_MAX);
	reply = splice(o, list, len); /* fclose() left list set, "" when empty */
	free(list);
	return reply;
}
