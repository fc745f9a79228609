// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The effective state: what the engine (chlb_rt_apply) is given. It is
 * the desired state (D.state, persisted by chlbd_commit()) with each
 * backend's effective weight: 0 while its checks say down, a fraction of
 * its weight during slow start, the configured weight otherwise, and every
 * configured weight while its service is in panic. Two paths converge the
 * data plane to it, so they never fight:
 *   - a desired-state commit applies next's effective form (the overlay as
 *     it stands), then persists the desired state as before;
 *   - a health change applies the current desired state's effective form
 *     at once: a normal swap of the services whose form changed, without
 *     writing or fsyncing the state file (health is runtime state).
 * The engine compares what it was last given (`applied`) with the new form,
 * so only services whose effective weights changed are swapped.
 *
 * Jump services: the effective bucket order is the desired order brought in
 * line with the effective weights (chlb_jump_order_sync()): a down backend's
 * buckets become tombstones (its flows rehash, nobody else moves) and come
 * back at the same places when it is up again, because every effective
 * order starts from the desired one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include "health/health.h"

/*
 * What the engine was last given when it differs from the desired state;
 * while no backend's effective weight differs from its configured one
 * (no checks, or all up and past slow start: the common case), the desired
 * state itself is applied, as before health checks, and nothing is copied
 * (`own` false): a copy of a large state costs a commit milliseconds.
 */
static struct chlb_state applied; /* zeroed = empty, as chlb_state_init() leaves it */
static bool own;

const struct chlb_state *health_applied(void)
{
	return own ? &applied : &D.state;
}

static void applied_alias(void)
{
	chlb_state_free(&applied);
	chlb_state_init(&applied);
	own = false;
}

void health_applied_free(void)
{
	applied_alias();
}

static int eff_order(struct chlb_svc_cfg *s, char *err, size_t errlen)
{
	struct chlb_table_be *be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	int r;

	if (!be)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	for (__u32 i = 0; i < s->nbe; i++) {
		be[i].weight = s->be[i].weight;
		memcpy(be[i].name, s->be[i].name, sizeof(be[i].name));
	}
	r = chlb_jump_order_sync(&s->order, be, s->nbe, err, errlen);
	free(be);
	return r < 0 ? r : 0;
}

/* Panic and "every backend down" for s: logged on entry and exit, counted on entry. */
static bool svc_panic(const struct chlb_svc_cfg *s, __u64 now)
{
	struct hc_svc *hs = health_svc(&s->vip);
	__u32 up = 0, total = 0;
	bool panic, all_down;
	char vs[CHLB_ADDRSTR];

	for (__u32 j = 0; j < s->nbe; j++) {
		const struct hc *h = health_find(&s->vip, &s->be[j].addr);

		if (!s->be[j].weight)
			continue; /* drained by the operator: neither up nor down here */
		total++;
		up += !h || h->ck.type == CHLB_CHECK_NONE || h->state != HC_DOWN;
	}
	(void)now;
	panic =
	    total && s->health.panic_pct && (__u64)up * 100 < (__u64)s->health.panic_pct * total;
	all_down = total && !up && !panic;
	if (!hs)
		return panic;
	hs->up = up;
	hs->total = total;
	chlb_fmt_vip(&s->vip, vs, sizeof(vs));
	if (panic != hs->panic) {
		hs->panics += panic;
		if (panic)
			pr_warn("health: service %s: panic: %u of %u backends up, fewer than panic "
				"%u%%: health is ignored, every backend serves",
				vs, up, total, s->health.panic_pct);
		else
			pr_info("health: service %s: panic over: %u of %u backends up (panic %u%%)",
				vs, up, total, s->health.panic_pct);
	}
	if (all_down != hs->all_down) {
		hs->all_downs += all_down;
		if (all_down)
			pr_warn(
			    "health: service %s: every backend is down and panic is 0: no new "
			    "flows are served (dropped, counted as drop_no_backend); established "
			    "ones keep their entries",
			    vs);
		else /* not always a backend back up: panic raised, or none left to serve */
			pr_info("health: service %s: no longer every backend down: %s", vs,
				up	? "a backend is up again"
				: panic ? "panic serves them all"
					: "no backend with a weight left");
	}
	hs->panic = panic;
	hs->all_down = all_down;
	return panic;
}

/*
 * s has no checks any more (nor slow start): health decides nothing, so it
 * is neither in panic nor all down. Said once; checks turned on again later
 * then count and log a new panic as a new one.
 */
static void health_svc_off(const struct chlb_svc_cfg *s)
{
	struct hc_svc *hs = health_svc(&s->vip);
	char vs[CHLB_ADDRSTR];

	if (!hs || (!hs->panic && !hs->all_down))
		return;
	pr_info("health: service %s: no checks: %s over, every backend serves",
		chlb_fmt_vip(&s->vip, vs, sizeof(vs)), hs->panic ? "panic" : "every backend down");
	hs->panic = hs->all_down = false;
}

/* dst (a service of a state) becomes a deep copy of src; 0 or -ENOMEM (dst unchanged). */
static int svc_replace(struct chlb_svc_cfg *dst, const struct chlb_svc_cfg *src)
{
	struct chlb_state one, tmp = { .nsvc = 1, .cap = 1, .svc = (struct chlb_svc_cfg *)src };

	if (chlb_state_copy(&one, &tmp))
		return -ENOMEM;
	chlb_svc_cfg_free(dst);
	*dst = one.svc[0];
	free(one.svc);
	return 0;
}

/*
 * A health swap of s (its effective form) that would wait for a table slot
 * (chlb_rt_swap_wait(): swaps faster than the grace period) keeps the
 * applied form for now; *retry says when to try again. The loop never
 * waits, and the next health apply takes the change.
 */
static void defer_if_busy(struct chlb_svc_cfg *s, __u64 now, __u64 *retry)
{
	const struct chlb_svc_cfg *a = chlb_state_find(health_applied(), &s->vip);
	__u64 when;

	if (!a || chlb_svc_equal(a, s))
		return;
	when = chlb_rt_swap_wait(D.rt, &s->vip, now);
	if (!when || svc_replace(s, a))
		return;
	if (!*retry || when < *retry)
		*retry = when;
	for (__u32 j = 0; j < s->nbe; j++) {
		struct hc *h = health_find(&s->vip, &s->be[j].addr);

		if (h)
			h->eff_weight = s->be[j].weight; /* what still serves */
	}
}

/*
 * Every checker's effective weight now (h->eff_weight), panic included;
 * true when one differs from its configured weight (an overlay is needed).
 */
static bool overlay_weights(const struct chlb_state *desired, __u64 now)
{
	bool differs = false;

	for (__u32 i = 0; i < desired->nsvc; i++) {
		const struct chlb_svc_cfg *s = &desired->svc[i];
		bool panic;

		if (!health_svc_wanted(s)) {
			health_svc_off(s);
			continue;
		}
		panic = svc_panic(s, now);

		for (__u32 j = 0; j < s->nbe; j++) {
			const struct chlb_cfg_be *b = &s->be[j];
			struct hc *h = health_find(&s->vip, &b->addr);

			if (!h)
				continue;
			h->eff_weight =
			    panic ? b->weight
				  : health_weight(h, b->weight, s->health.slow_start_s, now);
			differs |= h->eff_weight != b->weight;
		}
	}
	return differs;
}

/*
 * out = desired with the effective weights overlay_weights() set (and no
 * check settings: the engine never needs them). retry: NULL for a commit
 * (its swaps wait for slots as every commit's do), else health's: busy
 * services deferred (defer_if_busy).
 */
static int effective(const struct chlb_state *desired, struct chlb_state *out, __u64 *retry,
		     char *err, size_t errlen)
{
	__u64 now = chlb_now_ns();

	if (chlb_state_copy(out, desired))
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	for (__u32 i = 0; i < out->nsvc; i++) {
		struct chlb_svc_cfg *s = &out->svc[i];
		bool changed = false;

		for (__u32 j = 0; j < s->nbe; j++) {
			struct chlb_cfg_be *b = &s->be[j];
			const struct hc *h = health_find(&s->vip, &b->addr);

			if (h && h->eff_weight != b->weight) {
				b->weight = h->eff_weight;
				changed = true;
			}
			free(b->check); /* the engine reads no check */
			b->check = NULL;
		}
		chlb_check_defaults(&s->check);
		chlb_health_policy_defaults(&s->health);
		if (changed && chlb_algo_has_order(s->algo) && eff_order(s, err, errlen)) {
			chlb_state_free(out);
			return -EINVAL;
		}
		if (retry)
			defer_if_busy(s, now, retry);
	}
	return 0;
}

/* on-down reset: the generation of a down backend's slot, once no table picks it. */
static void reset_down(const struct chlb_state *desired)
{
	for (__u32 i = 0; i < desired->nsvc; i++) {
		const struct chlb_svc_cfg *s = &desired->svc[i];
		char vs[CHLB_ADDRSTR];
		int id;

		if (!health_svc_wanted(s))
			continue;
		id = chlb_rt_svc_id(D.rt, &s->vip);

		for (__u32 j = 0; j < s->nbe; j++) {
			struct hc *h = health_find(&s->vip, &s->be[j].addr);
			int rc;

			if (!h || !h->reset_pending || h->eff_weight)
				continue;
			if (h->state != HC_DOWN) { /* up again, or unchecked: only down resets */
				h->reset_pending = false;
				continue;
			}
			h->reset_pending = false;
			rc = chlb_rt_be_renew(D.rt, id, &h->addr);
			if (rc)
				pr_err(
				    "health: service %s backend %s: on-down reset: couldn't bump "
				    "its generation: %s",
				    chlb_fmt_vip(&s->vip, vs, sizeof(vs)), h->name, strerror(-rc));
			else
				pr_info("health: service %s backend %s: on-down reset: generation "
					"bumped, its connections are decided again",
					chlb_fmt_vip(&s->vip, vs, sizeof(vs)), h->name);
		}
	}
}

/* After an apply of eff: it is what serves, or (no overlay, all applied) the desired state is. */
static void keep_applied(struct chlb_state *eff, bool overlay, int r)
{
	if (!overlay && !r) {
		chlb_state_free(eff);
		applied_alias();
		return;
	}
	chlb_state_free(&applied);
	applied = *eff; /* what serves, even after a partial failure */
	own = true;
}

int health_apply_effective(const struct chlb_state *cur, struct chlb_state *next, char *err,
			   size_t errlen)
{
	bool overlay = overlay_weights(next, chlb_now_ns());
	struct chlb_state eff, want;
	char werr[CHLB_ERR_MAX];
	int r;

	if (!overlay && !own) {
		/* nothing to overlay, nothing overlaid: the desired state as it is */
		r = chlb_rt_apply(D.rt, cur, next, err, errlen);
		reset_down(next);
		return r;
	}
	r = effective(next, &eff, NULL, err, errlen);
	if (r)
		return r;
	r = chlb_rt_apply(D.rt, health_applied(), &eff, err, errlen);
	/*
	 * Services the engine put back to their old form: next says so too.
	 * Which ones: the effective form asked for (built again: failures are
	 * rare, a copy of every commit's is not free) against what serves.
	 */
	if (r && D.rt->settle)
		D.rt->settle(); /* before next changes (apply.h) */
	if (r && !effective(next, &want, NULL, werr, sizeof(werr))) {
		for (__u32 i = 0; i < want.nsvc; i++) {
			const struct chlb_svc_cfg *w = &want.svc[i], *e;

			e = chlb_state_find(&eff, &w->vip);
			if (!e || !chlb_svc_equal(e, w))
				chlb_state_put_svc(next, &w->vip, chlb_state_find(cur, &w->vip));
		}
		chlb_state_free(&want);
	}
	keep_applied(&eff, overlay, r);
	reset_down(next);
	return r;
}

int health_apply_overlay(__u64 *retry, char *err, size_t errlen)
{
	bool overlay = overlay_weights(&D.state, chlb_now_ns());
	struct chlb_state eff;
	int r;

	*retry = 0;
	if (!overlay && !own)
		return 0; /* the desired state serves as it is */
	r = effective(&D.state, &eff, retry, err, errlen);
	if (r)
		return r;
	if (!overlay && *retry) {
		/* a service is not back to its desired form yet: keep eff as what serves */
		overlay = true;
	}
	r = chlb_rt_apply(D.rt, health_applied(), &eff, err, errlen);
	keep_applied(&eff, overlay, r);
	reset_down(&D.state);
	return r;
}
