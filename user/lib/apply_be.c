// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Backend slots: address -> slot index, writes that keep a removed backend's
 * next hop for in-flight readers, new occupants with generation + 1, and the
 * background next-hop refresh. Part of the apply engine (apply.h).
 */
#include <string.h>
#include <syslog.h>
#include "apply_int.h"

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

/* Slot holding addr (LIVE or DEAD), or -1. */
int chlb_be_find(const struct chlb_rt *rt, const struct chlb_addr *a)
{
	for (__s32 s = rt->be_head[be_hash(a)]; s >= 0; s = rt->be_next[s])
		if (rt->be[s].state != CHLB_BE_EMPTY && !chlb_addr_cmp(&rt->be[s].addr, a))
			return s;
	return -1;
}

int chlb_rt_be_slot(const struct chlb_rt *rt, const struct chlb_addr *a)
{
	int s = chlb_be_find(rt, a);

	return s >= 0 && rt->be[s].state == CHLB_BE_LIVE ? s : -1;
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
	if (b->state == CHLB_BE_LIVE && rt->ops.resolve) {
		struct chlb_backend r = v;

		if (!rt->ops.resolve(rt->ops.ctx, &r))
			v = r; /* unresolved: keep what we had; the data plane falls back to the FIB */
	}
	b->last = v;
	return rt->ops.set_backend(rt->ops.ctx, slot, &v);
}

/* Slot for addr: the one it holds (LIVE or DEAD: same occupant, same gen), else a free one. */
int chlb_be_acquire(struct chlb_rt *rt, const struct chlb_addr *a, __u64 now)
{
	int i = chlb_be_find(rt, a), free_slot = -1;

	if (i >= 0) {
		struct chlb_rt_be *b = &rt->be[i];

		b->wanted = true;
		if (b->state != CHLB_BE_LIVE) {
			b->state = CHLB_BE_LIVE;
			if (chlb_be_write(rt, (__u32)i))
				return -1;
		}
		return i;
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
		return -2;
	rt->free_hint = (__u32)free_slot + 1;
	be_unlink(rt, (__u32)free_slot);
	rt->be[free_slot].addr = *a;
	chlb_be_link(rt, (__u32)free_slot);
	memset(&rt->be[free_slot].last, 0, sizeof(rt->be[free_slot].last));
	rt->be[free_slot].state = CHLB_BE_LIVE;
	rt->be[free_slot].gen++; /* new occupant: old conn entries become stale */
	rt->be[free_slot].wanted = true;
	if (chlb_be_write(rt, (__u32)free_slot))
		return -1;
	return free_slot;
}

#define NH_REFRESH_NS  1000000000ull /* a round per second */
#define NH_REFRESH_MAX 64	     /* resolves per round (each a netlink round trip) */

/*
 * Next hops change (a neighbour's MAC, a route) and may be unresolved when a
 * backend is written: re-resolve LIVE backends a few hundred at a time and
 * write only what changed. An unresolved one keeps what it had (the data
 * plane asks the FIB per packet meanwhile) and the kernel is nudged to
 * resolve it.
 */
void chlb_be_refresh_nexthops(struct chlb_rt *rt, __u64 now)
{
	if (!rt->ops.resolve || now < rt->nh_next)
		return;
	rt->nh_next = now + NH_REFRESH_NS;
	for (__u32 k = 0, done = 0; k < CHLB_MAX_BACKENDS && done < NH_REFRESH_MAX; k++) {
		__u32 i = rt->nh_cursor++ % CHLB_MAX_BACKENDS;
		struct chlb_rt_be *b = &rt->be[i];
		struct chlb_backend r;

		if (b->state != CHLB_BE_LIVE)
			continue;
		done++;
		r = b->last;
		if (rt->ops.resolve(rt->ops.ctx, &r) || !memcmp(&r, &b->last, sizeof(r)))
			continue;
		b->last = r;
		rt->ops.set_backend(rt->ops.ctx, i, &r);
		rt_log(rt, LOG_INFO, "backend slot %u: next hop updated (ifindex %u)", i,
		       r.ifindex);
	}
}
