/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The thin context layer that lets one pipeline serve both hooks (Cilium's
 * bpf/include/bpf/ctx/ idea): every function takes the hook's context and a
 * compile-time constant `tc`; with everything always_inline, each entry
 * point gets its own specialised copy and the other hook's branch is gone
 * before the verifier sees it.
 */
#ifndef CHLB_CTX_H
#define CHLB_CTX_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

enum chlb_verdict {
	CHLB_PASS = 0, /* to the kernel stack, untouched */
	CHLB_DROP,
	CHLB_TX,       /* back out of the ingress interface */
	CHLB_REDIRECT, /* bpf_redirect() already called */
};

static __always_inline void *ctx_data(void *ctx, bool tc)
{
	if (tc)
		return (void *)(long)((struct __sk_buff *)ctx)->data;
	return (void *)(long)((struct xdp_md *)ctx)->data;
}

static __always_inline void *ctx_data_end(void *ctx, bool tc)
{
	if (tc)
		return (void *)(long)((struct __sk_buff *)ctx)->data_end;
	return (void *)(long)((struct xdp_md *)ctx)->data_end;
}

static __always_inline __u32 ctx_ifindex(void *ctx, bool tc)
{
	if (tc)
		return ((struct __sk_buff *)ctx)->ifindex;
	return ((struct xdp_md *)ctx)->ingress_ifindex;
}

/* Length of a TC GSO super-packet's segments (0 = not GSO, or XDP). */
static __always_inline __u32 ctx_gso_size(void *ctx, bool tc)
{
	if (tc)
		return ((struct __sk_buff *)ctx)->gso_size;
	return 0;
}

static __always_inline int ctx_load_bytes(void *ctx, bool tc, __u32 off, void *buf, __u32 len)
{
	if (tc)
		return bpf_skb_load_bytes(ctx, off, buf, len);
	return bpf_xdp_load_bytes(ctx, off, buf, len);
}

/* Shrink the frame to len bytes. */
static __always_inline int ctx_trim(void *ctx, bool tc, __u32 len)
{
	long cur;

	if (tc)
		return bpf_skb_change_tail(ctx, len, 0);
	cur = (long)ctx_data_end(ctx, tc) - (long)ctx_data(ctx, tc);
	/* keep the compiler from folding this into arithmetic on data_end */
	__asm__ volatile("" : "+r"(cur));
	return bpf_xdp_adjust_tail(ctx, (int)len - (int)cur);
}

/*
 * Constant-size copy with 4- and 2-byte accesses. clang turns a memcpy whose
 * alignment it cannot prove (packet memory) into single-byte loads and
 * stores - ~3 instructions per byte; x86-64 and arm64 take unaligned word
 * accesses to packet and map memory and the verifier allows them there
 * (stack operands must stay 4-aligned: callers pass 4-aligned structs).
 */
typedef __u32 __attribute__((__may_alias__)) chlb_u32_alias;
/* Word-built headers and keys (flow_set_ports, vip_lookup, chlb_encap) assume it. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "chlb's BPF side is little-endian");
typedef __u16 __attribute__((__may_alias__)) chlb_u16_alias;

static __always_inline void copy_words(void *dst, const void *src, __u32 n)
{
	__u32 i;

#pragma unroll
	for (i = 0; i + 4 <= n; i += 4)
		*(chlb_u32_alias *)(dst + i) = *(const chlb_u32_alias *)(src + i);
	if (n & 2)
		*(chlb_u16_alias *)(dst + i) = *(const chlb_u16_alias *)(src + i);
}

/* Copy the L2 header (14, 18 or 22 bytes) from off to the front. off >= 14. */
static __always_inline int ctx_move_l2(void *ctx, bool tc, __u32 l2len, __u32 off)
{
	void *data = ctx_data(ctx, tc), *end = ctx_data_end(ctx, tc);

	off &= 0xff;
	if (data + off + 22 > end)
		return -1;
	copy_words(data, data + off, 14);
	if (l2len >= 18)
		copy_words(data + 14, data + off + 14, 4);
	if (l2len >= 22)
		copy_words(data + 18, data + off + 18, 4);
	return 0;
}

/*
 * Open `room` bytes between the L2 header and the L3 header. TC with a
 * plain Ethernet header uses bpf_skb_adjust_room(), which keeps GSO metadata
 * right for an encapsulation (encap_flags); otherwise (XDP, or VLAN tags
 * still in the frame) grow the head and move the L2 header forward.
 */
static __always_inline int ctx_push_l3(void *ctx, bool tc, __u32 l2len, __u32 room,
				       __u64 encap_flags)
{
	if (tc) {
		if (l2len == 14)
			return bpf_skb_adjust_room(ctx, room, BPF_ADJ_ROOM_MAC, encap_flags);
		if (bpf_skb_change_head(ctx, room, 0))
			return -1;
	} else {
		if (bpf_xdp_adjust_head(ctx, -(int)room))
			return -1;
	}
	return ctx_move_l2(ctx, tc, l2len, room);
}

/* The hook's return code for a verdict. */
static __always_inline int ctx_verdict(void *ctx, bool tc, enum chlb_verdict v)
{
	switch (v) {
	case CHLB_DROP:
		return tc ? TC_ACT_SHOT : XDP_DROP;
	case CHLB_TX:
		/* TC has no TX: the same device's egress is the equivalent */
		return tc ? bpf_redirect(ctx_ifindex(ctx, tc), 0) : XDP_TX;
	case CHLB_REDIRECT:
		return tc ? TC_ACT_REDIRECT : XDP_REDIRECT;
	default:
		return tc ? TC_ACT_OK : XDP_PASS;
	}
}

#endif /* CHLB_CTX_H */
