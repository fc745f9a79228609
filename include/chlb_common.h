/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Limits, enums and the inline-attribute shim shared by the BPF data plane
 * (clang -target bpf) and userspace (gcc/clang). Everything in include/ must
 * compile on both sides: fixed-width __u32/__be32 types, no libc, no floats.
 */
#ifndef CHLB_COMMON_H
#define CHLB_COMMON_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* ---- limits (sizes of the BPF maps; userspace validates against them) ---- */
#define CHLB_MAX_SERVICES	 256  /* service ids 0..255 */
#define CHLB_MAX_BACKENDS	 8192 /* global backend slots */
#define CHLB_MAX_SVC_BACKENDS	 4096 /* backends in one service */
#define CHLB_HISTORY_MAX	 4    /* tables per service view: current + 3 recent */
#define CHLB_SLOTS_PER_SERVICE	 6    /* table slots per service: history + spares */
#define CHLB_TABLE_SLOTS	 (CHLB_MAX_SERVICES * CHLB_SLOTS_PER_SERVICE)
#define CHLB_MAX_VIPS		 (CHLB_MAX_SERVICES * 4)   /* {address, port, proto} keys */
#define CHLB_VIP_SLOTS		 4096			   /* data-plane VIP index: <= 25% full */
#define CHLB_VIP_PROBES		 8			   /* linear-probe window of one key */
#define CHLB_VIEW_SLOTS		 (CHLB_MAX_VIPS * 2 + 512) /* views: live + in grace */
/*
 * Source prefixes in one service's allow-list (`allow P1,P2,...`): 64 IPv6
 * prefixes are ~2.8 KB of text, one statement line (CHLB_LINE_MAX) holds them.
 */
#define CHLB_ALLOW_MAX		 64
#define CHLB_ALLOW_ENTRIES	 (CHLB_MAX_SERVICES * CHLB_ALLOW_MAX) /* the shared trie */
#define CHLB_PERSIST_DEFAULT_MAX 65536 /* client affinity entries (chlbd --persist-size) */
#define CHLB_PERSIST_MAX_S	 86400 /* longest `persist SECONDS`: a day */

#define CHLB_RING_DEFAULT_VNODES 160	    /* vnodes per backend at weight 100 */
#define CHLB_RING_MAX_VNODES	 (1u << 20) /* total vnodes in one ring */
#define CHLB_MAGLEV_DEFAULT_M	 65537	    /* prime */
#define CHLB_MAGLEV_MAX_M	 1048573    /* largest prime < 2^20 */
#define CHLB_JUMP_MAX_BUCKETS	 65536
#define CHLB_WEIGHT_DEFAULT	 100
#define CHLB_WEIGHT_MAX		 10000

/* ---- enums ---- */
enum chlb_family {
	CHLB_AF_INET = 4,
	CHLB_AF_INET6 = 6,
};

enum chlb_algo {
	CHLB_ALGO_RING = 1,
	CHLB_ALGO_JUMP = 2,
	CHLB_ALGO_MAGLEV = 3,
};

enum chlb_fwd {
	CHLB_FWD_L2DSR = 1,
	CHLB_FWD_IPIP = 2,
};

/* Which packet fields feed the flow hash. */
enum chlb_hash_fields {
	CHLB_HASH_5TUPLE = 0, /* src, dst, sport, dport, proto (default) */
	CHLB_HASH_SRC = 1,    /* source address only: client affinity, fragments stay together */
};

#endif /* CHLB_COMMON_H */
