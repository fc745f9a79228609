// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Health checkers: one per (service, backend) of the desired state, kept in
 * step with it by health_sync() (before every apply), probing on the
 * event loop's timer (health_tick()) with non-blocking sockets
 * (health_probe.c), deciding up/down with rise/fall, and asking for a swap
 * of the effective state (health_apply.c) when a backend's effective
 * weight changes: a transition, a slow-start step, the end of a ramp.
 *
 * Scheduling: each checker's first probe comes at a random point of its
 * first interval, each next one an interval (+-10%) after the last start,
 * so 200 backends never probe in lockstep. The loop's tick scans the
 * checkers only when the earliest deadline it knows of is due.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include "health/health.h"

#define NS_PER_MS     1000000ull
#define JITTER_PCT    10
#define SCAN_SLACK_NS 2000000ull /* 2 ms */

static bool synced_once; /* the first sync is the start: nothing ramps */
static bool dirty;	 /* effective weights changed: swap at the next tick */
static __u64 dirty_ns;	 /* when the first change of the pending swap was decided */
static __u64 retry_at;	 /* a deferred health swap: not before (health_apply_overlay) */
static __u64 next_due;	 /* earliest deadline of any checker; 0: scan at the next tick */
static __u64 rng = 0x9e3779b97f4a7c15ull;

static __u64 rnd(void)
{
	/* xorshift64*: spreading probes needs no more than this */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

/* The next probe's start: an interval after `from`, +-JITTER_PCT. */
static __u64 next_probe(const struct hc *h, __u64 from)
{
	__u64 iv = (__u64)h->ck.interval_ms * NS_PER_MS, j = iv * JITTER_PCT / 100;

	return from + iv - j + (j ? rnd() % (2 * j + 1) : 0);
}

/* A first probe somewhere in the first interval: checkers created together spread out. */
static void schedule_first(struct hc *h, __u64 now)
{
	__u64 iv = (__u64)h->ck.interval_ms * NS_PER_MS;

	h->next_ns = now + 1 + (iv ? rnd() % iv : 0);
	next_due = 0;
}

void health_sync(const struct chlb_state *st)
{
	__u64 now = chlb_now_ns();
	char vs[CHLB_ADDRSTR];
	__u32 nall;
	struct hc **all = health_list(&nall);

	for (__u32 i = 0; i < nall; i++)
		all[i]->seen = false;
	health_svc_keep(st);
	for (__u32 i = 0; i < st->nsvc; i++) {
		const struct chlb_svc_cfg *s = &st->svc[i];
		struct hc_svc *hs = health_svc(&s->vip);
		/* slow start for backends added to a service that serves, not a new one */
		bool ramp = hs && hs->synced && s->health.slow_start_s;
		/* what serves now (st is about to replace it): a backend there is not added */
		const struct chlb_svc_cfg *was = chlb_state_find(&D.state, &s->vip);

		for (__u32 j = 0; j < s->nbe; j++) {
			const struct chlb_cfg_be *b = &s->be[j];
			struct chlb_check ck;
			struct hc *h;

			if (!health_be_wanted(s, b))
				continue; /* no check, no slow start: no checker (a stale one goes) */
			h = health_find(&s->vip, &b->addr);
			chlb_check_effective(s, b, &ck);
			if (!h) {
				h = health_checker_new(&s->vip, b, now);
				all = health_list(&nall);
				if (!h) {
					pr_err("health: out of memory: backend %s is not checked",
					       b->name);
					continue;
				}
				h->ck = ck;
				/*
				 * Added later: it ramps up; one there at the start serves at
				 * once, and so does one already serving that gets a checker
				 * only now (slow start turned on: ramping it alone would
				 * shift its flows to the backends checked before).
				 */
				if (ramp && synced_once &&
				    !(was && chlb_svc_find_be(was, &b->addr)))
					h->ramp_start_ns = now;
				schedule_first(h, now);
			} else if (!chlb_check_equal(&ck, &h->ck)) {
				/* new settings: the probes restart; the state stays until they decide */
				health_probe_cancel(h);
				h->ok_run = h->fail_run = 0;
				pr_info(
				    "health: service %s backend %s: check %s -> %s: probes restart",
				    chlb_fmt_vip(&s->vip, vs, sizeof(vs)), h->name,
				    chlb_check_type_name(h->ck.type),
				    chlb_check_type_name(ck.type));
				if (ck.type == CHLB_CHECK_NONE && h->state != HC_UNKNOWN) {
					h->state = HC_UNKNOWN;
					h->since_ns = now;
					h->since_wall = time(NULL);
					snprintf(h->reason, sizeof(h->reason), "check none");
					h->last[0] = 0;
					dirty = true;
				}
				h->ck = ck;
				schedule_first(h, now);
			}
			h->seen = true;
		}
		if (hs)
			hs->synced = true;
	}
	for (__u32 i = 0; i < nall;) {
		if (all[i]->seen) {
			i++;
			continue;
		}
		health_probe_cancel(all[i]);
		dirty = true; /* its overlay (down, a ramp) goes with it */
		health_checker_del(i);
		all = health_list(&nall);
	}
	synced_once = true;
	next_due = 0;
}

static void transition(struct hc *h, __u8 to, const char *why, __u64 now)
{
	struct hc_svc *hs = health_svc(&h->vip);
	const struct chlb_svc_cfg *s = chlb_state_find(&D.state, &h->vip);
	char vs[CHLB_ADDRSTR];
	__u8 from = h->state;

	h->state = to;
	h->since_ns = now;
	h->since_wall = time(NULL);
	snprintf(h->reason, sizeof(h->reason), "%s", why);
	if (to == HC_DOWN) {
		h->ramp_start_ns = 0;
		h->reset_pending = s && s->health.on_down == CHLB_ON_DOWN_RESET;
	} else {
		/*
		 * Up again before its reset was done (down in panic, its weight
		 * kept): nothing to reset any more. Left pending, a later drain
		 * (weight 0) of the healthy backend would reset its connections.
		 */
		h->reset_pending = false;
		if (from == HC_DOWN && s && s->health.slow_start_s)
			h->ramp_start_ns = now; /* back: its weight ramps up */
	}
	if (!(from == HC_UNKNOWN && to == HC_UP)) { /* unknown already served as up */
		if (!dirty)
			dirty_ns = now;
		dirty = true;
	}
	chlbd_log(to == HC_DOWN ? LOG_WARNING : LOG_INFO,
		  "health: service %s backend %s: %s -> %s: %s%s",
		  chlb_fmt_vip(&h->vip, vs, sizeof(vs)), h->name, health_state_name(from),
		  health_state_name(to), why, hs && hs->panic ? " (panic: health ignored)" : "");
}

static void health_result(struct hc *h, bool ok, const char *text, __u64 now)
{
	char why[HC_TEXT_MAX + 64];

	snprintf(h->last, sizeof(h->last), "%s", text);
	if (!ok)
		h->failed++;
	if (ok) {
		h->fail_run = 0;
		if (h->ok_run < 255)
			h->ok_run++;
		if (h->state == HC_UNKNOWN) {
			transition(h, HC_UP, "first probe passed", now);
		} else if (h->state == HC_DOWN && h->ok_run >= h->ck.rise) {
			snprintf(why, sizeof(why), "%u probe%s passed in a row (rise %u): %s",
				 h->ok_run, h->ok_run == 1 ? "" : "s", h->ck.rise, text);
			transition(h, HC_UP, why, now);
		}
	} else {
		h->ok_run = 0;
		if (h->fail_run < 255)
			h->fail_run++;
		if (h->state != HC_DOWN && h->fail_run >= h->ck.fall) {
			snprintf(why, sizeof(why), "%u probe%s failed in a row (fall %u): %s",
				 h->fail_run, h->fail_run == 1 ? "" : "s", h->ck.fall, text);
			transition(h, HC_DOWN, why, now);
		}
	}
}

/* The next slow-start step of h (ns), or 0; ends ramps that are over. */
static __u64 ramp_next(struct hc *h, __u32 slow_start_s, __u64 now)
{
	__u64 span = (__u64)slow_start_s * 1000000000ull, k;

	if (!h->ramp_start_ns)
		return 0;
	if (!span || now - h->ramp_start_ns >= span) {
		h->ramp_start_ns = 0;
		if (!dirty)
			dirty_ns = now;
		dirty = true; /* the last step: the configured weight */
		return 0;
	}
	k = (now - h->ramp_start_ns) * (HC_RAMP_STEPS - 1) / span + 1;
	return h->ramp_start_ns + k * span / (HC_RAMP_STEPS - 1);
}

/* A probe that finished (health_probe.c left its result in h) counts. */
static void probe_done(struct hc *h, __u64 now)
{
	if (!h->done)
		return;
	h->done = false;
	health_result(h, h->res_ok, h->res, now);
}

static void scan(__u64 now)
{
	__u64 next = ~0ull;
	__u32 nall;
	struct hc **all = health_list(&nall);

	for (__u32 i = 0; i < nall; i++) {
		struct hc *h = all[i];
		const struct chlb_svc_cfg *s = NULL;
		__u64 r;

		if (h->ramp_start_ns) {
			const struct chlb_cfg_be *b;

			s = chlb_state_find(&D.state, &h->vip);
			b = s ? chlb_svc_find_be(s, &h->addr) : NULL;
			if (b && health_weight(h, b->weight, s->health.slow_start_s, now) !=
				     h->eff_weight) {
				if (!dirty)
					dirty_ns = now;
				dirty = true; /* a step is due */
			}
			r = ramp_next(h, s ? s->health.slow_start_s : 0, now);
			if (r && r < next)
				next = r;
		}
		if (h->ck.type == CHLB_CHECK_NONE)
			continue;
		if (h->phase != HC_IDLE && now >= h->deadline) {
			char t[HC_TEXT_MAX];

			snprintf(t, sizeof(t), "timeout after %u ms (%s)", h->ck.timeout_ms,
				 h->phase == HC_CONNECTING ? "connecting" : "no status line");
			health_probe_cancel(h);
			health_result(h, false, t, now);
		}
		if (h->phase == HC_IDLE && now >= h->next_ns) {
			h->next_ns = next_probe(h, now);
			health_probe_start(h, now);
			probe_done(h, now); /* failed at once: no route, refused locally */
		}
		if (h->phase != HC_IDLE && h->deadline < next)
			next = h->deadline;
		if (h->next_ns < next)
			next = h->next_ns;
	}
	/*
	 * Deadlines within SCAN_SLACK_NS of each other share a scan: a scan
	 * walks every checker, and thousands of backends would otherwise cost
	 * a walk per probe. Probes start and time out up to that much late.
	 */
	if (next != ~0ull && next < now + SCAN_SLACK_NS)
		next = now + SCAN_SLACK_NS;
	next_due = next == ~0ull ? 0 : next;
}

void health_event(struct loop_ev *e, unsigned int events)
{
	struct hc *h = (struct hc *)e;
	__u64 now = chlb_now_ns();

	health_probe_event(h, events, now);
	probe_done(h, now);
}

int health_apply_desired(const struct chlb_state *cur, struct chlb_state *next, char *err,
			 size_t errlen)
{
	int r;

	health_sync(next);
	r = health_apply_effective(cur, next, err, errlen);
	if (r)
		health_sync(next); /* services put back to their old form */
	return r;
}

__u64 health_tick(__u64 now)
{
	char err[CHLB_ERR_MAX * 2];

	health_checker_bury();
	if (!next_due || now >= next_due)
		scan(now);
	if (dirty && !D.rt->defer_adopted && now >= retry_at) {
		__u64 decided = dirty_ns, retry;
		int rc;

		dirty = false;
		rc = health_apply_overlay(&retry, err, sizeof(err));
		if (rc)
			pr_err("health: %s", err);
		if (retry) { /* a service swapped within its grace period: its turn comes */
			dirty = true;
			retry_at = retry;
		} else {
			if (!rc && decided)
				pr_info(
				    "health: effective weights applied %.3f ms after the deciding "
				    "result",
				    (double)(chlb_now_ns() - decided) / 1e6);
			dirty_ns = 0;
			retry_at = 0;
		}
	}
	if (dirty && retry_at && (!next_due || retry_at < next_due))
		return retry_at;
	return next_due;
}

void health_close_all(void)
{
	__u32 n;
	struct hc **all = health_list(&n);

	while (n) {
		health_probe_cancel(all[n - 1]);
		health_checker_del(n - 1);
		all = health_list(&n);
	}
	health_checker_bury();
	health_list_free();
	health_applied_free();
}
