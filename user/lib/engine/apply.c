// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Desired state -> data plane (see apply.h for the order of operations and
 * why it keeps every packet on a complete table).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include "engine/apply_int.h"
#include "base/err.h"

#define NS_PER_MS 1000000ull

struct chlb_rt *chlb_rt_new(const struct chlb_dp_ops *ops, __u64 history_ms, __u64 grace_ms)
{
	struct chlb_rt *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->ops = *ops;
	for (int i = 0; i < CHLB_BE_HASH; i++)
		rt->be_head[i] = -1;
	for (int i = 0; i < CHLB_MAX_BACKENDS; i++) {
		rt->be_next[i] = -1;
		rt->be[i].svc = -1;
	}
	rt->history_ns = history_ms * NS_PER_MS;
	rt->grace_ns = grace_ms * NS_PER_MS;
	return rt;
}

static void slot_release(struct chlb_rt *rt, struct chlb_rt_slot *s)
{
	__u32 keep = s->prealloc; /* the inner map outlives its table */

	for (__u32 i = 0; i < s->nbes; i++)
		if (s->bes[i] < CHLB_MAX_BACKENDS && rt->be[s->bes[i]].trefs)
			rt->be[s->bes[i]].trefs--;
	free(s->bes);
	free(s->built_from);
	chlb_table_free(&s->t);
	memset(s, 0, sizeof(*s));
	s->prealloc = keep;
}

void chlb_rt_free(struct chlb_rt *rt)
{
	if (!rt)
		return;
	for (int i = 0; i < CHLB_MAX_SERVICES; i++)
		for (int k = 0; k < CHLB_SLOTS_PER_SERVICE; k++)
			slot_release(rt, &rt->svc[i].slot[k]);
	free(rt);
}

int chlb_rt_svc_id(const struct chlb_rt *rt, const struct chlb_vip *vip)
{
	int i = rt->find_next < CHLB_MAX_SERVICES ? (int)rt->find_next : 0;

	for (int k = 0; k < CHLB_MAX_SERVICES; k++, i = i + 1 < CHLB_MAX_SERVICES ? i + 1 : 0)
		if (rt->svc[i].used && !rt->svc[i].retiring && chlb_vip_eq(&rt->svc[i].vip, vip)) {
			((struct chlb_rt *)rt)->find_next = (__u32)i + 1; /* the cache (apply.h) */
			return i;
		}
	return -1;
}

struct chlb_rt_svc *chlb_rt_find(struct chlb_rt *rt, const struct chlb_vip *vip)
{
	int id = chlb_rt_svc_id(rt, vip);

	return id < 0 ? NULL : &rt->svc[id];
}

/* Service id's backend slots, one per backend: taken from the free ones for new pairs. */
/*
 * A backend with effective weight 0 (drained, or down by its check) takes
 * no new flows: flagged in its record for client persistence, whose
 * affinity entries must not send new connections there. Written before the
 * table that leaves it out (or takes it back) is published.
 */
static int set_no_new(struct chlb_rt *rt, __u32 slot, bool no_new)
{
	if (rt->be[slot].no_new == no_new)
		return 0;
	rt->be[slot].no_new = no_new;
	return chlb_be_write(rt, slot);
}

/*
 * The table for s into t, its backend slots into *bes, what it was built
 * from into *built (a ring's next build starts from it: from, the slot
 * serving now, if it has one).
 */
static int build_table(struct chlb_rt *rt, int id, const struct chlb_svc_cfg *s,
		       const struct chlb_rt_slot *from, struct chlb_table *t, __u32 **bes,
		       __u32 *nbes, struct chlb_table_be **built, __u64 now, char *err,
		       size_t errlen)
{
	struct chlb_table_prev prev = { 0 };
	struct chlb_table_be *be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	__u32 *list = calloc(s->nbe ? s->nbe : 1, sizeof(*list));
	char vip[CHLB_ADDRSTR];
	int r;

	chlb_fmt_vip(&s->vip, vip, sizeof(vip));
	if (!be || !list) {
		r = chlb_err(err, errlen, -ENOMEM, "%s: out of memory", vip);
		goto out;
	}
	for (__u32 i = 0; i < s->nbe; i++) {
		int slot = chlb_be_acquire(rt, id, &s->be[i].addr, now);

		if (slot == -ENOSPC) {
			r = chlb_err(err, errlen, slot,
				     "'%s': no free backend slot (%u in all, one per service and "
				     "backend; removed ones are held while tables still name them)",
				     s->be[i].name, CHLB_MAX_BACKENDS);
			goto out;
		}
		if (slot < 0) {
			r = chlb_syserr(err, errlen, slot, "'%s': couldn't write the backend slot",
					s->be[i].name);
			goto out;
		}
		be[i].slot = (__u32)slot;
		list[i] = (__u32)slot;
		r = set_no_new(rt, (__u32)slot, !s->be[i].weight);
		if (r) {
			r = chlb_syserr(err, errlen, r, "'%s': couldn't write the backend slot",
					s->be[i].name);
			goto out;
		}
	}
	if (from && from->built_from)
		prev = (struct chlb_table_prev){ &from->t, from->built_from, from->nbuilt_from,
						 from->vnodes };
	r = chlb_svc_build_from(s, be, prev.t ? &prev : NULL, t, err, errlen);
	if (r)
		goto out;
	*bes = list;
	*nbes = s->nbe;
	*built = be;
	list = NULL;
	be = NULL;
	r = 0;
out:
	free(be);
	free(list);
	return r;
}

static bool in_view(const struct chlb_rt_svc *s, int k)
{
	for (__u32 i = 0; i < s->nview; i++)
		if ((int)s->view[i] == k)
			return true;
	return false;
}

/* A slot no view names and no reader can still be in; waits out a grace period if needed. */
static int free_slot(struct chlb_rt *rt, struct chlb_rt_svc *s)
{
	for (;;) {
		__u64 now = chlb_now_ns(), soonest = ~0ull;

		for (int k = 0; k < CHLB_SLOTS_PER_SERVICE; k++) {
			struct chlb_rt_slot *sl = &s->slot[k];

			if (!sl->used)
				return k;
			if (!in_view(s, k) && sl->free_at <= now) {
				slot_release(rt, sl);
				return k;
			}
			if (!in_view(s, k) && sl->free_at < soonest)
				soonest = sl->free_at;
		}
		if (soonest == ~0ull)
			return -1;
		/* changes faster than the grace period: wait for the oldest slot */
		struct timespec ts = { .tv_sec = (time_t)((soonest - now) / 1000000000ull),
				       .tv_nsec = (long)((soonest - now) % 1000000000ull) };
		nanosleep(&ts, NULL);
	}
}

__u64 chlb_rt_swap_wait(const struct chlb_rt *rt, const struct chlb_vip *vip, __u64 now)
{
	int id = chlb_rt_svc_id(rt, vip);
	const struct chlb_rt_svc *s;
	__u64 soonest = ~0ull;

	if (id < 0)
		return 0;
	s = &rt->svc[id];
	for (int k = 0; k < CHLB_SLOTS_PER_SERVICE; k++) {
		const struct chlb_rt_slot *sl = &s->slot[k];

		if (!sl->used || (!in_view(s, k) && sl->free_at <= now))
			return 0;
		if (!in_view(s, k) && sl->free_at < soonest)
			soonest = sl->free_at;
	}
	return soonest == ~0ull ? now + rt->grace_ns : soonest;
}

static void fill_view(const struct chlb_svc_cfg *c, int id, struct chlb_rt_svc *s)
{
	struct chlb_service *v = &s->sv;

	memset(v, 0, sizeof(*v));
	v->id = (__u32)id;
	v->fwd = c->fwd;
	v->hash_fields = c->hash;
	v->mtu = c->mtu;
	if (c->nallow)
		v->flags |= CHLB_SVC_F_ALLOW;
	if (c->persist_s)
		v->flags |= CHLB_SVC_F_PERSIST;
	if (c->encap_src.family == CHLB_AF_INET6) {
		memcpy(v->encap_src, c->encap_src.a, 16);
	} else if (c->encap_src.family == CHLB_AF_INET) {
		v->encap_src[10] = v->encap_src[11] = 0xff;
		memcpy(v->encap_src + 12, c->encap_src.a, 4);
	}
	v->ntables = (__u8)s->nview;
	for (__u32 i = 0; i < s->nview; i++)
		v->table[i] = (__u32)id * CHLB_SLOTS_PER_SERVICE + s->view[i];
}

/*
 * The view, and the allow-list around it: new prefixes before the view
 * (a view that turns the list on never meets an empty one), old ones after
 * it, so a source allowed before and after is never dropped in between.
 */
static int publish(struct chlb_rt *rt, struct chlb_rt_svc *s, const struct chlb_svc_cfg *c)
{
	struct chlb_vip_key key;
	__u32 id = (__u32)(s - rt->svc);
	int rc;

	if (rt->ops.set_allow && c->nallow) {
		rc = rt->ops.set_allow(rt->ops.ctx, id, c->allow, c->nallow, false);
		if (rc)
			return rc;
	}
	/* settings before the view that reads them; a view without the flag ignores them */
	if (rt->ops.set_persist && c->persist_s) {
		rc = rt->ops.set_persist(rt->ops.ctx, id, c->persist_s, c->vip.addr.family,
					 c->persist_plen);
		if (rc)
			return rc;
	}
	fill_view(c, (int)id, s);
	chlb_vip_to_key(&s->vip, &key);
	rc = rt->ops.set_service(rt->ops.ctx, &key, &s->sv);
	if (!rc && rt->ops.set_allow)
		rt->ops.set_allow(rt->ops.ctx, id, c->allow, c->nallow, true);
	return rc;
}

static int alloc_id(struct chlb_rt *rt)
{
	for (int i = 0; i < CHLB_MAX_SERVICES; i++)
		if (!rt->svc[i].used)
			return i;
	return -1;
}

const double chlb_swap_le_s[CHLB_SWAP_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
};

static void swap_hist_add(struct chlb_swap_hist *h, double s)
{
	int i = 0;

	while (i < CHLB_SWAP_BUCKETS && s > chlb_swap_le_s[i])
		i++;
	h->n[i]++;
	h->sum_s += s;
}

/* A table that now serves: its decision fingerprint is due (chlb_rt_slot_fp). */
static void slot_fp_due(struct chlb_rt_slot *sl)
{
	sl->dfp_due = true;
	sl->has_dfp = false;
}

int chlb_rt_slot_fp(struct chlb_rt *rt, struct chlb_rt_svc *svc, struct chlb_rt_slot *sl, __u32 *fp)
{
	char err[CHLB_ERR_MAX], vip[CHLB_ADDRSTR];

	if (sl->dfp_due) {
		sl->dfp_due = false;
		chlb_fmt_vip(&svc->vip, vip, sizeof(vip));
		sl->has_dfp = !chlb_rt_table_fp(rt, sl->t.words, sl->t.nwords, sl->bes, sl->nbes,
						&sl->dfp, err, sizeof(err));
		if (sl->has_dfp)
			rt_log(rt, LOG_INFO, "service %s: table slot %d fingerprint %08x", vip,
			       (int)(sl - svc->slot), sl->dfp);
		else
			rt_log(rt, LOG_WARNING, "service %s: no table fingerprint: %s", vip, err);
	}
	*fp = sl->dfp;
	return sl->has_dfp ? 0 : -ENODATA;
}

/* Build + write + publish one service whose table changed. */
static int swap_service(struct chlb_rt *rt, const struct chlb_svc_cfg *c, bool table_changed,
			char *err, size_t errlen)
{
	struct chlb_rt_svc *s = chlb_rt_find(rt, &c->vip);
	__u64 t0 = chlb_now_ns(), t_built, t_written, now;
	struct chlb_table t = { 0 };
	struct chlb_table_be *built = NULL;
	__u32 *bes = NULL, nbes = 0;
	char vip[CHLB_ADDRSTR];
	int id, k, rc;

	chlb_fmt_vip(&c->vip, vip, sizeof(vip));
	if (s)
		s->verify = false; /* whatever comes next checks the adopted table */
	if (!s) {
		id = alloc_id(rt);
		if (id < 0)
			return chlb_err(err, errlen, -ENOSPC, "'%s': no free service id", vip);
		s = &rt->svc[id];
		memset(s, 0, sizeof(*s));
		s->vip = c->vip;
		table_changed = true;
		/* a freed id's counters are its last service's: this one starts at zero */
		if (rt->ops.reset_svc_stats && rt->ops.reset_svc_stats(rt->ops.ctx, (__u32)id))
			rt_log(rt, LOG_WARNING, "service %s: couldn't zero its counters (id %d)",
			       vip, id);
	}
	if (!table_changed) {
		rc = publish(rt, s, c);
		if (rc)
			return chlb_syserr(err, errlen, rc,
					   "'%s': couldn't update the service view", vip);
		rt_log(rt, LOG_INFO, "service %s: options updated (no table change)", vip);
		return 0;
	}
	rc = build_table(rt, (int)(s - rt->svc), c, s->nview ? &s->slot[s->view[0]] : NULL, &t,
			 &bes, &nbes, &built, t0, err, errlen);
	if (rc)
		return rc;
	t_built = chlb_now_ns();
	if (s->adopted && s->nview &&
	    !memcmp(&s->adopted_hdr, chlb_table_header(&t), sizeof(s->adopted_hdr))) {
		/* restart: the pinned current table is this one, bit for bit; keep serving it */
		struct chlb_rt_slot *cur = &s->slot[s->view[0]];

		s->adopted = false;
		chlb_table_free(&cur->t);
		free(cur->bes);
		free(cur->built_from);
		cur->t = t;
		cur->bes = bes;
		cur->nbes = nbes;
		cur->built_from = built;
		cur->nbuilt_from = nbes;
		cur->vnodes = c->vnodes;
		cur->prealloc = t.nwords;
		for (__u32 i = 0; i < nbes; i++)
			rt->be[bes[i]].trefs++;
		rc = publish(rt, s, c);
		if (rc)
			return chlb_syserr(err, errlen, rc,
					   "'%s': couldn't update the service view", vip);
		slot_fp_due(cur);
		rt_log(rt, LOG_DEBUG, "service %s: adopted table slot %u", vip, s->view[0]);
		return 0;
	}
	s->adopted = false;
	k = free_slot(rt, s);
	rc = k < 0 ? -EBUSY
		   : rt->ops.write_table(rt->ops.ctx,
					 (__u32)(s - rt->svc) * CHLB_SLOTS_PER_SERVICE + (__u32)k,
					 t.words, t.nwords);
	if (rc) {
		chlb_table_free(&t);
		free(bes);
		free(built);
		return chlb_syserr(err, errlen, rc, "'%s': couldn't write table slot %d", vip, k);
	}
	t_written = chlb_now_ns();
	s->slot[k].used = true;
	s->slot[k].t = t;
	s->slot[k].bes = bes;
	s->slot[k].nbes = nbes;
	s->slot[k].built_from = built;
	s->slot[k].nbuilt_from = nbes;
	s->slot[k].vnodes = c->vnodes;
	for (__u32 i = 0; i < nbes; i++)
		rt->be[bes[i]].trefs++;

	now = chlb_now_ns();
	if (s->nview == CHLB_HISTORY_MAX || (s->nview && !rt->history_ns)) {
		/* oldest (or every old one, without history) leaves the view */
		while (s->nview && (s->nview == CHLB_HISTORY_MAX || !rt->history_ns)) {
			s->nview--;
			s->slot[s->view[s->nview]].free_at = now + rt->grace_ns;
		}
	}
	memmove(&s->view[1], &s->view[0], s->nview * sizeof(s->view[0]));
	memmove(&s->replaced[1], &s->replaced[0], s->nview * sizeof(s->replaced[0]));
	if (s->nview)
		s->replaced[1] = now;
	s->view[0] = (__u32)k;
	s->replaced[0] = 0;
	s->nview++;
	s->used = true;
	rc = publish(rt, s, c);
	if (rc) {
		/* the view still names the old tables; undo our bookkeeping */
		s->nview--;
		memmove(&s->view[0], &s->view[1], s->nview * sizeof(s->view[0]));
		memmove(&s->replaced[0], &s->replaced[1], s->nview * sizeof(s->replaced[0]));
		slot_release(rt, &s->slot[k]);
		if (!s->nview)
			s->used = false;
		return chlb_syserr(err, errlen, rc, "'%s': couldn't publish the service view", vip);
	}
	s->swaps++;
	s->last_swap_ms = (double)(chlb_now_ns() - t0) / 1e6;
	swap_hist_add(&rt->swap_hist, s->last_swap_ms / 1e3);
	slot_fp_due(&s->slot[k]); /* logged when computed, after the reply */
	rt_log(rt, LOG_INFO,
	       "service %s: swapped to table slot %d: %s, %u backends, %u words, %.3f ms "
	       "(build %.3f, write %.3f, publish %.3f)",
	       vip, k, chlb_algo_name(c->algo), c->nbe, t.nwords, s->last_swap_ms,
	       (double)(t_built - t0) / 1e6, (double)(t_written - t_built) / 1e6,
	       (double)(chlb_now_ns() - t_written) / 1e6);
	return 0;
}

static void delete_service(struct chlb_rt *rt, struct chlb_rt_svc *s)
{
	struct chlb_vip_key key;
	char vip[CHLB_ADDRSTR];
	__u64 now = chlb_now_ns();

	chlb_vip_to_key(&s->vip, &key);
	rt->ops.del_service(rt->ops.ctx, &key);
	if (rt->ops.set_allow) /* the id's prefixes: a later service of this id starts clean */
		rt->ops.set_allow(rt->ops.ctx, (__u32)(s - rt->svc), NULL, 0, true);
	if (rt->ops.flush_persist) /* its clients too: their slots are gone with it */
		rt->ops.flush_persist(rt->ops.ctx, (__u32)(s - rt->svc));
	for (__u32 i = 0; i < s->nview; i++)
		s->slot[s->view[i]].free_at = now + rt->grace_ns;
	s->nview = 0;
	s->retiring = true;
	rt_log(rt, LOG_INFO, "service %s: deleted", chlb_fmt_vip(&s->vip, vip, sizeof(vip)));
}

/*
 * Keep the slots of c's backends in its service (so none of them is marked
 * DEAD). served: c's service when its serving table was built from c (an
 * unchanged service): the slots that table names, one per backend, without
 * looking each up.
 */
static void mark_wanted(struct chlb_rt *rt, const struct chlb_svc_cfg *c,
			const struct chlb_rt_svc *served)
{
	const struct chlb_rt_slot *sl =
	    served && served->nview && !served->adopted ? &served->slot[served->view[0]] : NULL;
	int id;

	if (sl && sl->bes && sl->nbes == c->nbe) {
		for (__u32 j = 0; j < sl->nbes; j++)
			if (sl->bes[j] < CHLB_MAX_BACKENDS)
				rt->be[sl->bes[j]].wanted = true;
		return;
	}
	id = chlb_rt_svc_id(rt, &c->vip);

	for (__u32 j = 0; id >= 0 && j < c->nbe; j++) {
		int slot = chlb_be_find(rt, id, &c->be[j].addr);

		if (slot >= 0)
			rt->be[slot].wanted = true;
	}
}

/*
 * The slot chlb_be_acquire() would find for (svc, a), skipping unowned
 * adopted slots an earlier pair of this count claimed; -1: needs a free one.
 */
static int held_slot(const struct chlb_rt *rt, int svc, const struct chlb_addr *a,
		     const __u8 *claimed)
{
	int s = chlb_be_find(rt, svc, a);

	if (s < 0 || rt->be[s].svc >= 0 || !claimed[s])
		return s;
	for (s = 0; s < CHLB_MAX_BACKENDS; s++) /* rare: a restart from a chlbd before owners */
		if (rt->be[s].state != CHLB_BE_EMPTY && rt->be[s].svc < 0 && !claimed[s] &&
		    chlb_addr_eq(&rt->be[s].addr, a))
			return s;
	return -1;
}

/*
 * Is a, next's backend, one of o's (what serves), walking both in order
 * from o->be[*k]: in its place, or the next one (one removed before it)?
 * A copy keeps the order, so one change leaves every other backend found
 * here, without a lookup.
 */
static bool served_in_order(const struct chlb_svc_cfg *o, __u32 *k, const struct chlb_addr *a)
{
	for (__u32 skip = 0; skip < 2 && *k + skip < o->nbe; skip++)
		if (chlb_addr_eq(&o->be[*k + skip].addr, a)) {
			*k += skip + 1;
			return true;
		}
	return false;
}

int chlb_rt_capacity(const struct chlb_rt *rt, const struct chlb_state *cur,
		     const struct chlb_state *next, char *err, size_t errlen)
{
	/* on the stack, not static: two runtimes in one process count safely */
	__u8 claimed[CHLB_MAX_BACKENDS];
	bool id_taken[CHLB_MAX_SERVICES];
	__u32 need = 0, nfree = 0, mine = 0, newsvc = 0, freeids = 0, unowned = 0;
	__u64 now = chlb_now_ns();
	int nextid = 0;

	memset(claimed, 0, sizeof(claimed));
	for (int i = 0; i < CHLB_MAX_SERVICES; i++) {
		id_taken[i] = rt->svc[i].used;
		freeids += !rt->svc[i].used;
	}
	for (__u32 i = 0; i < CHLB_MAX_BACKENDS; i++) {
		const struct chlb_rt_be *b = &rt->be[i];

		nfree += b->state == CHLB_BE_EMPTY && !b->trefs && b->hold_until <= now;
		unowned += b->state != CHLB_BE_EMPTY && b->svc < 0;
	}
	for (__u32 i = 0; i < next->nsvc; i++) {
		const struct chlb_svc_cfg *c = &next->svc[i];
		const struct chlb_svc_cfg *o = cur ? chlb_state_find(cur, &c->vip) : NULL;
		int id = chlb_rt_svc_id(rt, &c->vip);
		__u32 k = 0; /* where served_in_order() is in o's backends */

		/*
		 * A backend the service serves now holds a slot (a lookup each
		 * otherwise: most of a small change's check at 1,000 a service).
		 * Not when unowned slots exist: who claims which is counted.
		 */
		if (id < 0 || unowned)
			o = NULL;
		if (id < 0) { /* a new service: the id alloc_id() will give it */
			newsvc++;
			while (nextid < CHLB_MAX_SERVICES && id_taken[nextid])
				nextid++;
			if (nextid == CHLB_MAX_SERVICES) {
				need += c->nbe;
				continue;
			}
			id = nextid;
			id_taken[nextid] = true;
		}
		for (__u32 j = 0; j < c->nbe; j++) {
			int s;

			if (o && served_in_order(o, &k, &c->be[j].addr)) {
				mine++;
				continue;
			}
			s = held_slot(rt, id, &c->be[j].addr, claimed);
			if (s < 0) {
				need++;
				continue;
			}
			claimed[s] = 1;
			mine++;
		}
	}
	if (newsvc > freeids)
		return chlb_err(
		    err, errlen, -ENOSPC,
		    "not enough service ids: the change adds %u services and %u ids are "
		    "free (%u in all; a deleted service keeps its id until its tables' "
		    "grace period ends)",
		    newsvc, freeids, CHLB_MAX_SERVICES);
	if (need > nfree)
		return chlb_err(err, errlen, -ENOSPC,
				"not enough backend slots: the change needs %u new (service, "
				"backend) slots and %u are free (%u in all: %u kept by backends "
				"that stay, %u held by removed backends that tables in the history "
				"window or grace period still name)",
				need, nfree, CHLB_MAX_BACKENDS, mine,
				CHLB_MAX_BACKENDS - nfree - mine);
	return 0;
}

int chlb_rt_apply(struct chlb_rt *rt, const struct chlb_state *cur, struct chlb_state *next,
		  char *err, size_t errlen)
{
	char first[CHLB_ERR_MAX] = "", msg[CHLB_ERR_MAX];
	/* on the stack (~6 KB), not static: two runtimes in one process apply safely */
	struct chlb_vip failed[CHLB_MAX_SERVICES + 1];
	int bad = 0, rc, first_rc = 0;

	rt->changes++;
	/* deletions first: frees ids and slots for the additions */
	for (int i = 0; i < CHLB_MAX_SERVICES; i++) {
		struct chlb_rt_svc *s = &rt->svc[i];

		if (s->used && !s->retiring && !chlb_state_find(next, &s->vip))
			delete_service(rt, s);
	}
	for (int i = 0; i < CHLB_MAX_BACKENDS; i++)
		rt->be[i].wanted = false;
	for (__u32 i = 0; i < next->nsvc; i++) {
		const struct chlb_svc_cfg *n = &next->svc[i];
		const struct chlb_svc_cfg *o = chlb_state_find(cur, &n->vip);
		struct chlb_rt_svc *s = chlb_rt_find(rt, &n->vip);
		bool unchanged = o && s && chlb_svc_equal(o, n);

		/* mark wanted so no slot of a backend still in use gets released */
		mark_wanted(rt, n, unchanged ? s : NULL);
		if (unchanged)
			continue;
		if (!o && s && s->adopted && rt->defer_adopted) {
			s->verify = true; /* keeps serving what it served; checked later */
			continue;
		}
		bool table_changed = !o || !s || o->algo != n->algo || o->nbe != n->nbe ||
				     o->vnodes != n->vnodes || o->table_size != n->table_size ||
				     !chlb_svc_equal(o, n) || o->hash != n->hash;
		if (o && s && chlb_svc_view_equal(o, n) == false && o->hash == n->hash) {
			/* options only: same table unless members/params also changed */
			struct chlb_svc_cfg tmp = *o;

			tmp.fwd = n->fwd;
			tmp.mtu = n->mtu;
			tmp.encap_src = n->encap_src;
			tmp.nallow = n->nallow;
			memcpy(tmp.allow, n->allow, sizeof(tmp.allow));
			tmp.persist_s = n->persist_s;
			tmp.persist_plen = n->persist_plen;
			table_changed = !chlb_svc_equal(&tmp, n);
		}
		rc = swap_service(rt, n, table_changed, msg, sizeof(msg));
		if (rc) {
			if (!bad) {
				snprintf(first, sizeof(first), "%s", msg);
				first_rc = rc;
			}
			failed[bad++] = n->vip;
			rt_log(rt, LOG_ERR, "%s", msg);
		}
		if (rt->yield) /* a swap can take 10+ ms: let read-only requests through */
			rt->yield();
	}
	if (bad && rt->settle)
		rt->settle();
	for (int i = 0; i < bad; i++) {
		const struct chlb_svc_cfg *old = chlb_state_find(cur, &failed[i]);

		chlb_state_put_svc(next, &failed[i], old); /* back to what serves */
		if (old) /* it still serves its old table: its backends stay LIVE */
			mark_wanted(rt, old, NULL);
	}
	/*
	 * slots no view picks any more: DEAD (flows re-decided, never sent to a
	 * new occupant). Slots are per service: another service's slot for the
	 * same address is not touched.
	 */
	for (int i = 0; i < CHLB_MAX_BACKENDS; i++) {
		struct chlb_rt_be *b = &rt->be[i];

		if (b->state == CHLB_BE_LIVE && !b->wanted) {
			b->state = CHLB_BE_DEAD;
			chlb_be_write(rt, (__u32)i);
		}
	}
	if (bad)
		return chlb_err(err, errlen, first_rc, "%s%s", first,
				bad > 1 ? " (and more; see the log)" : "");
	return 0;
}

int chlb_rt_verify_next(struct chlb_rt *rt, const struct chlb_state *st)
{
	char err[CHLB_ERR_MAX];

	for (int i = 0; i < CHLB_MAX_SERVICES; i++) {
		struct chlb_rt_svc *s = &rt->svc[i];
		const struct chlb_svc_cfg *c;

		if (!s->used || !s->verify)
			continue;
		s->verify = false;
		rt->changes++;
		c = chlb_state_find(st, &s->vip);
		if (c && swap_service(rt, c, true, err, sizeof(err)))
			rt_log(rt, LOG_ERR, "%s", err);
		for (int j = i + 1; j < CHLB_MAX_SERVICES; j++)
			if (rt->svc[j].used && rt->svc[j].verify)
				return 1;
		return 0;
	}
	return 0;
}

/*
 * How long a replaced table of s stays in the view. UDP has no SYN: an
 * entry-less datagram is decided by the oldest table, right for flows that
 * began before the change. But every UDP flow still running sends within
 * the UDP idle timeout, and its datagram then writes the entry the view's
 * disagreeing tables call for; after that an entry-less datagram is a new
 * flow, and the current table alone must decide it (else a drained or
 * health-down backend kept getting new UDP flows for --history-ms, and an
 * added one none).
 */
static __u64 history_of(const struct chlb_rt *rt, const struct chlb_rt_svc *s)
{
	if (s->vip.proto == IPPROTO_UDP && rt->udp_history_ns &&
	    rt->udp_history_ns < rt->history_ns)
		return rt->udp_history_ns;
	return rt->history_ns;
}

/*
 * Preallocating slots costs an RCU grace period (milliseconds: the kernel
 * waits for it when a new inner map replaces one); after a large change
 * hundreds are due. A tick creates inner maps for at most this long (at
 * least one) and installs them together, one grace period for all of them,
 * the slot each service's next swap writes first; then it asks to be called
 * again at once: the event loop answers requests in between instead of
 * stalling for seconds.
 */
#define PREALLOC_BUDGET_NS 2000000ull

/* The slots due for preallocation: each service's next one first, then the rest. */
static __u32 pre_n, pre_rest, pre_tslot[CHLB_TABLE_SLOTS], pre_words[CHLB_TABLE_SLOTS];
static __u32 rest_tslot[CHLB_TABLE_SLOTS], rest_words[CHLB_TABLE_SLOTS];

static void prealloc_due(struct chlb_rt *rt, __u64 budget_end, __u64 *next, __u64 now)
{
	int done;

	memcpy(pre_tslot + pre_n, rest_tslot, pre_rest * sizeof(*pre_tslot));
	memcpy(pre_words + pre_n, rest_words, pre_rest * sizeof(*pre_words));
	pre_n += pre_rest;
	if (!pre_n)
		return;
	done = rt->ops.prealloc(rt->ops.ctx, pre_tslot, pre_words, pre_n, budget_end);
	for (int j = 0; j < done; j++) {
		struct chlb_rt_svc *s = &rt->svc[pre_tslot[j] / CHLB_SLOTS_PER_SERVICE];

		s->slot[pre_tslot[j] % CHLB_SLOTS_PER_SERVICE].prealloc = pre_words[j];
	}
	/* more to do: the next tick goes on (one that keeps failing waits for the usual tick) */
	if (done > 0 && (__u32)done < pre_n)
		*next = now;
}

__u64 chlb_rt_tick(struct chlb_rt *rt, __u64 now)
{
	__u64 next = ~0ull, budget_end = chlb_now_ns() + PREALLOC_BUDGET_NS;

	chlb_be_refresh_nexthops(rt, now);
	if (rt->ops.resolve)
		next = rt->nh_next;

	pre_n = pre_rest = 0;
	for (int i = 0; i < CHLB_MAX_SERVICES; i++) {
		struct chlb_rt_svc *s = &rt->svc[i];
		bool busy = false;

		if (!s->used)
			continue;
		/* history tables past the window leave the view, oldest first */
		if (s->nview > 1) {
			__u32 n = s->nview;
			__u64 window = history_of(rt, s);
			struct chlb_vip_key key;

			while (n > 1 && now >= s->replaced[n - 1] + window) {
				n--;
				s->slot[s->view[n]].free_at = now + rt->grace_ns;
			}
			if (n != s->nview) {
				s->nview = n;
				s->sv.ntables = (__u8)n;
				chlb_vip_to_key(&s->vip, &key);
				rt->ops.set_service(rt->ops.ctx, &key, &s->sv);
			}
			if (s->nview > 1 && s->replaced[s->nview - 1] + window < next)
				next = s->replaced[s->nview - 1] + window;
		}
		for (int k = 0, first = 1; k < CHLB_SLOTS_PER_SERVICE; k++) {
			struct chlb_rt_slot *sl = &s->slot[k];
			__u32 fp;

			if (sl->used && sl->dfp_due) /* after the swap's reply went out */
				chlb_rt_slot_fp(rt, s, sl, &fp);

			if (!sl->used && s->nview && !s->retiring && rt->ops.prealloc) {
				/* a later swap writes here: size it now, not in the swap's path */
				__u32 want = s->slot[s->view[0]].t.nwords;
				__u32 tslot = (__u32)i * CHLB_SLOTS_PER_SERVICE + (__u32)k;

				if (want > sl->prealloc && first) { /* the next swap's slot */
					pre_tslot[pre_n] = tslot;
					pre_words[pre_n++] = want + want / 8;
				} else if (want > sl->prealloc) {
					rest_tslot[pre_rest] = tslot;
					rest_words[pre_rest++] = want + want / 8;
				}
				first = 0;
			}
			if (!sl->used || in_view(s, k))
				continue;
			if (sl->free_at <= now) {
				slot_release(rt, sl);
				continue;
			}
			busy = true;
			if (sl->free_at < next)
				next = sl->free_at;
		}
		if (s->retiring && !busy)
			memset(s, 0, sizeof(*s));
	}
	for (int i = 0; i < CHLB_MAX_BACKENDS; i++) {
		struct chlb_rt_be *b = &rt->be[i];

		if (b->state != CHLB_BE_DEAD || b->wanted || b->trefs)
			continue;
		if (b->hold_until > now) {
			if (b->hold_until < next)
				next = b->hold_until;
			continue;
		}
		b->state = CHLB_BE_EMPTY;
		chlb_be_write(rt, (__u32)i);
	}
	prealloc_due(rt, budget_end, &next, now);
	return next == ~0ull ? 0 : next;
}

int chlb_rt_adopt(struct chlb_rt *rt, const struct chlb_adopt_ops *aops,
		  const struct chlb_state *st)
{
	__u64 now = chlb_now_ns(), hold = now + rt->history_ns + rt->grace_ns;
	int adopted = 0;

	rt->changes++;
	for (__u32 i = 0; i < CHLB_MAX_BACKENDS; i++) {
		struct chlb_backend b;
		struct chlb_rt_be *r = &rt->be[i];

		if (aops->get_backend(rt->ops.ctx, i, &b))
			continue;
		r->gen = b.gen;
		if (b.state != CHLB_BE_LIVE && b.state != CHLB_BE_DEAD)
			continue;
		r->state = b.state;
		/* the owner, kept in the flags; none from a chlbd before per-service slots */
		r->svc = b.flags & CHLB_BE_F_OWNER ? b.flags >> CHLB_BE_OWNER_SHIFT : -1;
		r->addr.family = b.family;
		memcpy(r->addr.a, b.addr, 16);
		r->last = b;
		chlb_be_link(rt, i);
		r->hold_until = hold; /* tables we did not build may name it */
	}
	for (__u32 i = 0; i < st->nsvc; i++) {
		const struct chlb_svc_cfg *c = &st->svc[i];
		struct chlb_vip_key key;
		struct chlb_service v;
		struct chlb_rt_svc *s;

		chlb_vip_to_key(&c->vip, &key);
		if (aops->get_service(rt->ops.ctx, &key, &v) || v.id >= CHLB_MAX_SERVICES ||
		    rt->svc[v.id].used || v.ntables < 1 || v.ntables > CHLB_HISTORY_MAX)
			continue;
		s = &rt->svc[v.id];
		s->used = true;
		s->vip = c->vip;
		s->sv = v;
		s->nview = v.ntables;
		for (__u32 t = 0; t < v.ntables; t++) {
			__u32 k = v.table[t] - v.id * CHLB_SLOTS_PER_SERVICE;

			if (k >= CHLB_SLOTS_PER_SERVICE)
				k = 0;
			s->view[t] = k;
			s->slot[k].used = true;
			s->replaced[t] = t ? now : 0;
		}
		if (aops->get_table_hdr &&
		    !aops->get_table_hdr(rt->ops.ctx, v.table[0], &s->adopted_hdr) &&
		    s->adopted_hdr.magic == CHLB_TABLE_MAGIC)
			s->adopted = true;
		adopted++;
	}
	return adopted;
}
