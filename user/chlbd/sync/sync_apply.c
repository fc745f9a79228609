// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Entries received from peers, into this host's data plane (sync_int.h).
 *
 * Each entry's VIP and backend address are mapped to this host's service
 * and backend slot and applied with the slot's current generation
 * (chlb_dp_sync_apply). An entry whose service or backend this host lacks
 * waits: in a rolling change a peer that already has a new backend sends
 * entries for it before this host has it. Meanwhile its flow is held
 * (chlb_dp_sync_hold: the data plane drops its packets rather than decide
 * them from a partial table and write an entry to the wrong backend) -
 * also while its service is not here: a host configured after its peers'
 * dumps came in (`apply -f` on a fresh LB behind static routes) would
 * otherwise decide those flows from the new table in the moment between
 * the commit and the retry (1-14 of 300 reset in test_ecmp_sync). The
 * cost: a write and a delete per such record, at most DEFER_MAX held.
 *
 * The waiting entries are a FIFO ring of DEFER_MAX: insert, evict the
 * oldest and expire are O(1) per entry, whatever a peer sends. They are
 * tried again after every configuration change (sync_config_changed) and
 * every DEFER_RETRY_NS, DEFER_SLICE entries per loop iteration, so a full
 * queue never holds the event loop for long; expiry is sliced the same
 * way. An entry is dropped (counted
 * by reason, its flow released) when it has waited as long as a replaced
 * table stays in the view (--history-ms, at most DEFER_MAX_MS): a change
 * not made here by then is not a rollout in progress.
 */
#include <stdlib.h>
#include "sync/sync_int.h"

#define DEFER_MAX      65536 /* entries waiting for their service or backend */
#define DEFER_MAX_MS   60000
#define DEFER_RETRY_NS 1000000000ull /* a pass this often even without a change */
#define DEFER_SLICE    4096	     /* entries tried per loop iteration */

struct deferred {
	struct sync_entry e;
	__u64 until; /* chlb_now_ns(): dropped after */
	bool no_service;
	bool held; /* its flow is held in the data plane (released when it is dropped) */
};

static struct deferred *ring; /* DEFER_MAX, allocated on first use */
static size_t head, count;
static size_t pass_left;   /* entries the current retry pass still has to try */
static bool config_pass;   /* that pass follows a configuration change */
static __u64 next_pass_at; /* the next periodic pass */

/* Apply e here: 0, or -ENOENT (no_service set) when its service or backend is not here (yet). */
static int try_apply(const struct sync_entry *e, __u64 coarse_now, bool *no_service)
{
	int id = chlb_rt_svc_id(D.rt, &e->vip), slot, rc;

	*no_service = id < 0;
	slot = id < 0 ? -1 : chlb_rt_be_slot(D.rt, id, &e->backend);
	if (slot < 0)
		return -ENOENT;
	rc = chlb_dp_sync_apply(D.dp, &e->flow, (__u32)slot, D.rt->be[slot].gen, e->flags,
				coarse_now);
	if (rc == CHLB_SYNC_APPLIED)
		sync_c.applied++;
	else if (rc == CHLB_SYNC_KEPT)
		sync_c.kept++;
	else
		sync_c.drop_error++;
	return 0;
}

/* d waited in vain: counted by reason, its flow released to be decided here. */
static void drop(const struct deferred *d)
{
	if (d->no_service)
		sync_c.drop_no_service++;
	else
		sync_c.drop_no_backend++;
	if (d->held)
		chlb_dp_sync_unhold(D.dp, &d->e.flow);
}

static struct deferred *pop(void)
{
	struct deferred *d = &ring[head];

	head = (head + 1) % DEFER_MAX;
	count--;
	return d;
}

/* Hold d's flow while it waits, unless the connection has ended. */
static void hold(struct deferred *d, __u64 coarse_now)
{
	if (!d->held && !(d->e.flags & CHLB_CONN_F_ENDED))
		d->held = chlb_dp_sync_hold(D.dp, &d->e.flow, coarse_now) == 0;
}

/* At the tail; the queue has room. */
static void push(const struct deferred *d)
{
	ring[(head + count) % DEFER_MAX] = *d;
	count++;
}

void sync_apply_entry(const struct sync_entry *e, __u64 coarse_now)
{
	struct deferred d = { .e = *e };
	__u64 wait_ms = D.history_ms < DEFER_MAX_MS ? D.history_ms : DEFER_MAX_MS;

	sync_c.received++;
	if (!try_apply(e, coarse_now, &d.no_service))
		return;
	if (!ring && !(ring = calloc(DEFER_MAX, sizeof(*ring)))) {
		drop(&d);
		return;
	}
	if (count == DEFER_MAX) { /* the oldest goes */
		drop(pop());
		if (pass_left)
			pass_left--;
	}
	hold(&d, coarse_now);
	d.until = chlb_now_ns() + wait_ms * 1000000ull;
	push(&d);
	sync_c.deferred++;
}

void sync_apply_retry(void)
{
	pass_left = count;
	config_pass = count > 0;
}

bool sync_apply_retrying(void)
{
	return config_pass;
}

size_t sync_apply_waiting(void)
{
	return count;
}

/* Up to DEFER_SLICE entries of the pass: applied, dropped when expired, or back at the tail. */
static void retry_slice(__u64 now)
{
	__u64 coarse = chlb_coarse_now_ns();

	if (pass_left > count)
		pass_left = count;
	for (int k = 0; k < DEFER_SLICE && pass_left; k++, pass_left--) {
		struct deferred d = *pop();

		if (!try_apply(&d.e, coarse, &d.no_service)) {
			sync_c.deferred_applied++;
			continue;
		}
		if (d.until <= now) {
			drop(&d);
			continue;
		}
		hold(&d, coarse); /* its service may have come */
		push(&d);
	}
	if (!pass_left)
		config_pass = false;
}

__u64 sync_apply_tick(__u64 now)
{
	int k = 0;

	/* expiry from the head: oldest first (a retried entry may sit behind a newer one) */
	while (count && ring[head].until <= now && k++ < DEFER_SLICE)
		drop(pop());
	if (!pass_left && count && now >= next_pass_at)
		pass_left = count;
	if (pass_left) {
		retry_slice(now);
		next_pass_at = now + DEFER_RETRY_NS;
	}
	if (pass_left || (count && ring[head].until <= now))
		return now; /* the rest at the next iteration */
	if (!count) {
		config_pass = false;
		return 0;
	}
	return next_pass_at < ring[head].until ? next_pass_at : ring[head].until;
}

void sync_apply_close(void)
{
	free(ring);
	ring = NULL;
	head = count = pass_left = 0;
	config_pass = false;
}
