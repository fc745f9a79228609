/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chlb_dp: the small internal API over the data plane (bpf/chlb.bpf.c) that
 * chlbd, the BPF tests and the benchmark share. It owns the skeleton, the
 * attachment and the pins; it knows nothing about services as the operator
 * sees them (the daemon maps those onto service ids, table slots and
 * backend slots).
 *
 * Every call returns 0 or a negative errno and, where an err buffer is
 * given, a message naming the object, the action and the errno.
 *
 * Atomicity contract (see docs/design.md, "The swap protocol"):
 *   - chlb_dp_write_table() writes a table into a table slot IN PLACE when
 *     the slot's inner map is big enough (memcpy through mmap). The caller
 *     must only write slots that no service view currently names; a view
 *     switches to the new table with one chlb_dp_set_service() (one hash
 *     update), so packets see the old or the new view, never a half table.
 *   - When the slot's inner map is too small (or absent), a new inner map is
 *     created and the outer slot updated: that syscall blocks for an RCU
 *     grace period (milliseconds: docs/performance.md), so prefer preallocating with
 *     chlb_dp_prealloc_table().
 */
#ifndef CHLB_DP_H
#define CHLB_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "chlb_maps.h"

struct chlb_dp;

enum chlb_attach_mode {
	CHLB_ATTACH_NONE = 0,
	CHLB_ATTACH_XDP,	 /* native XDP (driver mode), through a bpf_link */
	CHLB_ATTACH_XDP_GENERIC, /* XDP in skb mode, through a bpf_link */
	CHLB_ATTACH_TC,		 /* TC ingress (clsact + cls_bpf direct-action) */
};

/*
 * Which of the pipeline's entry points chlb_dp_open() loads. Each is
 * verified on its own, ~0.5 s here (more than half of a start): a chlbd
 * loads the one its mode attaches. The TC egress probe steering program is
 * loaded whatever this says (health checks attach it later).
 */
enum chlb_dp_entry {
	CHLB_DP_ENTRY_ALL = 0, /* chlb_xdp and chlb_tc (tests, tools) */
	CHLB_DP_ENTRY_XDP,     /* chlb_xdp alone: chlb_dp_prog_fd(CHLB_PROG_TC) < 0 */
	CHLB_DP_ENTRY_TC,      /* chlb_tc alone */
};

#define CHLB_DP_DEFAULT_CONN_MAX    (1u << 20)
#define CHLB_DP_DEFAULT_UDP_IDLE_MS 30000

struct chlb_dp_opts {
	__u32 conn_max;	   /* conns LRU entries; 0: a pinned table's, else the default */
	__u32 udp_idle_ms; /* UDP flow idle timeout; 0 = CHLB_DP_DEFAULT_UDP_IDLE_MS */
	__u32 tcp_idle_ms; /* TCP connection idle timeout; 0 = none (entries live until evicted) */
	/*
	 * Entry sync (dp_sync.c): bytes of the sync_ring buffer, a power of two
	 * >= the page size; 0 = sync off (the program emits no record).
	 */
	__u32 sync_ring_bytes;
	/*
	 * Entries each CPU may write per second for flows whose SYN it did not
	 * see and that the view's tables disagree about (bpf/chlb_stick.h,
	 * budget_left); 0 = CHLB_MOVED_INSERTS_PER_S; at most 2^24.
	 */
	__u32 moved_inserts_per_s;
	/*
	 * Client affinity entries (persist map, LRU); 0: a pinned map's size,
	 * else CHLB_PERSIST_DEFAULT_MAX. A pinned map of another size is made
	 * afresh: its clients are decided again.
	 */
	__u32 persist_max;
	/*
	 * Pin directory on a bpffs (e.g. /sys/fs/bpf/chlb/<name>); NULL = no
	 * pins. When it already holds chlb's pinned maps, they are adopted
	 * (bpf_map__reuse_fd before load): state, tables and connections
	 * survive a restart or a program upgrade.
	 */
	const char *pin_dir;
	bool verbose;		  /* libbpf debug output to stderr */
	enum chlb_dp_entry entry; /* the entry points to load; 0: all */
};

/*
 * Open and load the data plane (adopting pinned maps if opts->pin_dir has
 * them). A pinned connection table of another size than a non-zero
 * conn_max is replaced by one of that size, its entries copied (dp_resize.c):
 * attach, then call chlb_dp_conns_resize_finish().
 */
int chlb_dp_open(const struct chlb_dp_opts *opts, struct chlb_dp **out, char *err, size_t errlen);

/* A connection table resized by chlb_dp_open(). */
struct chlb_dp_resize {
	__u32 old_max, new_max;
	__u64 entries; /* in the old table at the copy */
	__u64 copied;  /* of those, copied (all when they fit) */
	__u64 late;    /* written by the old program after the copy, copied when finishing */
};
/* True, and what moved, when chlb_dp_open() resized the connection table. */
bool chlb_dp_conns_resized(const struct chlb_dp *dp, struct chlb_dp_resize *out);
/*
 * After the new program is attached: copy what the old program wrote to the
 * old table since the copy, and let the old table go. 0 when no resize.
 */
int chlb_dp_conns_resize_finish(struct chlb_dp *dp);

/* Close: frees userspace state. Pinned maps/links and attachments stay. */
void chlb_dp_close(struct chlb_dp *dp);

/* True when chlb_dp_open() adopted maps that were already pinned. */
bool chlb_dp_adopted(const struct chlb_dp *dp);

/*
 * True when adopted counters had another layout (an upgrade changed them):
 * they were made afresh and restart at zero.
 */
bool chlb_dp_counters_restarted(const struct chlb_dp *dp);

/* True when the pinned client affinity map had another size: made afresh. */
bool chlb_dp_persist_restarted(const struct chlb_dp *dp);

/*
 * The kernel's HZ as libbpf found it in the kernel config (the SYN stamps
 * then use jiffies), or 0 (no config found: they use the coarse time).
 */
unsigned int chlb_dp_syn_clock_hz(const struct chlb_dp *dp);

/*
 * Attach to ifindex. XDP modes use a bpf_link; when pin_dir is set the link
 * is pinned as <pin_dir>/link_<ifindex>, and an existing pinned link there is
 * updated in place with the new program (bpf_link__update_program: no
 * packet sees "no program"). TC: clsact hook (-EEXIST is fine) + cls_bpf
 * filter, replacing our own filter at the same handle/priority; the program
 * is pinned as <pin_dir>/tc_<ifindex>, the record detach finds it by. An
 * interface that carries this data plane in another mode is moved (the new
 * attachment first, then the old one goes: dp_attach.c). -EBUSY, with a
 * message, when the interface carries another chlbd's program (see
 * chlb_dp_check_iface()).
 */
int chlb_dp_attach(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		   size_t errlen);

/*
 * Before anything is loaded: 0, or -EBUSY and why when attaching the data
 * plane of pin_dir to ifindex in `mode` would take over another chlbd's
 * traffic (its XDP program or its TC filter, at chlb's handle, on ifindex),
 * or, in an XDP mode, when another XDP program is attached there.
 */
/*
 * Will attaching in an XDP `mode` bridge through TC? True when pin_dir's
 * XDP link on ifindex runs in the other XDP mode: chlb_tc takes the
 * packets while the link is replaced (dp_attach.c), so it must be loaded
 * (CHLB_DP_ENTRY_ALL). Before anything is loaded, like the check below.
 */
bool chlb_dp_xdp_bridges(const char *pin_dir, int ifindex, enum chlb_attach_mode mode);

int chlb_dp_check_iface(const char *pin_dir, int ifindex, enum chlb_attach_mode mode, char *err,
			size_t errlen);

/* Detach from ifindex (removes the pinned link or the TC record too). */
int chlb_dp_detach(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		   size_t errlen);

/* An attachment of this data plane: what shutdown --detach removes. */
struct chlb_dp_attachment {
	int ifindex;
	enum chlb_attach_mode mode; /* XDP for a link whose mode can't be told */
	bool live;		    /* false: the interface went away (a defunct link) */
};

/*
 * Every attachment of this data plane: the links and TC records in pin_dir,
 * links made without one, and TC filters at chlb's handle running our
 * program on the interfaces of this network namespace. Up to max are
 * stored; returns how many there are.
 */
int chlb_dp_attachments(struct chlb_dp *dp, struct chlb_dp_attachment *out, int max);

/*
 * Wait for an RCU grace period: every program run that had started has
 * ended (dp_grace.c). Milliseconds; falls back to a 10 ms sleep (and returns
 * the error) where the kernel has no map-in-map.
 */
int chlb_dp_grace(struct chlb_dp *dp);

/* Pin every map under opts->pin_dir (done by chlb_dp_open when pin_dir is set). */
int chlb_dp_pin(struct chlb_dp *dp, char *err, size_t errlen);

/* Remove every pin chlb made under pin_dir, and the directory if empty. */
int chlb_dp_unpin(struct chlb_dp *dp, char *err, size_t errlen);

/* ---- state ---- */
int chlb_dp_set_backend(struct chlb_dp *dp, __u32 slot, const struct chlb_backend *be);
int chlb_dp_get_backend(struct chlb_dp *dp, __u32 slot, struct chlb_backend *be);

/*
 * Make sure table slot `slot` has an inner map of at least `nwords` words
 * (rounded up to CHLB_CHUNK_WORDS). Blocks for an RCU grace period when it must create one.
 */
int chlb_dp_prealloc_table(struct chlb_dp *dp, __u32 slot, __u32 nwords);

/*
 * The same for n slots (slot[i] to hold nwords[i] words), in order: creates
 * the missing inner maps until until_ns (CLOCK_MONOTONIC ns; at least one),
 * then puts them all into their slots with one batch update, so that they
 * wait for one RCU grace period together instead of one each. Returns how
 * many of the first slots are done, or -errno when none is.
 */
int chlb_dp_prealloc_tables(struct chlb_dp *dp, const __u32 *slot, const __u32 *nwords, __u32 n,
			    __u64 until_ns);

/* Write table words (include/chlb_table.h layout) into table slot `slot`. */
int chlb_dp_write_table(struct chlb_dp *dp, __u32 slot, const __u32 *words, __u32 nwords);

/* Capacity in words of the slot's current inner map (0 = none). */
__u32 chlb_dp_table_capacity(struct chlb_dp *dp, __u32 slot);

/*
 * The table in slot `slot` as the data plane holds it: its header, and
 * with words non-NULL all its words too (malloc'd, hdr->words of them; the
 * caller frees), read chunk by chunk from the one inner map. -ENOENT: no
 * table in the slot; -EINVAL (words asked for): the header is not a table's.
 */
struct chlb_table_hdr; /* include/chlb_table.h */
int chlb_dp_read_table(struct chlb_dp *dp, __u32 slot, struct chlb_table_hdr *hdr, __u32 **words);

/* Set (insert or replace, one atomic hash update) / delete / read a service view. */
int chlb_dp_set_service(struct chlb_dp *dp, const struct chlb_vip_key *key,
			const struct chlb_service *svc);
int chlb_dp_del_service(struct chlb_dp *dp, const struct chlb_vip_key *key);
int chlb_dp_get_service(struct chlb_dp *dp, const struct chlb_vip_key *key,
			struct chlb_service *svc);

/*
 * A service's source allow-list in the allow trie (dp_allow.c): n prefixes
 * (addr: IPv4 in the first 4 bytes). prune false: adds the missing ones,
 * touches no other; prune true: also deletes every entry of service id
 * that is not among them (n = 0: all of them). A change that must not drop
 * an allowed source calls it without prune, publishes the view, then with
 * prune. 0 or -errno.
 */
struct chlb_allow_pfx {
	__u8 addr[16];
	__u8 plen; /* 0..32 (IPv4) or 0..128 (IPv6) */
};
int chlb_dp_set_allow(struct chlb_dp *dp, __u32 svc_id, const struct chlb_allow_pfx *p, __u32 n,
		      bool prune);

/*
 * Client persistence of service id (dp_persist.c): timeout_s 0 turns it off
 * for the data plane (the view's CHLB_SVC_F_PERSIST says whether it is
 * looked at); plen: the netmask's length in bits of the family. 0 or -errno.
 */
int chlb_dp_set_persist(struct chlb_dp *dp, __u32 svc_id, __u32 timeout_s, int family, __u8 plen);
/* Service id's entries: every affinity entry of the id deleted (a new service of a freed id). */
int chlb_dp_persist_flush(struct chlb_dp *dp, __u32 svc_id);
/* The affinity entry of key (svc_id, masked source), 0 or -ENOENT / -errno. */
int chlb_dp_persist_lookup(struct chlb_dp *dp, const struct chlb_persist_key *key,
			   struct chlb_conn *out);
/* Calls fn for every affinity entry until it returns non-zero (returned). */
int chlb_dp_persist_foreach(struct chlb_dp *dp,
			    int (*fn)(const struct chlb_persist_key *, const struct chlb_conn *,
				      void *),
			    void *ctx);
/* Masks addr (16 bytes, IPv4 in the first 4) to plen bits of family, in place. */
void chlb_persist_mask(__u8 *addr, int family, __u8 plen);

/* Build a VIP key: family CHLB_AF_INET (addr = 4 bytes) or CHLB_AF_INET6 (16). */
void chlb_dp_vip_key(struct chlb_vip_key *key, int family, const void *addr, __u16 port_host,
		     __u8 proto);

/* ---- stats (summed over CPUs) ---- */
int chlb_dp_read_global(struct chlb_dp *dp, struct chlb_global_stats *out);
int chlb_dp_read_service_stats(struct chlb_dp *dp, __u32 svc_id, struct chlb_counters *out);
int chlb_dp_read_backend_stats(struct chlb_dp *dp, __u32 slot, struct chlb_counters *out);
/* Zero every counter (tests and the benchmark). */
int chlb_dp_reset_stats(struct chlb_dp *dp);
/* Zero one backend slot's counters on every CPU (the slot's new occupant starts at 0). */
int chlb_dp_reset_backend_stats(struct chlb_dp *dp, __u32 slot);
/* The same for a service id (a new service taking a freed id starts at 0). */
int chlb_dp_reset_service_stats(struct chlb_dp *dp, __u32 svc_id);
/*
 * `chlbctl stats --reset`: zero every service, backend and reason counter
 * but ct_insert, the connection table's inserts since the program was
 * loaded: evictions are inserts - entries. Counters are per CPU and written
 * without a lock, so under traffic an increment racing the write may be
 * lost or survive.
 */
int chlb_dp_reset_counters(struct chlb_dp *dp);

/* ---- connections ---- */
/* 0 and the entry, -ENOENT when the flow has none. */
int chlb_dp_conn_lookup(struct chlb_dp *dp, const struct chlb_flow *flow, struct chlb_conn *out);
int chlb_dp_conn_delete(struct chlb_dp *dp, const struct chlb_flow *flow);

/*
 * Every entry of the connection table (dp_conns.c: batched lookups; the
 * cost per million entries: docs/performance.md). A callback returning non-zero stops the walk
 * and that value is returned; otherwise 0, or a negative errno. Entries
 * written or evicted during the walk may or may not be seen.
 */
int chlb_dp_conns_foreach(struct chlb_dp *dp,
			  int (*cb)(const struct chlb_flow *f, const struct chlb_conn *c,
				    void *ctx),
			  void *ctx);
/*
 * A resumable walk, a batch per call, for callers that must not stall (the
 * event loop's background tally, the sync dump). pos is the kernel's bucket
 * cursor (BPF_MAP_LOOKUP_BATCH): it only moves forward, so a pass ends
 * after the table's buckets, however many entries are inserted or evicted
 * meanwhile; an entry is reported at most once per pass (a key lives in
 * one bucket), one written during the pass may be missed. Zero it to start
 * a pass; `done` once the pass is over.
 */
struct chlb_dp_conns_cursor {
	__u32 pos;    /* the next bucket (valid once started) */
	bool started; /* a batch has been read: pos is the kernel's */
	bool done;    /* every bucket visited: the pass is over */
};
/*
 * Reads up to *count entries (keys[], vals[]) from where cur stands and
 * sets *count to how many (0 is possible on the last call). 0 (check
 * cur->done), or -errno with *count 0 and cur unchanged: -ENOSPC when the
 * next bucket alone holds more than *count entries (call again with bigger
 * buffers), -EINVAL for a zero *count, -EOPNOTSUPP without batch ops.
 */
int chlb_dp_conns_next_batch(struct chlb_dp *dp, struct chlb_dp_conns_cursor *cur,
			     struct chlb_flow *keys, struct chlb_conn *vals, __u32 *count);
/* Entries in the table now (a walk). */
int chlb_dp_conn_count(struct chlb_dp *dp, __u64 *entries);
/* The table's size in entries and, when memory is given, its kernel memory in bytes. */
int chlb_dp_conn_size(struct chlb_dp *dp, __u32 *max_entries, __u64 *memory);

/*
 * The connection filter (include/chlb_maps.h): the share of the bits set in
 * the bank readers test, and a rebuild of the other bank from the entries
 * followed by a flip, so stale bits of ended connections go away.
 */
int chlb_dp_filter_fill(struct chlb_dp *dp, double *fill);
int chlb_dp_filter_rebuild(struct chlb_dp *dp);
/* Set a flow's bits in both banks (before writing its conns entry). */
int chlb_dp_filter_add(struct chlb_dp *dp, const struct chlb_flow *flow);
/*
 * The filter was filled from adopted entries at open (the pinned one had
 * another layout, or none) and not rebuilt since: entries that the
 * previous program wrote after that fill, until ours was attached, have
 * bits only in the old filter. Rebuild once attached.
 */
bool chlb_dp_filter_stale(struct chlb_dp *dp);
/* The filter as mapped (shared with the data plane), or NULL: for tests and benchmarks. */
struct chlb_conn_filter *chlb_dp_filter_mem(struct chlb_dp *dp);

/*
 * ---- entry sync between LB hosts (dp_sync.c; docs/design.md, "Several LB hosts") ----
 * The ring buffer of struct chlb_sync_rec the program writes when loaded
 * with sync_ring_bytes (its fd whatever the setting: a test can show that
 * nothing is written when sync is off).
 */
#define CHLB_DP_SYNC_RING_BYTES (4u << 20) /* ~75,000 records */
int chlb_dp_sync_ring_fd(struct chlb_dp *dp);
bool chlb_dp_sync_enabled(const struct chlb_dp *dp);

enum chlb_dp_sync_result {
	CHLB_SYNC_APPLIED = 0, /* inserted, rewritten (a held placeholder too) or marked ENDED */
	CHLB_SYNC_KEPT,	       /* a valid entry of a connection that has not ended: kept */
};
/*
 * Apply a peer's entry, already mapped to this host's backend slot and its
 * current generation: the flow's filter bits first (both banks), then the
 * entry - inserted when there is none; an existing valid entry of a
 * connection that has not ended is kept (only an ENDED record marks it
 * ended); an ended, stale or held one is rewritten. last_ns = now_ns (coarse
 * monotonic, as the data plane's). Returns enum chlb_dp_sync_result or
 * -errno.
 */
int chlb_dp_sync_apply(struct chlb_dp *dp, const struct chlb_flow *flow, __u32 slot, __u32 gen,
		       __u16 flags, __u64 now_ns);
/*
 * Hold a flow while a peer's entry for it waits for its service or backend
 * (include/chlb_maps.h, CHLB_CONN_F_HELD): the filter bits, then a
 * placeholder entry (slot CHLB_CONN_HELD_SLOT, generation 0, flags HELD,
 * last_ns = now_ns, coarse monotonic) whose packets the program drops
 * (CHLB_R_HELD) instead of deciding them from this host's partial table.
 * chlb_dp_sync_apply() writes the real entry over it. Written over no
 * entry, an ended, stale or held one - what the peer's entry would rewrite;
 * a valid entry of a connection that has not ended (what apply keeps) is
 * left as it is. The program stops honouring a placeholder after
 * CHLB_CONN_HELD_MAX_NS. Returns 0 (held), 1 (the flow has that valid
 * entry: nothing to hold), or -errno.
 */
int chlb_dp_sync_hold(struct chlb_dp *dp, const struct chlb_flow *flow, __u64 now_ns);
/*
 * The wait is over without the entry: delete the flow's entry if it is
 * still a placeholder (never a real one), so the flow is decided as any
 * entry-less flow. 0 (deleted, or nothing held), or -errno.
 */
int chlb_dp_sync_unhold(struct chlb_dp *dp, const struct chlb_flow *flow);

/*
 * ---- probes through the data path (dp_probe.c, bpf/chlb_probe.h) ----
 * A socket whose SO_MARK is CHLB_PROBE_MARK(slot) and that connects to a
 * VIP has its packets sent to backend slot `slot` as a client's would be,
 * by the steering program on the TC egress of the interface the kernel's
 * route to the VIP leaves by (chlb_nh_probe_route() names it).
 *
 * Attach: clsact (-EEXIST is fine) + cls_bpf on egress at chlb's handle
 * and priority, replacing our own filter there (idempotent; a restarted
 * chlbd swaps its program in), pinned as <pin_dir>/probe_<ifindex>.
 * -EBUSY, with a message, when another program holds that place. Detach
 * removes our filter (never someone else's) and the record; the clsact
 * stays (the TC data plane may use its ingress).
 */
int chlb_dp_probe_attach(struct chlb_dp *dp, int ifindex, char *err, size_t errlen);
int chlb_dp_probe_detach(struct chlb_dp *dp, int ifindex, char *err, size_t errlen);
/* True when our steering program is on ifindex's egress. */
bool chlb_dp_probe_attached(struct chlb_dp *dp, int ifindex);
/* The interfaces the pin directory records a steering attachment on (up to max); how many. */
int chlb_dp_probe_attachments(struct chlb_dp *dp, int *ifindex, int max);

/* ---- test runs ---- */
enum chlb_dp_prog {
	CHLB_PROG_XDP = 0,
	CHLB_PROG_TC = 1,
	CHLB_PROG_PROBE = 2, /* TC egress: health probes to the backend their mark names */
};

/*
 * Run the program once on a full Ethernet frame through
 * bpf_prog_test_run_opts(). *out_len is the buffer size on entry and the
 * output frame's length on return; *verdict is the program's return value.
 */
int chlb_dp_test_run(struct chlb_dp *dp, enum chlb_dp_prog which, const void *in, __u32 in_len,
		     void *out, __u32 *out_len, __u32 *verdict);

/* ---- raw access (benchmark, adopters) ---- */
enum chlb_dp_map {
	CHLB_MAP_VIPS = 0,
	CHLB_MAP_TABLES,
	CHLB_MAP_BACKENDS,
	CHLB_MAP_CONNS,
	CHLB_MAP_SVC_STATS,
	CHLB_MAP_BE_STATS,
	CHLB_MAP_GLOBAL_STATS,
	CHLB_MAP_CONN_FILTER, /* two-bank filter of flows that may have an entry, SYN stamps */
	CHLB_MAP_VIP_INDEX,   /* the data plane's VIP index: key slot -> views slot */
	CHLB_MAP_VIEWS,	      /* the data plane's copies of the views */
	CHLB_MAP_FILTER_BANK, /* which conn_filter bank readers test */
	CHLB_MAP_ALLOW,	      /* every service's source allow-list (LPM trie) */
	CHLB_MAP_PERSIST_CFG, /* per service id: persistence timeout and netmask */
	CHLB_MAP_PERSIST,     /* client affinity entries (LRU hash) */
	CHLB_MAP_COUNT
};
/* Map fd (owned by dp), or -1. Names as in bpf/chlb_maps.bpf.h. */
int chlb_dp_map_fd(struct chlb_dp *dp, enum chlb_dp_map m);
const char *chlb_dp_map_name(enum chlb_dp_map m);
int chlb_dp_prog_fd(struct chlb_dp *dp, enum chlb_dp_prog which);

#endif /* CHLB_DP_H */
