// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The connection table counted by service and backend (live, ended, stale,
 * held: see user/lib/engine/conn_tally.h), for `stats`, /metrics and the
 * `conns` reply (ctl/ctl_conns_reply.c): one walk on request, and the
 * background pass (conns.h).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "conns.h"
#include "base/json_out.h"
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

	if (i < p->st.nsvc && chlb_vip_eq(&p->st.svc[i].vip, v))
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
	if (j < was->nbe && chlb_addr_eq(&was->be[j].addr, &cur->be[j].addr))
		return &p->t.svc[ps].be[j];
	/* moved in the list: the pair its slot was when the pass started */
	if (slot < 0 || slot >= CHLB_MAX_BACKENDS)
		return NULL;
	o = &p->t.by_slot[slot];
	if (o->svc != ps || o->be < 0 || !chlb_addr_eq(&was->be[o->be].addr, &cur->be[j].addr))
		return NULL;
	return &p->t.svc[ps].be[o->be];
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
	chlb_json_add_u64(o, "ct_size", size);
	chlb_json_add_u64(o, "ct_inserts", inserts);
	if (p) {
		/* the last background pass's count (no walk here), and how old it is */
		entries = p->t.entries;
		chlb_json_add_u64(o, "ct_entries", entries);
		/*
		 * The data plane inserts with BPF_NOEXIST and never deletes, so an
		 * insert that is not in the table any more was evicted: inserts when
		 * the pass ended. Not below 0: counters reset (or a table adopted
		 * without its counters) lag behind.
		 */
		if (p->have_inserts)
			inserts = p->inserts;
		chlb_json_add_u64(o, "ct_evictions", inserts > entries ? inserts - entries : 0);
		json_object_object_add(o, "ct_tally_age_s",
				       json_object_new_double(conns_pass_age_s(p)));
	}
	chlb_json_add_u64(o, "ct_memory_bytes", mem);
	json_object_object_add(o, "ct_bytes_per_entry",
			       json_object_new_double(size ? (double)mem / size : 0));
}

double conns_pass_age_s(const struct conns_pass *p)
{
	__u64 now = chlb_now_ns();

	return now > p->ended_ns ? (double)(now - p->ended_ns) / 1e9 : 0;
}
