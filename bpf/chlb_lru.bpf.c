// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The LRU choice measured (tests/bench/lru.c; docs/performance.md): the
 * kernel's LRU hash with one common LRU, and with BPF_F_NO_COMMON_LRU
 * (per-CPU LRU lists over one hash table), with conns' key and value.
 * lru_insert inserts a key never used before: the CPU's number and a
 * per-CPU counter in the source, the run's tag beside them; lru_lookup
 * looks up the key in `probe` (an entry another CPU inserted: an RSS move).
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

#include "chlb_maps.h"

struct lru_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 16); /* set at load */
	__type(key, struct chlb_flow);
	__type(value, struct chlb_conn);
};

struct lru_map lru_common SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, 1 << 16);
	__type(key, struct chlb_flow);
	__type(value, struct chlb_conn);
} lru_percpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counter SEC(".maps");

__u32 use_percpu; /* 1: lru_percpu */
__u32 tag;	  /* the run's keys: src[8..11] */
struct chlb_flow probe;

SEC("xdp")
int lru_insert(struct xdp_md *ctx)
{
	struct chlb_flow f = { .sport = 1, .dport = 80, .proto = IPPROTO_TCP, .family = 2 };
	struct chlb_conn c = { .backend = 1, .gen = 1 };
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&counter, &zero);
	void *m = use_percpu ? (void *)&lru_percpu : (void *)&lru_common;

	if (!n)
		return XDP_ABORTED;
	*(__u32 *)f.src = (__u32)++ * n;
	*(__u32 *)(f.src + 4) = bpf_get_smp_processor_id();
	*(__u32 *)(f.src + 8) = tag;
	return bpf_map_update_elem(m, &f, &c, BPF_NOEXIST) ? XDP_ABORTED : XDP_TX;
}

SEC("xdp")
int lru_lookup(struct xdp_md *ctx)
{
	void *m = use_percpu ? (void *)&lru_percpu : (void *)&lru_common;

	return bpf_map_lookup_elem(m, &probe) ? XDP_TX : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
