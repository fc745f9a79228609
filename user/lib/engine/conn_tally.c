// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Connection-table entries -> services, backends, states (see
 * conn_tally.h). A full table is a million entries, so the lookups are a
 * binary search over the services sorted once per tally (destination) and
 * an array indexed by slot (backend), not scans.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/conn_tally.h"

const char *chlb_conn_state_name(enum chlb_conn_state s)
{
	return s == CHLB_CONN_LIVE    ? "live"
	       : s == CHLB_CONN_ENDED ? "ended"
	       : s == CHLB_CONN_HELD  ? "held"
				      : "stale";
}

static int cmp_vip_idx(const void *a, const void *b, void *ctx)
{
	const struct chlb_state *st = ctx;

	return chlb_vip_cmp(&st->svc[*(const __u32 *)a].vip, &st->svc[*(const __u32 *)b].vip);
}

int chlb_ct_tally_init(struct chlb_ct_tally *t, const struct chlb_state *st,
		       const struct chlb_rt *rt, __u64 now_ns, __u64 udp_idle_ns, __u64 tcp_idle_ns)
{
	memset(t, 0, sizeof(*t));
	t->st = st;
	t->rt = rt;
	t->now_ns = now_ns;
	t->udp_idle_ns = udp_idle_ns;
	t->tcp_idle_ns = tcp_idle_ns;
	t->svc = calloc(st->nsvc ? st->nsvc : 1, sizeof(*t->svc));
	t->vip_order = calloc(st->nsvc ? st->nsvc : 1, sizeof(*t->vip_order));
	t->by_slot = malloc(CHLB_MAX_BACKENDS * sizeof(*t->by_slot));
	if (!t->svc || !t->vip_order || !t->by_slot)
		goto nomem;
	for (__u32 k = 0; k < CHLB_MAX_BACKENDS; k++)
		t->by_slot[k] = (struct chlb_ct_owner){ .svc = -1, .be = -1 };
	for (__u32 i = 0; i < st->nsvc; i++) {
		const struct chlb_svc_cfg *s = &st->svc[i];
		struct chlb_ct_svc *ts = &t->svc[i];
		int id = chlb_rt_svc_id(rt, &s->vip);

		t->vip_order[i] = i;
		ts->be = calloc(s->nbe ? s->nbe : 1, sizeof(*ts->be));
		if (!ts->be)
			goto nomem;
		for (__u32 j = 0; j < s->nbe; j++) {
			int slot = chlb_rt_be_slot(rt, id, &s->be[j].addr);

			ts->be[j].slot = slot;
			/* the first pair only: an unowned adopted slot answers for every service */
			if (slot >= 0 && t->by_slot[slot].svc < 0)
				t->by_slot[slot] =
				    (struct chlb_ct_owner){ .svc = (int)i, .be = (int)j };
		}
	}
	qsort_r(t->vip_order, st->nsvc, sizeof(*t->vip_order), cmp_vip_idx, (void *)st);
	return 0;
nomem:
	chlb_ct_tally_free(t);
	return -ENOMEM;
}

void chlb_ct_tally_free(struct chlb_ct_tally *t)
{
	for (__u32 i = 0; t->svc && i < t->st->nsvc; i++)
		free(t->svc[i].be);
	free(t->svc);
	free(t->vip_order);
	free(t->by_slot);
	t->svc = NULL;
	t->vip_order = NULL;
	t->by_slot = NULL;
}

static int find_vip(const struct chlb_ct_tally *t, const struct chlb_vip *v)
{
	__u32 lo = 0, hi = t->st->nsvc;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;
		int r = chlb_vip_cmp(&t->st->svc[t->vip_order[mid]].vip, v);

		if (!r)
			return (int)t->vip_order[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int chlb_ct_tally_service(const struct chlb_ct_tally *t, const struct chlb_flow *f)
{
	struct chlb_vip v;
	int i;

	chlb_flow_dst_vip(f, &v);
	i = find_vip(t, &v);
	if (i < 0 && v.port) {
		v.port = 0; /* the wildcard, as the data plane falls back to it */
		i = find_vip(t, &v);
	}
	return i;
}

static bool idle_out(const struct chlb_ct_tally *t, const struct chlb_flow *f,
		     const struct chlb_conn *c)
{
	__u64 limit = f->proto == IPPROTO_UDP ? t->udp_idle_ns : t->tcp_idle_ns;

	/* last_ns 0: written by a data plane that kept no time; it does not idle it out */
	return limit && c->last_ns && t->now_ns > c->last_ns && t->now_ns - c->last_ns >= limit;
}

/* A held placeholder the data plane still honours (bpf/chlb_stick.h, conn_held). */
static bool held(const struct chlb_ct_tally *t, const struct chlb_conn *c)
{
	/* written after this tally read the clock: held */
	return (c->flags & CHLB_CONN_F_HELD) &&
	       (c->last_ns >= t->now_ns || t->now_ns - c->last_ns < CHLB_CONN_HELD_MAX_NS);
}

enum chlb_conn_state chlb_ct_tally_add(struct chlb_ct_tally *t, const struct chlb_flow *f,
				       const struct chlb_conn *c, int *svc, int *be)
{
	const struct chlb_rt_be *rb =
	    c->backend < CHLB_MAX_BACKENDS ? &t->rt->be[c->backend] : NULL;
	enum chlb_conn_state state;
	struct chlb_ct_svc *ts;

	t->entries++;
	*be = -1;
	/* what the data plane checks before it follows an entry */
	if (!rb || rb->state != CHLB_BE_LIVE || rb->gen != c->gen || idle_out(t, f, c))
		state = held(t, c) ? CHLB_CONN_HELD : CHLB_CONN_STALE;
	else if (c->flags & CHLB_CONN_F_ENDED)
		state = CHLB_CONN_ENDED;
	else
		state = CHLB_CONN_LIVE;
	*svc = chlb_ct_tally_service(t, f);
	if (*svc < 0) {
		t->other++; /* the data plane never looks it up */
		return state;
	}
	/* (a valid entry's slot is < CHLB_MAX_BACKENDS: rb was checked) */
	if ((state == CHLB_CONN_LIVE || state == CHLB_CONN_ENDED) &&
	    t->by_slot[c->backend].svc >= 0) {
		/* followed: it belongs to the one (service, backend) its slot is */
		*svc = t->by_slot[c->backend].svc;
		*be = t->by_slot[c->backend].be;
	}
	ts = &t->svc[*svc];
	ts->entries++;
	if (state == CHLB_CONN_STALE) {
		ts->stale++;
		return state;
	}
	if (state == CHLB_CONN_HELD) {
		ts->held++;
		return state;
	}
	if (state == CHLB_CONN_ENDED)
		ts->ended++;
	else
		ts->live++;
	if (*be >= 0 && state == CHLB_CONN_ENDED)
		ts->be[*be].ended++;
	else if (*be >= 0)
		ts->be[*be].live++;
	return state;
}
