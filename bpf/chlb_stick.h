/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stickiness: which backend a packet's flow belongs to (docs/design.md,
 * "Stickiness").
 *
 * The guarantee: an established TCP connection whose SYN this LB saw keeps
 * its backend for as long as the backend is in the service (live or
 * draining) and its conns entry is not evicted, whatever its idle time
 * (up to cfg_tcp_idle_ns when set) and however many changes are made.
 *
 *  - SYN: writes nothing to conns, so a SYN flood cannot evict an entry.
 *    A valid entry whose connection has not ended (no FIN/RST seen) is
 *    followed: the SYN is a retransmission or a spoof. Otherwise the SYN is
 *    decided from the current table, table[0], and stamps the flow's SYN
 *    slot with the time and that table (include/chlb_maps.h); an ended or
 *    stale entry is rewritten in place (a 5-tuple reused).
 *  - The first non-SYN packet with no entry and a fresh SYN stamp (the
 *    handshake ACK) is decided from the table its SYN used, kept in the
 *    view's history for this gap, and inserts the entry.
 *  - Any other packet with no entry (an ACK flood, a flow that started
 *    before this LB saw it, an evicted one) is decided from the OLDEST table
 *    of the view - right for every entry-less flow that started within the
 *    history window - and gets an entry only when the view's tables
 *    disagree about it, and then only while this CPU's insert budget lasts
 *    (budget_left): without one it goes to the same backend and tries
 *    again with its next packet. UDP works this way too: UDP has no SYN.
 *  - Valid entry (backend LIVE, same generation, not idle): followed. The
 *    client's FIN or RST marks it ENDED. Stale entry: decided from table[0],
 *    rewritten in place (not by an ICMP error: that one is only forwarded).
 *  - Held entry (CHLB_CONN_F_HELD, include/chlb_maps.h: chlbd waits for a
 *    peer's entry whose backend this host lacks yet): every packet of the
 *    flow is dropped and counted (CHLB_R_HELD) - SYN, FIN/RST, UDP and
 *    ICMP errors alike - and nothing is written; TCP retransmits until
 *    the real entry replaces it. A held entry never passes entry_valid(),
 *    so the check sits on the stale-entry path and the SYN-with-entry path
 *    only: a valid hit and a SYN without an entry pay nothing for it.
 *
 * A service with client persistence (chlb_persist.h) decides every flow
 * without a valid entry by its client's affinity entry first, and its
 * tables by the client's masked source (decide_new).
 *
 * Every entry inserted, rewritten or marked ENDED also goes to sync_ring
 * when the program is loaded for entry sync (chlb_sync.h; off by default).
 *
 * An entry is trusted only while its backend slot has the same generation:
 * a removed backend's flows are re-decided, never sent to the slot's next
 * occupant (the Katran bug). ICMP errors follow entries but never write one.
 */
#ifndef CHLB_STICK_H
#define CHLB_STICK_H

#include <linux/errno.h>

#include "chlb_select.h"
#include "chlb_stats.h"
#include "chlb_parse.h"
#include "chlb_sync.h"
#include "chlb_entry.h"
#include "chlb_persist.h"

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

/*
 * The SYN stamps' clock: jiffies when libbpf knows the kernel's HZ (from
 * its config; the verifier inlines bpf_jiffies64 as one load), else the
 * coarse time - a helper call, the larger part of a SYN's cost on kernels
 * with return-thunk mitigations (docs/performance.md).
 */
extern unsigned int CONFIG_HZ __kconfig __weak;

static __always_inline __u32 syn_clock(void)
{
	if (CONFIG_HZ)
		return (__u32)bpf_jiffies64();
	return (__u32)(bpf_ktime_get_coarse_ns() >> CHLB_SYN_KTIME_SHIFT);
}

/* CHLB_SYN_FRESH_S in ticks of syn_clock(). */
static __always_inline __u32 syn_window(void)
{
	if (CONFIG_HZ)
		return CHLB_SYN_FRESH_S * CONFIG_HZ;
	return (__u32)((CHLB_SYN_FRESH_S * 1000000000ull) >> CHLB_SYN_KTIME_SHIFT);
}

/*
 * This CPU's budget for entries that only the table history asks for, if a
 * token is left: a token bucket on the SYN clock (struct
 * chlb_insert_budget), refilled at cfg_moved_inserts_per_s, holding at most
 * one second's worth; NULL when spent. Per CPU, so no atomics: the programs
 * of one CPU do not run concurrently, and a race with a preempted one (not
 * possible for XDP) would cost a token at most.
 */
static __always_inline struct chlb_insert_budget *budget_left(void)
{
	struct chlb_insert_budget *b;
	__u32 zero = 0, now, ticks;
	__u64 add;

	b = bpf_map_lookup_elem(&insert_budget, &zero);
	if (!b)
		return NULL;
	if (!b->tokens) {
		now = syn_clock();
		ticks = now - b->tick;
		/* whole tokens only: the remainder waits for more ticks, not lost */
		if (ticks >= syn_window())
			add = cfg_moved_inserts_per_s;
		else if (CONFIG_HZ)
			add = (__u64)ticks * cfg_moved_inserts_per_s / CONFIG_HZ;
		else
			add = ((__u64)ticks * cfg_moved_inserts_per_s << CHLB_SYN_KTIME_SHIFT) /
			      1000000000ull;
		if (!add)
			return NULL;
		b->tick = now;
		b->tokens = add < cfg_moved_inserts_per_s ? (__u32)add : cfg_moved_inserts_per_s;
	}
	return b;
}

/* The flow's filter key, the filter, and filter_bank as read once for this packet. */
struct chlb_fref {
	struct chlb_conn_filter *f;
	__u32 fk;
	__u32 bank;	 /* the bank readers test */
	bool rebuilding; /* the other bank is being rebuilt: writers set it too */
};

static __always_inline void filter_ref(struct chlb_fref *r, const struct chlb_flow *f)
{
	__u32 zero = 0, *bank;

	r->fk = chlb_conn_fkey(f);
	r->f = bpf_map_lookup_elem(&conn_filter, &zero);
	bank = bpf_map_lookup_elem(&filter_bank, &zero);
	r->bank = bank ? *bank : 0;
	r->rebuilding = r->bank & CHLB_FILTER_REBUILDING;
	r->bank &= 1;
}

/* The flow's word in bank b (the masks keep the verifier's bounds). */
static __always_inline __u64 *filter_word(const struct chlb_fref *r, __u32 b)
{
	return &r->f->bank[b & 1][chlb_filter_word(r->fk) & (CHLB_CONN_FILTER_WORDS - 1)];
}

static __always_inline __u32 *syn_stamp(const struct chlb_fref *r)
{
	return &r->f->syn[chlb_syn_index(r->fk) & (CHLB_SYN_STAMPS - 1)];
}

static __always_inline struct chlb_conn *conn_find(const struct chlb_flow *f,
						   const struct chlb_fref *r)
{
	__u64 m = chlb_filter_mask(r->fk);

	/* all bits set, or no filter: maybe an entry */
	if (r->f && (*filter_word(r, r->bank) & m) != m)
		return NULL;
	return bpf_map_lookup_elem(&conns, f);
}

static __always_inline void conn_insert(const struct chlb_flow *f, const struct chlb_fref *r,
					__u32 d, const struct chlb_backend *be, __u64 now)
{
	struct chlb_conn c = { .backend = (__u16)d, .gen = be->gen, .last_ns = now };
	__u64 m = chlb_filter_mask(r->fk);
	long err;

	/*
	 * The bits first: a reader that sees one clear decides like this
	 * writer. In the bank readers test, and during a rebuild in the other
	 * too; outside one the other bank is left to its next clear.
	 */
	if (r->f) {
		__u64 *w = filter_word(r, r->bank);

		if ((*w & m) != m)
			__sync_fetch_and_or(w, m);
		if (r->rebuilding) {
			w = filter_word(r, r->bank ^ 1);
			if ((*w & m) != m)
				__sync_fetch_and_or(w, m);
		}
	}
	/* NOEXIST: ct_insert counts new elements only, so evictions = inserts - entries */
	err = bpf_map_update_elem(&conns, f, &c, BPF_NOEXIST);
	if (!err) {
		stat_reason(CHLB_R_CT_INSERT);
		sync_emit(f, d, be->gen, 0);
	} else if (err != -EEXIST) /* -EEXIST: another CPU inserted this flow just now */
		stat_reason(CHLB_R_ERROR);
}

/*
 * Point an existing entry at backend d (a reused 5-tuple, or a stale entry)
 * with these flags, and tell the sync peers, as conn_insert does.
 */
static __always_inline void conn_rewrite(struct chlb_conn *e, const struct chlb_flow *f, __u32 d,
					 const struct chlb_backend *be, __u64 now, __u32 flags)
{
	struct chlb_conn c = { .backend = (__u16)d, .flags = (__u16)flags, .gen = be->gen };

	/* the time first: a reader that sees the new backend sees its time */
	e->last_ns = now;
	/* backend, flags and generation in one store: a reader sees the old or the new */
	*(volatile __u64 *)&e->word = c.word;
	sync_emit(f, d, c.gen, flags);
}

/* The backend table k of the view picks, LIVE, or NULL. */
static __always_inline struct chlb_backend *decide_live(const struct chlb_service *svc, __u32 k,
							__u32 crc, int *d)
{
	*d = chlb_decide(svc->table[k & (CHLB_HISTORY_MAX - 1)], crc);
	return *d >= 0 ? be_live(*d) : NULL;
}

/*
 * A flow without a valid entry: the client's affinity entry when the service
 * persists and the entry holds (chlb_persist.h), else table k's pick - then
 * the client's from now on when record is set (a SYN, a re-decided entry).
 */
static __always_inline struct chlb_backend *decide_new(const struct chlb_service *svc,
						       struct chlb_persist_ref *pr, __u32 k,
						       __u32 crc, int *d, bool record)
{
	struct chlb_backend *be;

	if (!persisting(pr))
		return decide_live(svc, k, crc, d);
	be = persist_follow(pr, d);
	if (be)
		return be;
	be = decide_live(svc, k, crc, d);
	if (be && record)
		be = persist_record(pr, d, be);
	return be;
}

/* Which table of the view decided the SYN stamped `stamp`, or -1. */
static __always_inline int syn_table(const struct chlb_service *svc, __u32 n, __u32 stamp)
{
	__u32 k;

	for (k = 0; k < CHLB_HISTORY_MAX && k < n; k++)
		if ((svc->table[k] & 7) == (stamp & 7u))
			return (int)k;
	return -1;
}

/*
 * Is this (not valid) entry held, and not for longer than a chlbd waits?
 * The clock is read here, off the paths that do not need it.
 */
static __always_inline bool conn_held(const struct chlb_conn *e, const struct chlb_conn *w)
{
	return (w->flags & CHLB_CONN_F_HELD) &&
	       bpf_ktime_get_coarse_ns() - e->last_ns < CHLB_CONN_HELD_MAX_NS;
}

/*
 * Is this entry still the flow's: backend LIVE, same generation, not idle?
 * w: the entry's word as read once (conn_word); every decision about the
 * entry uses that copy, never a second read of e.
 */
static __always_inline struct chlb_backend *
entry_valid(const struct chlb_conn *e, const struct chlb_conn *w, bool udp, __u64 now)
{
	struct chlb_backend *be = be_check(w->backend, true, w->gen, 0);
	__u64 idle = udp ? cfg_udp_idle_ns : cfg_tcp_idle_ns;

	if (!be)
		return NULL;
	/* last_ns 0: written by a data plane that kept no TCP time; refreshed below */
	if (idle && e->last_ns && now - e->last_ns >= idle)
		return NULL;
	return be;
}

static __always_inline struct chlb_backend *stick_syn(const struct chlb_service *svc,
						      struct chlb_pkt *p, __u32 crc, __u32 *slot,
						      __u32 *new_flow, __u64 now,
						      struct chlb_persist_ref *pr)
{
	struct chlb_conn *e, w = {};
	struct chlb_fref r;
	struct chlb_backend *be;
	int d;

	filter_ref(&r, &p->flow);
	e = conn_find(&p->flow, &r);
	if (e)
		w = conn_word(e);
	if (e && !(w.flags & CHLB_CONN_F_ENDED) && (be = entry_valid(e, &w, false, now))) {
		stat_reason(CHLB_R_SYN_KEPT);
		*slot = w.backend;
		return be;
	}
	*new_flow = 1;
	be = decide_new(svc, pr, 0, crc, &d, true);
	if (!be)
		return NULL;
	if (e) {
		/*
		 * A peer says a connection holds this 5-tuple: a retransmitted or
		 * spoofed SYN must not move it before its entry arrives. Checked
		 * after the decision, which a held SYN wastes: before it, the
		 * clock read cost a SYN without an entry an instruction (the
		 * compiler's register allocation; counted by emulation).
		 */
		if (conn_held(e, &w)) {
			stat_reason(CHLB_R_HELD);
			*slot = CHLB_CONN_HELD_SLOT;
			return NULL;
		}
		stat_reason(CHLB_R_SYN_REUSE);
		conn_rewrite(e, &p->flow, d, be, now, 0);
	}
	if (r.f)
		*syn_stamp(&r) = chlb_syn_stamp(syn_clock(), svc->table[0]);
	*slot = d;
	return be;
}

/*
 * Pick the backend slot for p's flow. Returns the backend (LIVE) or NULL;
 * *slot and *new_flow are set on success. NULL with *slot
 * CHLB_CONN_HELD_SLOT: the flow is held (counted; drop it); other NULLs:
 * no usable backend. crc decides the flow in the tables: the masked
 * source's (pr->crc) when the service persists (pr set up by persist_ref);
 * pr NULL: it does not (the pipeline's own copy of this path, chlb_pipeline.h).
 */
static __always_inline struct chlb_backend *chlb_stick(const struct chlb_service *svc,
						       struct chlb_pkt *p, __u32 crc, __u32 *slot,
						       __u32 *new_flow, struct chlb_persist_ref *pr)
{
	__u32 n = svc->ntables, used;
	bool udp = p->flow.proto == IPPROTO_UDP;
	struct chlb_backend *be;
	struct chlb_conn *e;
	struct chlb_fref r;
	__u64 now = 0;
	int d, k;

	if (n < 1 || n > CHLB_HISTORY_MAX)
		n = 1;
	*new_flow = 0;
	/* the time is read only where it is used: idle timeouts */
	if (udp || cfg_tcp_idle_ns)
		now = bpf_ktime_get_coarse_ns();
	if (p->syn && !udp)
		return stick_syn(svc, p, crc, slot, new_flow, now, pr);

	filter_ref(&r, &p->flow);
	e = conn_find(&p->flow, &r);
	if (e) {
		struct chlb_conn w = conn_word(e);
		__u32 fl;

		be = entry_valid(e, &w, udp, now);
		if (be) {
			/* now is 0 when no timeout applies: then no write per packet */
			if (now && now - e->last_ns > cfg_ct_refresh_ns)
				e->last_ns = now;
			if (p->fin_rst && !p->icmp_err && !(w.flags & CHLB_CONN_F_ENDED)) {
				/*
				 * Only the flag: an atomic or of the word keeps a
				 * rewrite by another CPU whole (a 2-byte store
				 * would put back the flags it read).
				 */
				struct chlb_conn ended = { .flags = CHLB_CONN_F_ENDED };

				__sync_fetch_and_or(&e->word, ended.word);
				sync_emit(&p->flow, w.backend, w.gen, CHLB_CONN_F_ENDED);
			}
			if (persisting(pr))
				persist_touch(pr, w.backend);
			stat_reason(CHLB_R_CT_HIT);
			*slot = w.backend;
			return be;
		}
		/* held: not decided, not written, the packet dropped (a FIN or RST too) */
		if (conn_held(e, &w)) {
			stat_reason(CHLB_R_HELD);
			*slot = CHLB_CONN_HELD_SLOT;
			return NULL;
		}
		/* backend gone, slot reoccupied, idle, or held too long: decide afresh */
		stat_reason(CHLB_R_CT_STALE);
		be = decide_new(svc, pr, 0, crc, &d, !p->icmp_err);
		if (!be)
			return NULL;
		*slot = d;
		/*
		 * An ICMP error follows the decision and writes nothing, as on a
		 * miss: it would make the entry name a backend no packet of the
		 * client's went to (and tell the sync peers so). Not a new flow.
		 */
		if (p->icmp_err)
			return be;
		*new_flow = 1;
		/*
		 * A TCP connection whose backend left is broken: the new backend
		 * answers it with a RST the LB never sees. Marked ended, so the
		 * next SYN on this 5-tuple is decided afresh, not by this entry.
		 * One stale only by idle time (--tcp-timeout-ms) that the current
		 * table puts on the same backend goes on: it stays as it was, so
		 * conns and a drain's CONNS still count it. One held too long
		 * named no backend: nothing says it broke.
		 */
		fl = udp ? 0 : CHLB_CONN_F_ENDED;
		if (((__u32)d == w.backend && be->gen == w.gen) || (w.flags & CHLB_CONN_F_HELD))
			fl = w.flags & CHLB_CONN_F_ENDED;
		if (p->fin_rst)
			fl = CHLB_CONN_F_ENDED;
		conn_rewrite(e, &p->flow, d, be, now, fl);
		return be;
	}

	stat_reason(CHLB_R_CT_MISS);
	if (!udp && !p->fin_rst && !p->icmp_err) {
		__u32 stamp = r.f ? *syn_stamp(&r) : 0;

		if (chlb_syn_fresh(stamp, syn_clock(), syn_window())) {
			/*
			 * The handshake ACK: the table its SYN used, then the entry.
			 * A stamp naming no table of the view (more than three swaps
			 * since the SYN, or another flow's SYN in the same stamp)
			 * falls back to the oldest; the entry is written either way.
			 */
			k = syn_table(svc, n, stamp);
			be = decide_new(svc, pr, k >= 0 ? (__u32)k : n - 1, crc, &d, false);
			if (!be && !(be = decide_live(svc, 0, crc, &d)))
				return NULL;
			conn_insert(&p->flow, &r, d, be, now);
			*slot = d;
			return be;
		}
	}
	/* a persistent client's flow without an entry: its affinity first (an ACK, UDP) */
	if (persisting(pr) && (be = persist_follow(pr, &d))) {
		*slot = d;
		return be;
	}
	used = n - 1;
	be = decide_live(svc, used, crc, &d);
	if (!be) {
		used = 0;
		if (!(be = decide_live(svc, 0, crc, &d)))
			return NULL;
	}
	/* UDP has no SYN: its first datagram makes the client's entry */
	if (persisting(pr) && udp && !p->icmp_err)
		be = persist_record(pr, &d, be);
	/*
	 * UDP has no SYN and entry-less flows keep no state: new_flows counts
	 * TCP SYNs and re-decided flows only.
	 * An entry only where the tables disagree, and only while the budget
	 * lasts. Spent, the tables are not compared at all: no entry could be
	 * written, and the packet goes by the oldest table either way - an ACK
	 * flood after a change then reads one table a packet, not every table
	 * of the view.
	 */
	if (n > 1 && !p->icmp_err && !p->fin_rst) {
		struct chlb_insert_budget *b = budget_left();

		if (!b) {
			stat_reason(CHLB_R_CT_NO_BUDGET);
		} else if (tables_disagree(svc, n, used, crc, d)) {
			b->tokens--;
			conn_insert(&p->flow, &r, d, be, now);
		}
	}
	*slot = d;
	return be;
}

#endif /* CHLB_STICK_H */
