// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark wrapper around the data plane pipeline (tests/bench/dataplane.c).
 *
 * BPF_PROG_TEST_RUN with repeat=N runs the program N times on the SAME
 * buffer: after the first run an encapsulating program would see its own
 * output. So every run first restores the original frame (shrinking the
 * head back and copying BENCH_LEN bytes), optionally writes a fresh source
 * from a counter (a flow never seen before, or one of a fixed mix of
 * flows), then runs the pipeline.
 * bench_restore_tx does the same restore and returns XDP_TX: the baseline
 * that is subtracted.
 */
#include "chlb_pipeline.h"

#define BENCH_LEN 128

__u8 bench_pkt[BENCH_LEN] __attribute__((aligned(8)));
__u32 bench_src_off; /* 0: leave the source alone; else offset of 4 bytes to rewrite */
__u32 bench_counter;
__u32 bench_src_mask = ~0u; /* the counter bits a source keeps: a mix cycles through mask + 1 */

static __always_inline int restore(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	long cur = end - data;

	__asm__ volatile("" : "+r"(cur));
	/*
	 * Always one adjust_head call (delta 0 for the baseline and for cases
	 * that leave the length alone), so every case pays the same harness.
	 */
	if (bpf_xdp_adjust_head(ctx, (int)(cur - BENCH_LEN)))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + BENCH_LEN > end)
		return -1;
	copy_words(data, bench_pkt, BENCH_LEN);
	if (bench_src_off) {
		__u32 off = bench_src_off & 0x7f, c = (bench_counter++ & bench_src_mask) + 1;

		if (data + off + 4 > end)
			return -1;
		*(__u32 *)(data + off) = c;
	}
	return 0;
}

SEC("xdp")
int bench_restore_tx(struct xdp_md *ctx)
{
	if (restore(ctx))
		return XDP_ABORTED;
	return XDP_TX;
}

SEC("xdp")
int bench_pipeline(struct xdp_md *ctx)
{
	if (restore(ctx))
		return XDP_ABORTED;
	return chlb_process(ctx, false);
}

/*
 * Profile: the pipeline cut after each stage (same restore), so the
 * differences between cases show where the time goes.
 */
SEC("xdp")
int bench_upto_vip(struct xdp_md *ctx)
{
	struct chlb_pkt p = {};

	if (restore(ctx) || chlb_parse(ctx, false, &p) != CHLB_R_MAX || !vip_lookup(&p))
		return XDP_ABORTED;
	return XDP_TX;
}

SEC("xdp")
int bench_upto_crc(struct xdp_md *ctx)
{
	struct chlb_service *svc;
	struct chlb_pkt p = {};

	if (restore(ctx) || chlb_parse(ctx, false, &p) != CHLB_R_MAX)
		return XDP_ABORTED;
	svc = vip_lookup(&p);
	if (!svc)
		return XDP_ABORTED;
	bench_counter += chlb_flow_crc(&p.flow, svc->hash_fields) & 1;
	return XDP_TX;
}

SEC("xdp")
int bench_upto_decide(struct xdp_md *ctx)
{
	struct chlb_persist_ref pr;
	struct chlb_service *svc;
	struct chlb_pkt p = {};
	__u32 slot, nf, crc;

	if (restore(ctx) || chlb_parse(ctx, false, &p) != CHLB_R_MAX)
		return XDP_ABORTED;
	svc = vip_lookup(&p);
	if (!svc)
		return XDP_ABORTED;
	crc = chlb_flow_crc(&p.flow, svc->hash_fields);
	if (!chlb_stick(svc, &p, persist_ref(svc, &p, &pr) ? pr.crc : crc, &slot, &nf, &pr))
		return XDP_ABORTED;
	return XDP_TX;
}

/*
 * Platform probe, independent of chlb: one dependent read of a random word
 * of a 1 MiB array (one bank of conn_filter's bits) per run, nothing else. Timed in
 * short and in long batches, it shows how much of an L2-sized map survives
 * from one BPF_PROG_TEST_RUN call to the next on this machine.
 */
#define PROBE_WORDS (1u << 17)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROBE_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} probe_mem SEC(".maps");

__u64 probe_next;

SEC("xdp")
int bench_probe_read(struct xdp_md *ctx)
{
	__u32 i = (__u32)((probe_next * 0x9e3779b97f4a7c15ull) >> 47); /* 17 bits */
	__u64 *w = bpf_map_lookup_elem(&probe_mem, &i);

	if (!w)
		return XDP_ABORTED;
	probe_next += 1 + (*w >> 63); /* the words are 0: the next index waits for this read */
	return XDP_TX;
}

/*
 * The same over 4 MiB: what a fresh flow's first read of per-flow state
 * cost when conn_filter interleaved bits and stamps (2^17 elements of 32
 * bytes); now that read is in one bank's 1 MiB (include/chlb_maps.h).
 */
#define PROBE4_WORDS (1u << 19)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROBE4_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} probe_mem4 SEC(".maps");

SEC("xdp")
int bench_probe_read4(struct xdp_md *ctx)
{
	__u32 i = (__u32)((probe_next * 0x9e3779b97f4a7c15ull) >> 45); /* 19 bits */
	__u64 *w = bpf_map_lookup_elem(&probe_mem4, &i);

	if (!w)
		return XDP_ABORTED;
	probe_next += 1 + (*w >> 63);
	return XDP_TX;
}

/*
 * Platform probe: the kernel's own LRU insert, nothing of chlb around it. A
 * fresh key per run (the counter in the source), inserted with
 * BPF_NOEXIST into an LRU hash of conns' size, key and value; the bench
 * deletes each batch's keys afterwards, as first_ack_n1000 does, so the
 * LRU stays hot and far from full. first_ack_n1000 minus this is what
 * chlb adds to the insert it cannot avoid.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, struct chlb_flow);
	__type(value, struct chlb_conn);
} probe_lru SEC(".maps");

SEC("xdp")
int bench_probe_lru_insert(struct xdp_md *ctx)
{
	struct chlb_flow f = {
		.sport = 1, .dport = 80, .proto = IPPROTO_TCP, .family = CHLB_AF_INET
	};
	struct chlb_conn c = { .backend = 1, .gen = 1 };

	*(__u32 *)f.src = ++bench_counter;
	return bpf_map_update_elem(&probe_lru, &f, &c, BPF_NOEXIST) ? XDP_ABORTED : XDP_TX;
}

SEC("xdp")
int bench_bare_tx(struct xdp_md *ctx)
{
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
