/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stickiness without a connection-table insert per new flow ("table
 * history").
 *
 * A service view names its current table, table[0], and up to
 * CHLB_HISTORY_MAX - 1 recent ones (newest first); the daemon drops a table
 * from the view once it is older than the history window. The invariant:
 * a flow WITHOUT a conn entry gets the same answer from every table that
 * existed since it started. So:
 *
 *  - TCP SYN: decide from table[0]. Only when some table in the view
 *    disagrees is an entry written. Otherwise no insert (the common case:
 *    no recent change, or a change that does not move this flow) - but a
 *    stale entry for a reused 5-tuple is overwritten in place.
 *  - Every other packet: look the entry up. Valid (backend LIVE, same
 *    generation, UDP not idle) -> use it. Absent -> decide from the OLDEST
 *    table, which is right for every entry-less flow started within the
 *    window; if that backend is not LIVE, re-decide from table[0]; if any
 *    table of the view disagrees with the decision, write an entry so the
 *    flow outlives the window. Stale -> re-decide from table[0], overwrite.
 *
 * A Bloom filter (conn_filter) says which flows certainly have no entry, so
 * the common case - no entry - costs one word test instead of an LRU lookup.
 *
 * An entry is trusted only while its backend slot has the same generation:
 * a removed backend's flows are re-decided, never sent to the slot's next
 * occupant (the Katran bug).
 *
 * Trade-off: an entry-less connection that stays idle for longer than the
 * history window across a change that moved it is re-decided from the
 * current table, like a flow whose LRU entry was evicted in Katran. In
 * exchange a SYN costs no map write unless the tables disagree about it.
 */
#ifndef CHLB_STICK_H
#define CHLB_STICK_H

#include "chlb_select.h"
#include "chlb_stats.h"
#include "chlb_parse.h"

static __always_inline struct chlb_backend *be_live(__u32 slot)
{
	struct chlb_backend *be = bpf_map_lookup_elem(&backends, &slot);

	if (!be || be->state != CHLB_BE_LIVE)
		return NULL;
	return be;
}

/* Does any table of the view, except number `skip`, decide differently from d? */
static __always_inline bool tables_disagree(const struct chlb_service *svc, __u32 n, __u32 skip,
					    __u32 crc, int d)
{
	__u32 k;

	for (k = 0; k < CHLB_HISTORY_MAX && k < n; k++) {
		if (k != skip && chlb_decide(svc->table[k], crc) != d)
			return true;
	}
	return false;
}

/* The conn_filter word holding flow key fk's bits. */
static __always_inline __u64 *filter_word(__u32 fk)
{
	__u32 idx = chlb_filter_word(fk);

	return bpf_map_lookup_elem(&conn_filter, &idx);
}

/* False only when the flow certainly has no conns entry. */
static __always_inline bool conn_maybe(__u32 fk)
{
	__u64 *w = filter_word(fk), m = chlb_filter_mask(fk);

	return !w || (*w & m) == m;
}

static __always_inline struct chlb_conn *conn_find(const struct chlb_flow *f, __u32 fk)
{
	if (!conn_maybe(fk))
		return NULL;
	return bpf_map_lookup_elem(&conns, f);
}

static __always_inline void conn_write(const struct chlb_flow *f, __u32 fk, __u32 d,
				       const struct chlb_backend *be, __u64 now)
{
	struct chlb_conn c = { .backend = d, .gen = be->gen, .last_ns = now };
	__u64 *w = filter_word(fk), m = chlb_filter_mask(fk);

	/* the bits first: a reader that sees one clear decides like this writer did */
	if (w && (*w & m) != m)
		__sync_fetch_and_or(w, m);

	if (bpf_map_update_elem(&conns, f, &c, BPF_ANY))
		stat_reason(CHLB_R_ERROR);
	else
		stat_reason(CHLB_R_CT_INSERT);
}

/*
 * Pick the backend slot for p's flow. Returns the backend (LIVE) or NULL;
 * *slot and *new_flow are set on success.
 */
static __always_inline struct chlb_backend *chlb_stick(const struct chlb_service *svc,
						       struct chlb_pkt *p, __u32 crc, __u32 *slot,
						       __u32 *new_flow)
{
	__u32 n = svc->ntables;
	struct chlb_backend *be;
	struct chlb_conn *e;
	bool udp = p->flow.proto == IPPROTO_UDP;
	__u32 used, fk = chlb_conn_fkey(&p->flow, crc);
	__u64 now = 0;
	int d;

	if (n < 1 || n > CHLB_HISTORY_MAX)
		n = 1;
	*new_flow = 0;

	if (p->syn) {
		*new_flow = 1;
		d = chlb_decide(svc->table[0], crc);
		if (d < 0 || !(be = be_live(d)))
			return NULL;
		e = conn_find(&p->flow, fk);
		if (n > 1 && tables_disagree(svc, n, 0, crc, d)) {
			conn_write(&p->flow, fk, d, be, 0);
		} else if (e) {
			/* 5-tuple reused: the old connection's entry must not steer this one */
			e->backend = d;
			e->gen = be->gen;
		}
		*slot = d;
		return be;
	}

	e = conn_find(&p->flow, fk);
	if (udp)
		now = bpf_ktime_get_coarse_ns();
	if (e) {
		__u32 s = e->backend;

		be = be_live(s);
		if (be && be->gen == e->gen && (!udp || now - e->last_ns < cfg_udp_idle_ns)) {
			if (udp && now - e->last_ns > cfg_ct_refresh_ns)
				e->last_ns = now;
			stat_reason(CHLB_R_CT_HIT);
			*slot = s;
			return be;
		}
		/* backend gone, slot reoccupied, or UDP idle: decide afresh */
		stat_reason(CHLB_R_CT_STALE);
		*new_flow = 1;
		d = chlb_decide(svc->table[0], crc);
		if (d < 0 || !(be = be_live(d)))
			return NULL;
		e->backend = d;
		e->gen = be->gen;
		e->last_ns = now;
		*slot = d;
		return be;
	}

	stat_reason(CHLB_R_CT_MISS);
	used = (n - 1) & (CHLB_HISTORY_MAX - 1);
	d = chlb_decide(svc->table[used], crc);
	be = d >= 0 ? be_live(d) : NULL;
	if (!be) {
		used = 0;
		d = chlb_decide(svc->table[0], crc);
		if (d < 0 || !(be = be_live(d)))
			return NULL;
	}
	/* UDP has no SYN and entry-less flows keep no state: new_flows counts TCP SYNs
	 * and re-decided flows only */
	if (n > 1 && tables_disagree(svc, n, used, crc, d))
		conn_write(&p->flow, fk, d, be, now);
	*slot = d;
	return be;
}

#endif /* CHLB_STICK_H */
