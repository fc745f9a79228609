/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Desired state -> data plane. Owns service ids, table slots, the service
 * views with their history, and backend slots with their generations.
 *
 * A change, per service: build the complete table in memory (any error:
 * nothing touched) -> write its backends' slots (LIVE) -> write the table
 * into a FREE slot of the service (one not in the view and past its grace
 * period) -> publish the view {new, previous tables...} in one hash update
 * -> tables older than the history window leave the view later (timer) ->
 * a slot that left the view is rewritten only after a grace period -> a
 * removed backend is marked DEAD once no published view can pick it, and
 * its slot is reused (gen + 1) only when no table in any slot names it.
 *
 * Backend slots are per (service, backend address): the same address in two
 * services has two slots, so removing it from one marks only that one's slot
 * DEAD (its connection entries are decided again) and its counters
 * (be_stats) are that pair's. A slot's owner is kept in its flags
 * (CHLB_BE_F_OWNER) for restarts.
 *
 * The data plane is reached through chlb_dp_ops so the logic is testable
 * without BPF.
 */
#ifndef CHLB_APPLY_H
#define CHLB_APPLY_H

#include "base/time.h" /* the clock of every ns argument */
#include "config/state.h"
#include "chlb_maps.h"

struct chlb_dp_ops {
	void *ctx;
	int (*set_backend)(void *ctx, __u32 slot, const struct chlb_backend *be);
	int (*write_table)(void *ctx, __u32 tslot, const __u32 *words, __u32 nwords);
	int (*set_service)(void *ctx, const struct chlb_vip_key *k, const struct chlb_service *v);
	int (*del_service)(void *ctx, const struct chlb_vip_key *k);
	/* optional: fill dmac/smac/ifindex/flags of a backend (next hop); 0 or -errno */
	int (*resolve)(void *ctx, struct chlb_backend *be);
	/*
	 * optional: make tslot[i] hold nwords[i] words without blocking a later swap
	 * (may block now: one grace period for all). Does the first ones, as many as it
	 * can start before until_ns (at least one); returns how many, or -errno.
	 */
	int (*prealloc)(void *ctx, const __u32 *tslot, const __u32 *nwords, __u32 n,
			__u64 until_ns);
	/* optional: zero a backend slot's counters (be_stats, every CPU): a new occupant */
	int (*reset_stats)(void *ctx, __u32 slot);
	/* optional: zero a service id's counters (svc_stats, every CPU): a new service */
	int (*reset_svc_stats)(void *ctx, __u32 id);
	/*
	 * optional: service id's source allow-list (chlb_dp_set_allow): the n
	 * prefixes added; with prune, every other entry of id removed too.
	 */
	int (*set_allow)(void *ctx, __u32 id, const struct chlb_prefix *p, __u32 n, bool prune);
	/*
	 * optional: service id's client persistence (chlb_dp_set_persist):
	 * timeout_s 0 is off; plen the netmask's length in bits of family.
	 */
	int (*set_persist)(void *ctx, __u32 id, __u32 timeout_s, int family, __u8 plen);
	/* optional: delete every affinity entry of service id (a freed id) */
	int (*flush_persist)(void *ctx, __u32 id);
};

#define CHLB_BE_HASH 16384

struct chlb_rt_slot {
	bool used;     /* holds a table that is in the view or within grace */
	__u64 free_at; /* ns: reusable after (when not in the view) */
	struct chlb_table t;
	__u32 *bes; /* distinct backend slots the table names */
	__u32 nbes;
	/* what t was built from (ring: the next build starts from it); NULL when adopted */
	struct chlb_table_be *built_from;
	__u32 nbuilt_from, vnodes;
	__u32 prealloc; /* words the slot's inner map is known to hold */
	bool dfp_due;	/* t serves, dfp not computed yet (chlb_rt_slot_fp) */
	bool has_dfp;	/* dfp is t's decision fingerprint (table_fp.c) */
	__u32 dfp;	/* what users see: equal on hosts that decide alike */
};

struct chlb_rt_svc {
	bool used;
	bool retiring; /* deleted: id reusable once every slot is free */
	struct chlb_vip vip;
	__u32 nview;
	__u32 view[CHLB_HISTORY_MAX];	   /* k: slot index 0..CHLB_SLOTS_PER_SERVICE-1 */
	__u64 replaced[CHLB_HISTORY_MAX];  /* ns when view[i] stopped being current */
	struct chlb_service sv;		   /* last published view */
	bool adopted;			   /* view[0] came from a previous chlbd */
	bool verify;			   /* adopted, not yet rebuilt and compared */
	struct chlb_table_hdr adopted_hdr; /* its header, to skip an identical rebuild */
	struct chlb_rt_slot slot[CHLB_SLOTS_PER_SERVICE];
	__u64 swaps;
	double last_swap_ms;
};

/* A backend slot as the engine keeps it (the other layers' backends: table/build.h). */
struct chlb_rt_be {
	struct chlb_addr addr;
	int svc;    /* owning service id; -1: unknown (adopted from a chlbd without owners) */
	__u8 state; /* enum chlb_backend_state */
	__u32 gen;
	__u32 trefs;		  /* table slots (used) naming this backend */
	__u64 hold_until;	  /* ns: adopted leftovers are kept this long */
	bool wanted;		  /* in the desired state */
	__u32 nh_cycle;		  /* 1 + the refresh cycle that last resolved its address */
	__u64 nh_ns;		  /* when its next hop was last resolved (or tried): 0 never */
	bool no_route;		  /* its address had no route at the last try (logged once) */
	bool no_new;		  /* effective weight 0: CHLB_BE_F_NO_NEW (client persistence) */
	struct chlb_backend last; /* as last written: removal keeps its next hop for readers */
};

/*
 * Every swap's duration (build + write + publish, as its log line has it),
 * for chlbd's metrics: n[i] swaps took at most chlb_swap_le_s[i] seconds
 * (and more than the bound before), n[CHLB_SWAP_BUCKETS] longer than all.
 */
#define CHLB_SWAP_BUCKETS 10
extern const double chlb_swap_le_s[CHLB_SWAP_BUCKETS];
struct chlb_swap_hist {
	__u64 n[CHLB_SWAP_BUCKETS + 1];
	double sum_s;
};

struct chlb_rt {
	struct chlb_dp_ops ops;
	__u64 history_ns; /* how long a replaced table stays in the view */
	/* for UDP services, if shorter: the UDP idle timeout and a margin (history_of()) */
	__u64 udp_history_ns;
	__u64 grace_ns; /* how long a slot that left the view stays untouched */
	struct chlb_rt_svc svc[CHLB_MAX_SERVICES];
	struct chlb_rt_be be[CHLB_MAX_BACKENDS];
	void (*log)(int level, const char *fmt, ...); /* optional; LOG_* levels */
	/* optional: called between services of an apply (chlbd answers read-only requests) */
	void (*yield)(void);
	/*
	 * optional: called before a failed apply rewrites next (its services
	 * put back to what serves): chlbd's state file thread reads next
	 * meanwhile, and returns once it no longer does.
	 */
	void (*settle)(void);
	/* address -> its backend slots, one per service (chained hash): no scans */
	__s32 be_head[CHLB_BE_HASH];
	__s32 be_next[CHLB_MAX_BACKENDS];
	__u32 free_hint; /* next slot to try for a new occupant */
	/* where chlb_rt_svc_id() starts: after its last hit (lookups come in service order) */
	__u32 find_next;
	bool defer_adopted; /* apply: leave adopted views serving; verify them later */
	__u64 nh_next;	    /* ns: next next-hop refresh round */
	__u32 nh_cursor;    /* backend slot the next round starts at */
	struct chlb_swap_hist swap_hist;
	/*
	 * Bumped by every apply, verification and adoption: what can bring a
	 * deadline earlier than chlb_rt_tick() last returned. The event loop
	 * skips the tick (a scan of every slot) until that deadline unless
	 * this moved: health probes wake the loop a thousand times a second.
	 */
	__u64 changes;
};

struct chlb_rt *chlb_rt_new(const struct chlb_dp_ops *ops, __u64 history_ms, __u64 grace_ms);
void chlb_rt_free(struct chlb_rt *rt);

/*
 * Converge the data plane from `cur` (what is applied) to `next`. Services
 * that fail to apply are put back to their `cur` form in `next` (or removed
 * from it), so `next` always describes what serves. Returns 0, or the first
 * failure's -errno with its message in err when any service failed.
 */
int chlb_rt_apply(struct chlb_rt *rt, const struct chlb_state *cur, struct chlb_state *next,
		  char *err, size_t errlen);

/*
 * Would converging to `next` find every backend slot and service id it
 * needs? chlb_rt_apply() takes them service by service and stops a service
 * at the first one missing, so at scale a change could get halfway: this
 * counts them all before anything is touched. A (service, backend) pair
 * that holds a slot (LIVE, or DEAD and coming back) keeps it; every other
 * pair of next needs a free one: EMPTY, named by no table, past any hold.
 * Slots of backends a change removes stay held while a table in the view
 * (the history window, --history-ms) or in its grace period names them, so
 * replacing every backend of a service needs old + new slots at once.
 * cur (or NULL) is what serves: its services whose addresses next keeps
 * need no lookup. 0, or -ENOSPC with err ("not enough backend slots: ...").
 */
int chlb_rt_capacity(const struct chlb_rt *rt, const struct chlb_state *cur,
		     const struct chlb_state *next, char *err, size_t errlen);

/* Timers: retire history, free slots past grace, release dead backends. Returns next deadline (ns, 0 = none). */
__u64 chlb_rt_tick(struct chlb_rt *rt, __u64 now);

/*
 * The decision fingerprint of table slot sl of service svc (what users
 * see): computed at the first read or the next chlb_rt_tick() after the
 * swap, whichever comes first, so a swap's reply never waits for it
 * (~1.5 ms for a 160k-vnode ring). 0 with *fp, or -errno.
 */
int chlb_rt_slot_fp(struct chlb_rt *rt, struct chlb_rt_svc *svc, struct chlb_rt_slot *sl,
		    __u32 *fp);

/*
 * Adopt what a previous chlbd left in pinned maps: service ids and views of
 * the services in `st`, backend slots and generations. get_* read the data
 * plane; svc views of VIPs not in st are deleted by the next apply via
 * stale[] (filled with their keys, *nstale entries).
 */
struct chlb_adopt_ops {
	int (*get_backend)(void *ctx, __u32 slot, struct chlb_backend *be);
	int (*get_service)(void *ctx, const struct chlb_vip_key *k, struct chlb_service *v);
	/* optional: header of the table in a slot */
	int (*get_table_hdr)(void *ctx, __u32 tslot, struct chlb_table_hdr *hdr);
};
int chlb_rt_adopt(struct chlb_rt *rt, const struct chlb_adopt_ops *aops,
		  const struct chlb_state *st);

/*
 * Restart: services adopted with defer_adopted set keep serving their pinned
 * tables; this rebuilds one of them and compares (identical: adopted as is,
 * else swapped). Returns 1 while more are pending, 0 when done.
 */
int chlb_rt_verify_next(struct chlb_rt *rt, const struct chlb_state *st);

/*
 * The decision fingerprint (chlb_table_decision_fp) of table words naming
 * this rt's backend slots, by the addresses rt->be holds for them: slots[]
 * (nslots of them) when the caller knows which, NULL for every known slot
 * (a table adopted from a previous chlbd). 0 or -errno with err.
 */
int chlb_rt_table_fp(const struct chlb_rt *rt, const __u32 *words, __u32 nwords, const __u32 *slots,
		     __u32 nslots, __u32 *fp, char *err, size_t errlen);

struct chlb_rt_svc *chlb_rt_find(struct chlb_rt *rt, const struct chlb_vip *vip);
/* id of a service (its stats index), or -1 */
int chlb_rt_svc_id(const struct chlb_rt *rt, const struct chlb_vip *vip);
/* backend slot of addr in the service with id svc_id (LIVE), or -1 */
int chlb_rt_be_slot(const struct chlb_rt *rt, int svc_id, const struct chlb_addr *a);
/*
 * Would a swap of the service vip find a free table slot now? 0 if so (or
 * no such service: its first swap needs none), else when one frees (ns):
 * a swap sooner waits for it (the slot's grace period). Health checks
 * defer their swaps instead, so the event loop never waits.
 */
__u64 chlb_rt_swap_wait(const struct chlb_rt *rt, const struct chlb_vip *vip, __u64 now);
/*
 * Health checks' on-down reset: the LIVE slot of addr in service svc_id
 * gets generation + 1 (its counters stay), so the connection entries that
 * name it become stale and their next packets are decided again from the
 * current table (which no longer picks it). 0, -ENOENT, or the write's -errno.
 */
int chlb_rt_be_renew(struct chlb_rt *rt, int svc_id, const struct chlb_addr *a);

#endif /* CHLB_APPLY_H */
