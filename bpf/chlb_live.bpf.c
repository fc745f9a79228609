// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Live-traffic bench programs (tests/bench/live.c, docs/bench-live.md).
 *
 * live_gen: the generator. Run with BPF_PROG_TEST_RUN and
 * BPF_F_TEST_XDP_LIVE_FRAMES, it writes a whole frame from the template
 * and redirects it into the veth named by gen_ifindex. It rewrites the
 * frame every run: live-frame pages are recycled without being reset, so
 * a page comes back as the program under test left it (MACs rewritten).
 * The source address and port come from a per-CPU counter: seq = gen_base
 * + (counter & gen_mask) - a fresh flow per packet (mask ~0), a fixed mix
 * (mask 2^k - 1) or one flow (mask 0) - and the CPU's number goes into the
 * port, so generators on two CPUs send different flows.
 *
 * live_count: the far side. Attached to the generator's end of the veth,
 * it counts (per CPU) and drops what the program under test sent back
 * with XDP_TX.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define LIVE_TMPL_MAX 80 /* IPv6 + TCP (74 bytes) padded to whole words */

__u8 gen_tmpl[LIVE_TMPL_MAX] __attribute__((aligned(8)));
__u32 gen_len;	    /* 64 (IPv4) or 80 (IPv6): bytes of gen_tmpl copied */
__u32 gen_ip_off;   /* the last 4 bytes of the source address */
__u32 gen_port_off; /* the TCP source port */
__u32 gen_ifindex;
__u32 gen_base;
__u32 gen_mask;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} gen_seq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} count SEC(".maps");

static __always_inline void copy8(void *dst, const void *src, __u32 words)
{
	__u32 i;

	for (i = 0; i < words; i++)
		((__u64 *)dst)[i] = ((const __u64 *)src)[i];
}

SEC("xdp")
int live_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 zero = 0, seq, cpu = bpf_get_smp_processor_id(), ip_off, port_off;
	__u64 *c = bpf_map_lookup_elem(&gen_seq, &zero);

	if (!c)
		return XDP_ABORTED;
	seq = gen_base + ((__u32)(*c)++ & gen_mask);
	if (gen_len == LIVE_TMPL_MAX) {
		if (data + LIVE_TMPL_MAX > end)
			return XDP_ABORTED;
		copy8(data, gen_tmpl, LIVE_TMPL_MAX / 8);
	} else {
		if (data + 64 > end)
			return XDP_ABORTED;
		copy8(data, gen_tmpl, 8);
	}
	ip_off = gen_ip_off & 63;
	port_off = gen_port_off & 63;
	if (data + ip_off + 4 > end || data + port_off + 2 > end)
		return XDP_ABORTED;
	/* 11.0.0.0/8 (IPv4) or the template's /96 (IPv6): 24 bits of seq */
	*(__u32 *)(data + ip_off) = bpf_htonl(0x0b000000 | (seq & 0xffffff));
	*(__u16 *)(data + port_off) = bpf_htons(1024 + ((cpu & 31) << 10) + ((seq >> 24) & 0xff));
	return bpf_redirect(gen_ifindex, 0);
}

SEC("xdp")
int live_count(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&count, &zero);

	if (n)
		(*n)++;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
