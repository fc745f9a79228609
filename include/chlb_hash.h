/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one hashing core: CRC32C (slicing-by-8) + murmur3 fmix32, and the flow
 * key with its byte serialization. Compiled by the BPF data plane and by
 * userspace, so a flow hashes identically in the kernel and in `chlbctl which`.
 *
 * Why a finalizer: CRC is linear, so vnode names that differ in one digit
 * ("10.1.0.7#11", "10.1.0.7#12") land in structured, clumped positions
 * (max/mean load 1.5-2.3 measured). fmix32 avalanches every bit.
 */
#ifndef CHLB_HASH_H
#define CHLB_HASH_H

#include "chlb_common.h"
#include "chlb_crc32c_table.h"

#define CHLB_CRC32C_INIT 0xffffffffu

static __always_inline __u32 chlb_le32(const __u8 *p)
{
	return (__u32)p[0] | ((__u32)p[1] << 8) | ((__u32)p[2] << 16) | ((__u32)p[3] << 24);
}

/*
 * Raw CRC32C update (no init/final xor here). With a constant len the
 * compiler unrolls this completely, which is what the BPF side relies on.
 */
static __always_inline __u32 chlb_crc32c_update(__u32 crc, const void *buf, __u32 len)
{
	const __u8 *p = (const __u8 *)buf;

	while (len >= 8) {
		__u32 one = crc ^ chlb_le32(p);
		__u32 two = chlb_le32(p + 4);

		crc = chlb_crc32c_tab[7][one & 0xff] ^ chlb_crc32c_tab[6][(one >> 8) & 0xff] ^
		      chlb_crc32c_tab[5][(one >> 16) & 0xff] ^
		      chlb_crc32c_tab[4][(one >> 24) & 0xff] ^ chlb_crc32c_tab[3][two & 0xff] ^
		      chlb_crc32c_tab[2][(two >> 8) & 0xff] ^
		      chlb_crc32c_tab[1][(two >> 16) & 0xff] ^
		      chlb_crc32c_tab[0][(two >> 24) & 0xff];
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		__u32 one = crc ^ chlb_le32(p);

		crc = chlb_crc32c_tab[3][one & 0xff] ^ chlb_crc32c_tab[2][(one >> 8) & 0xff] ^
		      chlb_crc32c_tab[1][(one >> 16) & 0xff] ^
		      chlb_crc32c_tab[0][(one >> 24) & 0xff];
		p += 4;
		len -= 4;
	}
	while (len > 0) {
		crc = chlb_crc32c_tab[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
		p++;
		len--;
	}
	return crc;
}

/* Standard CRC32C: init and final xor 0xFFFFFFFF. crc32c("123456789") == 0xe3069283. */
static __always_inline __u32 chlb_crc32c(const void *buf, __u32 len)
{
	return chlb_crc32c_update(CHLB_CRC32C_INIT, buf, len) ^ 0xffffffffu;
}

/* murmur3 32-bit finalizer. */
static __always_inline __u32 chlb_fmix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* murmur3 64-bit finalizer (jump rehash after a tombstone). */
static __always_inline __u64 chlb_fmix64(__u64 k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

/*
 * A flow, as the data plane parses it and as the connection table keys it
 * (40 bytes, 4-aligned so both sides can read it a word at a time).
 * Addresses and ports in network byte order; IPv4 addresses use the first
 * 4 bytes of src/dst and the other 12 stay zero.
 */
struct chlb_flow {
	__u8 src[16];
	__u8 dst[16];
	__be16 sport;
	__be16 dport;
	__u8 proto;  /* IPPROTO_TCP / IPPROTO_UDP */
	__u8 family; /* CHLB_AF_INET / CHLB_AF_INET6 */
	__u16 pad;   /* always zero */
} __attribute__((aligned(4)));

/* A 4-aligned word read as chlb_le32() would read it (one load on little-endian). */
typedef __u32 __attribute__((__may_alias__)) chlb_word_alias;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define chlb_le32_aligned(p) (*(const chlb_word_alias *)(p))
#else
#define chlb_le32_aligned(p) chlb_le32((const __u8 *)(p))
#endif

/* One 4-byte CRC32C step (slicing-by-4) over a word read little-endian. */
static __always_inline __u32 chlb_crc32c_word(__u32 crc, __u32 w)
{
	__u32 one = crc ^ w;

	return chlb_crc32c_tab[3][one & 0xff] ^ chlb_crc32c_tab[2][(one >> 8) & 0xff] ^
	       chlb_crc32c_tab[1][(one >> 16) & 0xff] ^ chlb_crc32c_tab[0][one >> 24];
}

/*
 * One 8-byte step (slicing-by-8) over two words read little-endian: only
 * the first depends on the running CRC, so the dependency chain is half
 * as long as two word steps.
 */
static __always_inline __u32 chlb_crc32c_dword(__u32 crc, __u32 a, __u32 b)
{
	__u32 one = crc ^ a;

	return chlb_crc32c_tab[7][one & 0xff] ^ chlb_crc32c_tab[6][(one >> 8) & 0xff] ^
	       chlb_crc32c_tab[5][(one >> 16) & 0xff] ^ chlb_crc32c_tab[4][one >> 24] ^
	       chlb_crc32c_tab[3][b & 0xff] ^ chlb_crc32c_tab[2][(b >> 8) & 0xff] ^
	       chlb_crc32c_tab[1][(b >> 16) & 0xff] ^ chlb_crc32c_tab[0][b >> 24];
}

/* 16 bytes of a 4-aligned buffer. */
static __always_inline __u32 chlb_crc32c_16(__u32 crc, const __u8 *p)
{
	crc = chlb_crc32c_dword(crc, chlb_le32_aligned(p), chlb_le32_aligned(p + 4));
	return chlb_crc32c_dword(crc, chlb_le32_aligned(p + 8), chlb_le32_aligned(p + 12));
}

/*
 * The CRC of a source address alone (16 bytes, IPv4 in the first 4): what
 * `hash src` hashes, and what decides a persistent service's new client by
 * its masked address (bpf/chlb_persist.h).
 */
static __always_inline __u32 chlb_src_crc(const __u8 *src, __u8 family)
{
	if (family == CHLB_AF_INET6)
		return chlb_crc32c_16(CHLB_CRC32C_INIT, src) ^ 0xffffffffu;
	return chlb_crc32c_word(CHLB_CRC32C_INIT, chlb_le32_aligned(src)) ^ 0xffffffffu;
}

/*
 * The hashed bytes of a flow, in wire order:
 *   5-tuple, IPv4: src(4) dst(4) sport(2) dport(2) proto(1)   = 13 bytes
 *   5-tuple, IPv6: src(16) dst(16) sport(2) dport(2) proto(1) = 37 bytes
 *   source only:   src(4) or src(16)
 * Returns the CRC32C of those bytes (before finalizing). Computed a word at
 * a time straight from the struct: in BPF, byte-assembled words cost ~10
 * instructions each, and the result is the same CRC of the same bytes.
 */
static __always_inline __u32 chlb_flow_crc(const struct chlb_flow *f, __u32 fields)
{
	__u32 crc = CHLB_CRC32C_INIT;

	if (fields == CHLB_HASH_SRC)
		return chlb_src_crc(f->src, f->family);
	if (f->family == CHLB_AF_INET6) {
		crc = chlb_crc32c_16(crc, f->src);
		crc = chlb_crc32c_16(crc, f->dst);
	} else {
		crc = chlb_crc32c_dword(crc, chlb_le32_aligned(f->src), chlb_le32_aligned(f->dst));
	}
	crc = chlb_crc32c_word(crc, chlb_le32_aligned(&f->sport)); /* sport, dport: adjacent */
	crc = chlb_crc32c_tab[0][(crc ^ f->proto) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

/*
 * Raw CRC state x advanced through 16 zero bytes. CRC32C without its init
 * and final xor is linear: update(x, M) = advance(x, |M|) ^ update(0, M).
 */
static __always_inline __u32 chlb_crc32c_advance16(__u32 x)
{
	return chlb_crc32c_zeros16[0][x & 0xff] ^ chlb_crc32c_zeros16[1][(x >> 8) & 0xff] ^
	       chlb_crc32c_zeros16[2][(x >> 16) & 0xff] ^ chlb_crc32c_zeros16[3][x >> 24];
}

/* update(0, addr): an IPv6 VIP's share of its flows' CRC, computed once per service. */
static __always_inline __u32 chlb_vip_crc(const __u8 addr[16])
{
	return chlb_crc32c_16(0, addr);
}

/*
 * chlb_flow_crc() of an IPv6 5-tuple flow to a VIP whose chlb_vip_crc() is
 * vip_crc: the 16 destination bytes cost 4 table lookups instead of 16
 * (the data plane's IPv6 path; tests/unit/test_hash.c checks they agree).
 */
static __always_inline __u32 chlb_flow_crc_v6vip(const struct chlb_flow *f, __u32 vip_crc)
{
	__u32 crc = chlb_crc32c_16(CHLB_CRC32C_INIT, f->src);

	crc = chlb_crc32c_advance16(crc) ^ vip_crc;
	crc = chlb_crc32c_word(crc, chlb_le32_aligned(&f->sport));
	crc = chlb_crc32c_tab[0][(crc ^ f->proto) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

/* The 32-bit flow hash used by ring and maglev, and for vnode positions. */
static __always_inline __u32 chlb_hash_fin(__u32 crc)
{
	return chlb_fmix32(crc);
}

/*
 * The 64-bit jump key: the raw CRC. Jump's first step multiplies the key by
 * its LCG constant and keeps the top 31 bits, a multiplicative hash of the
 * CRC, so finalizing first adds no entropy (the key has the CRC's 32 bits
 * either way; the loop's iteration counts over 1M flows came out the same,
 * mean 7.48 at n = 1000). It did add fmix32's latency to the head of jump's
 * dependency chain (what that cost: docs/performance.md).
 */
static __always_inline __u64 chlb_jump_key(__u32 crc)
{
	return crc;
}

#endif /* CHLB_HASH_H */
