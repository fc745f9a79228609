/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The data plane's maps and load-time settings. Layouts are in
 * include/chlb_maps.h (shared with userspace); sizes in include/chlb_common.h.
 */
#ifndef CHLB_MAPS_BPF_H
#define CHLB_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "chlb_maps.h"

/* BPF's accessors for include/chlb_table.h (defined in chlb_select.h). */
static __always_inline int chlb_tbl_word(const void *t, __u32 i, __u32 *out);
static __always_inline const __u32 *chlb_tbl_line(const void *t, __u32 i);
#include "chlb_table.h"

/* One 8-byte load the compiler may neither split nor merge (writers store the word whole). */
#define READ_ONCE_U64(p) (*(volatile __u64 *)(p))

/* ---- load-time settings (skel->rodata before load) ---- */
/* A UDP flow with no packet for this long is re-decided from the current table. */
const volatile __u64 cfg_udp_idle_ns = 30ull * 1000 * 1000 * 1000;
/* A TCP connection with no packet for this long is re-decided; 0 = no limit (Katran's). */
const volatile __u64 cfg_tcp_idle_ns = 0;
/* An entry's last_ns is refreshed at most this often (saves a write per packet). */
const volatile __u64 cfg_ct_refresh_ns = 1000ull * 1000 * 1000;
/*
 * Emit a sync record per entry written or ended (chlb_sync.h): set at load
 * when chlbd has sync peers; a host without them pays one predictable branch.
 */
const volatile __u8 cfg_sync = 0;
/*
 * Entries a CPU may write per second for flows whose SYN it did not see and
 * that the view's tables disagree about (insert_budget below); 0: none.
 */
const volatile __u32 cfg_moved_inserts_per_s = CHLB_MOVED_INSERTS_PER_S;

/* vips: {VIP address, port, proto} -> the service view: userspace's registry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CHLB_MAX_VIPS);
	__type(key, struct chlb_vip_key);
	__type(value, struct chlb_service);
} vips SEC(".maps");

/* vip_index, views: the data plane's copy of vips (include/chlb_maps.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, CHLB_VIP_SLOTS);
	__type(key, __u32);
	/* array elements are 8-byte strided in the mmap: a u64, used as a u32 */
	__type(value, __u64);
} vip_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, CHLB_VIEW_SLOTS);
	__type(key, __u32);
	__type(value, struct chlb_vip_view);
} views SEC(".maps");

/*
 * allow: (service id, source prefix) of every service's allow-list
 * (include/chlb_maps.h); looked up only for views with CHLB_SVC_F_ALLOW.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CHLB_ALLOW_ENTRIES);
	__type(key, struct chlb_allow_key);
	__type(value, __u32);
} allow SEC(".maps");

/*
 * persist_cfg, persist: client persistence (include/chlb_maps.h); looked up
 * only for views with CHLB_SVC_F_PERSIST. persist's size is a load-time
 * setting (chlbd --persist-size).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CHLB_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct chlb_persist_cfg);
} persist_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CHLB_PERSIST_DEFAULT_MAX);
	__type(key, struct chlb_persist_key);
	__type(value, struct chlb_conn);
} persist SEC(".maps");

/* One table chunk: CHLB_CHUNK_WORDS words of the include/chlb_table.h layout. */
struct chlb_chunk {
	__u32 w[CHLB_CHUNK_WORDS];
};

/*
 * tables: slot -> inner ARRAY of chunks holding one lookup table.
 * slot = service id * CHLB_SLOTS_PER_SERVICE + k. The inner template is
 * mmapable (userspace fills a table with one memcpy) and BPF_F_INNER_MAP
 * lets each inner map have its own max_entries (table size).
 */
struct chlb_table_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32[CHLB_CHUNK_WORDS]);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, CHLB_TABLE_SLOTS);
	__type(key, __u32);
	__array(values, struct chlb_table_inner);
} tables SEC(".maps");

/* backends: backend slot -> address, state, generation, next hop. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CHLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct chlb_backend);
} backends SEC(".maps");

/*
 * conns: TCP connections from their first non-SYN packet, and flows the
 * view's tables disagree about, -> {backend, generation, flags}
 * (include/chlb_maps.h). Size is a load-time setting
 * (bpf_map__set_max_entries).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, struct chlb_flow);
	__type(value, struct chlb_conn);
} conns SEC(".maps");

/*
 * conn_filter: one element, the two-bank Bloom filter over flows that may
 * have a conns entry and the SYN stamps (include/chlb_maps.h). Mmapable:
 * chlbd rebuilds the idle bank in place.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chlb_conn_filter);
} conn_filter SEC(".maps");

/*
 * sync_ring: struct chlb_sync_rec per entry inserted, rewritten or ended,
 * for chlbd's sync peers. Sized at load (page size when sync is off); not
 * pinned: a restarted chlbd reads the ring of the program it loads.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} sync_ring SEC(".maps");

/* filter_bank: element 0 is the conn_filter bank readers test (0 or 1). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} filter_bank SEC(".maps");

/* insert_budget: per CPU, the token bucket of the inserts only history asks for. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chlb_insert_budget);
} insert_budget SEC(".maps");

/* svc_stats: per service id, per CPU: packets, bytes, new flows. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CHLB_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct chlb_counters);
} svc_stats SEC(".maps");

/* be_stats: per backend slot, per CPU: packets, bytes, new flows. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CHLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct chlb_counters);
} be_stats SEC(".maps");

/* global_stats: one record per CPU, a counter per enum chlb_reason. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chlb_global_stats);
} global_stats SEC(".maps");

#endif /* CHLB_MAPS_BPF_H */
