/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client persistence (`service set VIP persist SECONDS [netmask /N]`;
 * docs/design.md, "Client persistence"): every new flow of a client (its
 * source under the service's netmask) goes to the backend its first one
 * went to, across any table change, while that backend is LIVE, takes new
 * flows and the client was seen within the timeout.
 *
 *  - A new client is decided by the tables from the CRC of its masked
 *    source, not of the 5-tuple: every LB host with the same tables gives
 *    it the same backend, so its connections agree even when ECMP spreads
 *    them over hosts that share no affinity entries.
 *  - The affinity entry (persist map) then names that backend slot and its
 *    generation. New flows follow it (persist_hit); traffic of the client's
 *    established connections refreshes it (persist_touch), as IPVS keeps a
 *    template while its connections live.
 *  - An entry whose backend is gone, drained or down (CHLB_BE_F_NO_NEW), or
 *    that was not used for the timeout, is decided again and rewritten.
 *    Two CPUs deciding one client at once agree: the first write wins (an
 *    insert that must not find the key, or a compare-and-swap of the word it
 *    read) and the other follows it.
 *
 * Established connections keep following their conns entries as before:
 * persistence only changes how a flow without a valid entry is decided.
 */
#ifndef CHLB_PERSIST_H
#define CHLB_PERSIST_H

#include <linux/errno.h>

#include "chlb_entry.h"
#include "chlb_parse.h"
#include "chlb_stats.h"

/* The client of one packet of a persistent service. */
struct chlb_persist_ref {
	struct chlb_persist_key key;
	const struct chlb_persist_cfg *cfg; /* NULL: no persistence for this packet */
	struct chlb_conn *e;		    /* the entry persist_follow found, or NULL */
	__u64 word;			    /* e's word as persist_follow read it */
	__u64 now;			    /* coarse time */
	__u32 crc;			    /* the masked source's CRC: decides a new client */
};

/*
 * Does this packet's service persist? pr is NULL on the pipeline's path for
 * services that do not (a constant there: every check below folds away).
 */
static __always_inline bool persisting(const struct chlb_persist_ref *pr)
{
	return pr && pr->cfg;
}

/* Sets r up for svc and p's source; false (r->cfg NULL) when svc does not persist. */
static __always_inline bool persist_ref(const struct chlb_service *svc, const struct chlb_pkt *p,
					struct chlb_persist_ref *r)
{
	const chlb_u32_alias *s = (const chlb_u32_alias *)p->flow.src;
	chlb_u32_alias *k = (chlb_u32_alias *)r->key.addr;
	__u32 id = svc->id;

	r->cfg = NULL;
	r->e = NULL;
	if (!(svc->flags & CHLB_SVC_F_PERSIST))
		return false;
	r->cfg = bpf_map_lookup_elem(&persist_cfg, &id);
	if (!r->cfg)
		return false;
	r->key.svc_id = id;
	k[0] = s[0] & r->cfg->mask[0];
	k[1] = s[1] & r->cfg->mask[1];
	k[2] = s[2] & r->cfg->mask[2];
	k[3] = s[3] & r->cfg->mask[3];
	r->crc = chlb_src_crc(r->key.addr, p->flow.family);
	r->now = bpf_ktime_get_coarse_ns();
	return true;
}

/*
 * The backend the client's entry names, when it holds (LIVE, the entry's
 * generation, not CHLB_BE_F_NO_NEW, used within the timeout), with its
 * slot in *d; else NULL. A written entry's time may be ahead of r->now
 * (another CPU read its clock later): that is fresh, not expired.
 */
static __always_inline struct chlb_backend *persist_follow(struct chlb_persist_ref *r, int *d)
{
	struct chlb_backend *be;
	struct chlb_conn w;
	__u64 last;

	r->e = bpf_map_lookup_elem(&persist, &r->key);
	if (!r->e)
		return NULL;
	w = conn_word(r->e);
	r->word = w.word;
	last = r->e->last_ns;
	if (r->now > last && r->now - last >= r->cfg->timeout_ns)
		return NULL;
	be = be_check(w.backend, true, w.gen, CHLB_BE_F_NO_NEW);
	if (!be)
		return NULL;
	if (r->now > last + CHLB_PERSIST_REFRESH_NS)
		r->e->last_ns = r->now;
	stat_reason(CHLB_R_PERSIST_HIT);
	*d = w.backend;
	return be;
}

/*
 * The tables decided the client to backend *d (be): its entry names it from
 * now on, unless another CPU wrote one first; then that one's backend, if
 * it holds, is used instead (its slot in *d).
 */
static __always_inline struct chlb_backend *persist_record(struct chlb_persist_ref *r, int *d,
							   struct chlb_backend *be)
{
	struct chlb_conn c = { .backend = (__u16)*d, .gen = be->gen, .last_ns = r->now };
	struct chlb_backend *other;
	struct chlb_conn w;
	long err;

	if (r->e) {
		/* an entry that did not hold: replaced, if nobody replaced it since it was read */
		if (__sync_val_compare_and_swap(&r->e->word, r->word, c.word) == r->word) {
			r->e->last_ns = r->now;
			return be;
		}
	} else {
		err = bpf_map_update_elem(&persist, &r->key, &c, BPF_NOEXIST);
		if (!err) {
			stat_reason(CHLB_R_PERSIST_INSERT);
			return be;
		}
		if (err != -EEXIST) {
			stat_reason(CHLB_R_ERROR);
			return be;
		}
		r->e = bpf_map_lookup_elem(&persist, &r->key);
		if (!r->e)
			return be;
	}
	w = conn_word(r->e);
	other = be_check(w.backend, true, w.gen, CHLB_BE_F_NO_NEW);
	if (!other)
		return be;
	*d = w.backend;
	return other;
}

/*
 * A packet of an established connection of the client, on backend slot:
 * its entry's time is refreshed (at most once per CHLB_PERSIST_REFRESH_NS),
 * so a client with a long connection keeps its backend for new ones.
 */
static __always_inline void persist_touch(struct chlb_persist_ref *r, __u32 slot)
{
	struct chlb_conn *e = bpf_map_lookup_elem(&persist, &r->key);
	struct chlb_conn w;

	if (!e)
		return;
	w = conn_word(e);
	if (w.backend == slot && r->now > e->last_ns + CHLB_PERSIST_REFRESH_NS)
		e->last_ns = r->now;
}

#endif /* CHLB_PERSIST_H */
