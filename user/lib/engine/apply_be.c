// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Backend slots, one per (service, backend address): (service, address) ->
 * slot index, writes that keep a removed backend's next hop for in-flight
 * readers, new occupants with generation + 1 and zeroed counters, and the
 * background next-hop refresh, which resolves each address once for all of
 * its slots. Part of the apply engine (apply.h).
 */
#include <errno.h>
#include <string.h>
#include <syslog.h>
#include "engine/apply_int.h"

static __u32 be_hash(const struct chlb_addr *a)
{
	return chlb_crc32c(a, sizeof(*a)) & (CHLB_BE_HASH - 1);
}

void chlb_be_link(struct chlb_rt *rt, __u32 slot)
{
	__u32 h = be_hash(&rt->be[slot].addr);

	rt->be_next[slot] = rt->be_head[h];
	rt->be_head[h] = (__s32)slot;
}

static void be_unlink(struct chlb_rt *rt, __u32 slot)
{
	__s32 *p = &rt->be_head[be_hash(&rt->be[slot].addr)];

	while (*p >= 0 && *p != (__s32)slot)
		p = &rt->be_next[*p];
	if (*p >= 0)
		*p = rt->be_next[slot];
	rt->be_next[slot] = -1;
}

/*
 * Slot of addr in service svc (LIVE or DEAD), or -1. A slot adopted from a
 * chlbd that kept no owners (svc -1) was shared by every service listing
 * the address: it answers for any of them until one claims it.
 */
int chlb_be_find(const struct chlb_rt *rt, int svc, const struct chlb_addr *a)
{
	int unowned = -1;

	for (__s32 s = rt->be_head[be_hash(a)]; s >= 0; s = rt->be_next[s]) {
		const struct chlb_rt_be *b = &rt->be[s];

		if (b->state == CHLB_BE_EMPTY || !chlb_addr_eq(&b->addr, a))
			continue;
		if (b->svc == svc)
			return s;
		if (b->svc < 0 && unowned < 0)
			unowned = s;
	}
	return unowned;
}

int chlb_rt_be_slot(const struct chlb_rt *rt, int svc_id, const struct chlb_addr *a)
{
	int s = svc_id >= 0 ? chlb_be_find(rt, svc_id, a) : -1;

	return s >= 0 && rt->be[s].state == CHLB_BE_LIVE ? s : -1;
}

int chlb_rt_be_renew(struct chlb_rt *rt, int svc_id, const struct chlb_addr *a)
{
	int s = chlb_rt_be_slot(rt, svc_id, a);

	if (s < 0)
		return -ENOENT;
	rt->be[s].gen++;
	return chlb_be_write(rt, (__u32)s);
}

#define NH_REFRESH_NS  1000000000ull /* a round per second */
#define NH_REFRESH_MAX 64	     /* addresses resolved per round (each a netlink round trip) */

/* The next-hop part of a backend value: what resolve() fills. */
static void nh_copy(struct chlb_backend *to, const struct chlb_backend *from)
{
	memcpy(to->dmac, from->dmac, sizeof(to->dmac));
	memcpy(to->smac, from->smac, sizeof(to->smac));
	to->ifindex = from->ifindex;
	to->flags = (__u16)((to->flags & ~CHLB_BE_F_NH_VALID) | (from->flags & CHLB_BE_F_NH_VALID));
}

/*
 * Another LIVE slot of the same address (another service's) whose next hop
 * was resolved, or tried, within the last second: its answer stands for
 * this slot too, so an address joining many services at once costs one
 * netlink round trip, and an unresolved one one neighbour poke.
 */
static const struct chlb_rt_be *nh_sibling(const struct chlb_rt *rt, __u32 slot, __u64 now)
{
	const struct chlb_addr *a = &rt->be[slot].addr;

	for (__s32 s = rt->be_head[be_hash(a)]; s >= 0; s = rt->be_next[s]) {
		const struct chlb_rt_be *b = &rt->be[s];

		if ((__u32)s != slot && b->state == CHLB_BE_LIVE && b->nh_ns &&
		    now - b->nh_ns < NH_REFRESH_NS && chlb_addr_eq(&b->addr, a))
			return b;
	}
	return NULL;
}

/*
 * What a resolution of address a's next hop said about its route, for all
 * of its LIVE slots. Without a route the data plane drops the backend's
 * packets (drop_no_route): the first failure is logged, once per address
 * whatever the number of its services, and so is the recovery. -EAGAIN (a
 * route, the neighbour being resolved) counts as a route; other errors
 * say nothing about it.
 */
static void nh_route_note(struct chlb_rt *rt, const struct chlb_addr *a, int rc)
{
	bool now = rc == -ENETUNREACH, was = false;
	char as[CHLB_ADDRSTR];
	__u32 n = 0;

	if (rc && !now && rc != -EAGAIN)
		return;
	for (__s32 s = rt->be_head[be_hash(a)]; s >= 0; s = rt->be_next[s]) {
		struct chlb_rt_be *b = &rt->be[s];

		if (b->state != CHLB_BE_LIVE || !chlb_addr_eq(&b->addr, a))
			continue;
		was |= b->no_route;
		b->no_route = now;
		n++;
	}
	if (now && !was)
		rt_log(rt, LOG_WARNING,
		       "backend %s: no route to it (%u service%s): its packets are dropped, "
		       "counted as drop_no_route",
		       chlb_fmt_addr(a, as, sizeof(as)), n, n == 1 ? "" : "s");
	else if (!now && was)
		rt_log(rt, LOG_INFO, "backend %s: route to it again (%u service%s)",
		       chlb_fmt_addr(a, as, sizeof(as)), n, n == 1 ? "" : "s");
}

/*
 * Writes the slot from its bookkeeping. A removal (DEAD/EMPTY) only flips the
 * state and keeps the next hop: a packet that read "LIVE" just before may
 * read the rest of the value just after (an array update is a plain copy).
 */
int chlb_be_write(struct chlb_rt *rt, __u32 slot)
{
	struct chlb_rt_be *b = &rt->be[slot];
	struct chlb_backend v = b->last;

	memcpy(v.addr, b->addr.a, 16);
	v.family = b->addr.family;
	v.state = b->state;
	v.gen = b->gen;
	v.flags &= (__u16) ~(CHLB_BE_F_OWNER | (0xffu << CHLB_BE_OWNER_SHIFT));
	if (b->svc >= 0)
		v.flags |= (__u16)(CHLB_BE_F_OWNER | ((__u32)b->svc << CHLB_BE_OWNER_SHIFT));
	v.flags = (__u16)(b->no_new ? v.flags | CHLB_BE_F_NO_NEW : v.flags & ~CHLB_BE_F_NO_NEW);
	if (b->state == CHLB_BE_LIVE && rt->ops.resolve) {
		__u64 now = chlb_now_ns();
		const struct chlb_rt_be *sib = nh_sibling(rt, slot, now);
		struct chlb_backend r = v;

		int nh_rc;

		if (sib) {
			nh_copy(&v, &sib->last);
			b->nh_ns = sib->nh_ns;
			b->no_route = sib->no_route;
		} else {
			b->nh_ns = now;
			nh_rc = rt->ops.resolve(rt->ops.ctx, &r);
			if (!nh_rc)
				v = r; /* unresolved: keep what we had; the data plane asks the FIB */
			else if (nh_rc == -ENETUNREACH) /* no route: the old hop is no better */
				v.flags &= (__u16)~CHLB_BE_F_NH_VALID;
			nh_route_note(rt, &b->addr, nh_rc);
		}
	}
	b->last = v;
	return rt->ops.set_backend(rt->ops.ctx, slot, &v);
}

/* A new occupant of the slot (gen + 1): its counters start at zero. */
static void new_occupant(struct chlb_rt *rt, __u32 slot)
{
	char a[CHLB_ADDRSTR];

	rt->be[slot].gen++;	       /* conn entries of the previous occupant become stale */
	rt->be[slot].no_route = false; /* its route is news again (nh_route_note) */
	if (rt->ops.reset_stats && rt->ops.reset_stats(rt->ops.ctx, slot))
		rt_log(rt, LOG_WARNING, "backend slot %u (%s): couldn't zero its counters", slot,
		       chlb_fmt_addr(&rt->be[slot].addr, a, sizeof(a)));
}

/*
 * Slot for addr in service svc: the one the pair holds, else a free one. A
 * DEAD slot of the pair (removed, and named by no view's current table)
 * comes back as a new occupant too: its connections were broken by the
 * removal, and the entries they left must not be followed again.
 */
int chlb_be_acquire(struct chlb_rt *rt, int svc, const struct chlb_addr *a, __u64 now)
{
	int i = chlb_be_find(rt, svc, a), free_slot = -1, rc;

	if (i >= 0) {
		struct chlb_rt_be *b = &rt->be[i];
		bool claim = b->svc != svc; /* adopted without an owner: this service's now */

		b->wanted = true;
		b->svc = svc;
		if (b->state != CHLB_BE_LIVE) {
			b->state = CHLB_BE_LIVE;
			new_occupant(rt, (__u32)i);
		} else if (!claim) {
			return i;
		}
		rc = chlb_be_write(rt, (__u32)i);
		return rc ? rc : i;
	}
	for (__u32 k = 0; k < CHLB_MAX_BACKENDS; k++) {
		__u32 j = (rt->free_hint + k) % CHLB_MAX_BACKENDS;
		const struct chlb_rt_be *b = &rt->be[j];

		if (b->state == CHLB_BE_EMPTY && !b->trefs && b->hold_until <= now) {
			free_slot = (int)j;
			break;
		}
	}
	if (free_slot < 0)
		return -ENOSPC;
	rt->free_hint = (__u32)free_slot + 1;
	be_unlink(rt, (__u32)free_slot);
	rt->be[free_slot].addr = *a;
	rt->be[free_slot].svc = svc;
	chlb_be_link(rt, (__u32)free_slot);
	memset(&rt->be[free_slot].last, 0, sizeof(rt->be[free_slot].last));
	rt->be[free_slot].nh_ns = 0;
	rt->be[free_slot].state = CHLB_BE_LIVE;
	new_occupant(rt, (__u32)free_slot);
	rt->be[free_slot].wanted = true;
	rc = chlb_be_write(rt, (__u32)free_slot);
	return rc ? rc : free_slot;
}

/*
 * Next hops change (a neighbour's MAC, a route) and may be unresolved when a
 * backend is written: re-resolve LIVE backends, NH_REFRESH_MAX addresses a
 * round, and write only what changed. An address in several services is
 * resolved once for all of its slots (and marked for this cycle of the
 * cursor, so its other slots are not resolved again when the cursor gets
 * to them). An unresolved one keeps what it had (the data plane asks the
 * FIB per packet meanwhile) and the kernel is nudged to resolve it; one
 * without a route loses it (its packets are dropped as drop_no_route, and
 * a route found later by the data plane's FIB lookup is used at once).
 */
void chlb_be_refresh_nexthops(struct chlb_rt *rt, __u64 now)
{
	if (!rt->ops.resolve || now < rt->nh_next)
		return;
	rt->nh_next = now + NH_REFRESH_NS;
	for (__u32 k = 0, done = 0; k < CHLB_MAX_BACKENDS && done < NH_REFRESH_MAX; k++) {
		__u32 cycle = rt->nh_cursor / CHLB_MAX_BACKENDS + 1;
		__u32 i = rt->nh_cursor++ % CHLB_MAX_BACKENDS, n = 0, changed = 0;
		const struct chlb_addr *a = &rt->be[i].addr;
		struct chlb_backend r;
		char as[CHLB_ADDRSTR];
		int rc;

		if (rt->be[i].state != CHLB_BE_LIVE || rt->be[i].nh_cycle == cycle)
			continue;
		done++;
		r = rt->be[i].last;
		rc = rt->ops.resolve(rt->ops.ctx, &r);
		for (__s32 s = rt->be_head[be_hash(a)]; s >= 0; s = rt->be_next[s]) {
			struct chlb_rt_be *b = &rt->be[s];
			struct chlb_backend v;

			if (b->state != CHLB_BE_LIVE || !chlb_addr_eq(&b->addr, a))
				continue;
			b->nh_cycle = cycle;
			b->nh_ns = now;
			n++;
			if (rc && rc != -ENETUNREACH)
				continue;
			v = b->last;
			if (rc) /* the route is gone: the data plane asks the FIB, which drops */
				v.flags &= (__u16)~CHLB_BE_F_NH_VALID;
			else
				nh_copy(&v, &r);
			if (!memcmp(&v, &b->last, sizeof(v)))
				continue;
			b->last = v;
			rt->ops.set_backend(rt->ops.ctx, (__u32)s, &v);
			changed++;
		}
		nh_route_note(rt, a, rc);
		if (changed && !rc)
			rt_log(rt, LOG_INFO,
			       "backend %s: next hop updated (ifindex %u) in %u of %u slots",
			       chlb_fmt_addr(a, as, sizeof(as)), r.ifindex, changed, n);
	}
}
