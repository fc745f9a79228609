/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection table as an operator sees it. Each entry (a flow ->
 * backend slot, generation, flags, last refresh) belongs
 *  - if it is followed (live or ended): to the (service, backend) pair
 *    whose slot it names, with that slot's generation. Backend slots are
 *    per (service, backend), so this is exactly one service's backend: the
 *    service of the flow's destination, except for a flow whose entry was
 *    written under the port-0 wildcard before an exact VIP:port service
 *    took its port (or the other way round), which the data plane still
 *    sends where its entry says;
 *  - else (stale) to the service its destination belongs to, the one that
 *    decides it again: the exact VIP:port/proto, else the port-0 wildcard
 *    of that address and protocol, as the data plane matches
 *    (bpf/chlb_pipeline.h). An entry whose destination has no service is
 *    never looked at by the data plane: "other".
 * and classified as the data plane would treat it:
 *  - stale: the slot is no longer LIVE, or holds another generation (its
 *    backend was removed), or the flow sat idle past its timeout (UDP; TCP
 *    only with a TCP timeout): the entry is ignored and the flow decided
 *    again;
 *  - ended: the client sent FIN or RST (CHLB_CONN_F_ENDED): packets still
 *    follow it, a new SYN for the 5-tuple is decided afresh;
 *  - held: a placeholder chlbd wrote while a sync peer's entry for the flow
 *    waits for its service or backend (CHLB_CONN_F_HELD, no backend): the
 *    flow's packets are dropped until the entry comes. Counted by the
 *    service only; one older than CHLB_CONN_HELD_MAX_NS is stale, as the
 *    data plane sees it;
 *  - live: anything else.
 * The data plane never deletes entries, so an ended entry stays until the
 * LRU evicts it; "live" is what a drain waits for.
 *
 * Pure (no BPF, no clock): chlbd walks the table and feeds every entry to
 * chlb_ct_tally_add(); the unit tests feed made-up entries.
 */
#ifndef CHLB_CONN_TALLY_H
#define CHLB_CONN_TALLY_H

#include "engine/apply.h"

enum chlb_conn_state {
	CHLB_CONN_LIVE = 0,
	CHLB_CONN_ENDED,
	CHLB_CONN_STALE,
	CHLB_CONN_HELD,
};

const char *chlb_conn_state_name(enum chlb_conn_state s);

struct chlb_ct_be {
	int slot; /* the backend's slot now; -1: none */
	__u64 live, ended;
};

struct chlb_ct_svc {
	/*
	 * live + ended = the sum over be[], except for an entry naming a slot
	 * adopted from a chlbd that kept no slot owners (shared by services)
	 * before a service claimed it: counted here, in no backend row.
	 * entries = live + ended + stale + held.
	 */
	__u64 entries, live, ended, stale, held;
	struct chlb_ct_be *be; /* [st->svc[i].nbe], in the service's backend order */
};

/* The (service, backend) pair a backend slot belongs to (indexes into st), or svc -1. */
struct chlb_ct_owner {
	int svc, be;
};

struct chlb_ct_tally {
	const struct chlb_state *st;
	const struct chlb_rt *rt;
	__u64 now_ns;		       /* CLOCK_MONOTONIC_COARSE, the data plane's clock */
	__u64 udp_idle_ns;	       /* 0: no timeout */
	__u64 tcp_idle_ns;	       /* 0: no timeout */
	__u64 entries;		       /* every entry fed */
	__u64 other;		       /* entries of no configured service */
	struct chlb_ct_svc *svc;       /* [st->nsvc] */
	__u32 *vip_order;	       /* service indexes sorted by VIP, for the lookups */
	struct chlb_ct_owner *by_slot; /* [CHLB_MAX_BACKENDS]: LIVE slots' pairs */
};

/* 0, or -ENOMEM. st and rt must outlive the tally and stay unchanged. */
int chlb_ct_tally_init(struct chlb_ct_tally *t, const struct chlb_state *st,
		       const struct chlb_rt *rt, __u64 now_ns, __u64 udp_idle_ns,
		       __u64 tcp_idle_ns);
void chlb_ct_tally_free(struct chlb_ct_tally *t);

/*
 * Count one entry. *svc: its service's index in st->svc, or -1 (its
 * destination has no service); *be: the backend's index in that service,
 * or -1 (stale, held, or no service). Returns its state.
 */
enum chlb_conn_state chlb_ct_tally_add(struct chlb_ct_tally *t, const struct chlb_flow *f,
				       const struct chlb_conn *c, int *svc, int *be);

/* Index in st->svc of the service a flow's destination belongs to, or -1. */
int chlb_ct_tally_service(const struct chlb_ct_tally *t, const struct chlb_flow *f);

#endif /* CHLB_CONN_TALLY_H */
