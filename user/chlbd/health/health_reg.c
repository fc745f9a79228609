// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The checkers' registry: one struct hc per (service, backend), found by
 * hash, listed for the scans; the per-service health records (panic); the
 * slow-start weight. Below the checker (health.c) and the effective state
 * (health_apply.c), which both read it.
 */
#include <stdlib.h>
#include <string.h>
#include "health/health.h"

#define HC_HASH 4096

static struct hc *heads[HC_HASH];
static struct hc **all;
static __u32 nall, capall;
static struct hc_svc svcs[CHLB_MAX_SERVICES];

static __u32 hc_hash(const struct chlb_vip *v, const struct chlb_addr *a)
{
	__u32 h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ v->addr.a[i]) * 16777619u;
	h = (h ^ v->port) * 16777619u;
	h = (h ^ v->proto) * 16777619u;
	for (int i = 0; i < 16; i++)
		h = (h ^ a->a[i]) * 16777619u;
	return h & (HC_HASH - 1);
}

const char *health_state_name(__u8 st)
{
	return st == HC_UP ? "up" : st == HC_DOWN ? "down" : "unknown";
}

struct hc *health_find(const struct chlb_vip *vip, const struct chlb_addr *a)
{
	for (struct hc *h = heads[hc_hash(vip, a)]; h; h = h->hnext)
		if (chlb_vip_eq(&h->vip, vip) && chlb_addr_eq(&h->addr, a))
			return h;
	return NULL;
}

struct hc_svc *health_svc(const struct chlb_vip *vip)
{
	/* after the last hit first: callers go through the services in order, each found at once */
	static int next;
	struct hc_svc *free_one = NULL;

	for (int k = 0, i = next; k < CHLB_MAX_SERVICES;
	     k++, i = i + 1 < CHLB_MAX_SERVICES ? i + 1 : 0)
		if (svcs[i].used && chlb_vip_eq(&svcs[i].vip, vip)) {
			next = i + 1 < CHLB_MAX_SERVICES ? i + 1 : 0;
			return &svcs[i];
		}
	for (int i = 0; i < CHLB_MAX_SERVICES && !free_one; i++)
		if (!svcs[i].used)
			free_one = &svcs[i];
	if (free_one) {
		memset(free_one, 0, sizeof(*free_one));
		free_one->used = true;
		free_one->vip = *vip;
	}
	return free_one;
}

void health_svc_keep(const struct chlb_state *st)
{
	for (int i = 0; i < CHLB_MAX_SERVICES; i++)
		if (svcs[i].used && !chlb_state_find(st, &svcs[i].vip))
			svcs[i].used = false;
}

struct hc **health_list(__u32 *n)
{
	*n = nall;
	return all;
}

void health_list_free(void)
{
	free(all);
	all = NULL;
	nall = capall = 0;
}

struct hc *health_checker_new(const struct chlb_vip *vip, const struct chlb_cfg_be *b, __u64 now)
{
	struct hc *h = calloc(1, sizeof(*h));
	__u32 k = hc_hash(vip, &b->addr);

	if (!h)
		return NULL;
	if (nall == capall) {
		__u32 cap = capall ? capall * 2 : 64;
		void *p = realloc(all, cap * sizeof(*all));

		if (!p) {
			free(h);
			return NULL;
		}
		all = p;
		capall = cap;
	}
	all[nall++] = h;
	h->ev.type = LOOP_EV_HEALTH;
	h->fd = -1;
	h->vip = *vip;
	h->addr = b->addr;
	snprintf(h->name, sizeof(h->name), "%s", b->name);
	h->since_ns = now;
	h->since_wall = time(NULL);
	snprintf(h->reason, sizeof(h->reason), "no result yet");
	h->hnext = heads[k];
	heads[k] = h;
	return h;
}

/*
 * Checkers removed during a batch of events are freed at the next tick,
 * after the batch: an event of that batch may still point at one (its
 * socket is closed at once, so health_probe_event() ignores it).
 */
static struct hc *graveyard;

void health_checker_del(__u32 i)
{
	struct hc *h = all[i], **p = &heads[hc_hash(&h->vip, &h->addr)];

	while (*p && *p != h)
		p = &(*p)->hnext;
	if (*p)
		*p = h->hnext;
	all[i] = all[--nall];
	h->hnext = graveyard;
	graveyard = h;
}

void health_checker_bury(void)
{
	while (graveyard) {
		struct hc *h = graveyard;

		graveyard = h->hnext;
		free(h);
	}
}

/* Slow start: the weight h serves with now; 0 when down. Panic is the service's (apply). */
__u32 health_weight(const struct hc *h, __u32 cfg_weight, __u32 slow_start_s, __u64 now)
{
	__u64 span = (__u64)slow_start_s * 1000000000ull, el;
	__u32 w;

	if (!cfg_weight)
		return 0;
	if (h->ck.type != CHLB_CHECK_NONE && h->state == HC_DOWN)
		return 0;
	if (!h->ramp_start_ns || !span)
		return cfg_weight;
	el = now - h->ramp_start_ns;
	if (el >= span)
		return cfg_weight;
	/* steps at 0, span/4 ... 3 span/4: 1/5 .. 4/5 of the weight; all of it at span */
	w = (__u32)((__u64)cfg_weight * (el * (HC_RAMP_STEPS - 1) / span + 1) / HC_RAMP_STEPS);
	return w ? w : 1;
}

bool health_be_wanted(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b)
{
	__u8 type = b->check && (b->check->set & CHLB_CK_TYPE) ? b->check->type : s->check.type;

	return type != CHLB_CHECK_NONE || s->health.slow_start_s;
}

bool health_svc_wanted(const struct chlb_svc_cfg *s)
{
	if (s->check.type != CHLB_CHECK_NONE || s->health.slow_start_s)
		return true;
	for (__u32 j = 0; j < s->nbe; j++)
		if (health_be_wanted(s, &s->be[j]))
			return true;
	return false;
}
