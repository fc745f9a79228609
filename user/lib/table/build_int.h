/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Internals shared by the table builders (build_*.c); not an API. */
#ifndef CHLB_TABLE_BUILD_INT_H
#define CHLB_TABLE_BUILD_INT_H

#include <stdarg.h>
#include "base/err.h"
#include "table/build.h"

/* A zeroed table of nwords words with magic, algo and words filled in. */
int build_alloc(struct chlb_table *out, __u32 algo, __u32 nwords, char *err, size_t errlen);
/* The same with only words [0, zero_words) zeroed: the builder writes all the rest. */
int build_alloc_prefix(struct chlb_table *out, __u32 algo, __u32 nwords, __u32 zero_words,
		       char *err, size_t errlen);

/* A Maglev-format table of m entries naming nlive backends; *entry = its first entry. */
int build_alloc_direct(struct chlb_table *out, __u32 m, __u32 nlive, __u32 **entry, char *err,
		       size_t errlen);

/* be[] indices sorted by name (canonical order), into idx[n]. */
void build_sort_by_name(const struct chlb_table_be *be, __u32 n, __u32 *idx);

/*
 * Ring vnode positions of replicas 0..k-1 of name into out[k]:
 * fmix32(crc32c("<name>#<replica>")). Served from a bounded per-process
 * cache by name (build_vnodes.c; thread-safe).
 */
void build_vnode_hashes(const char *name, __u32 k, __u32 *out);
struct build_vnode_stats {
	__u64 hits, misses, flushes;
	__u32 names, hashes; /* held now */
};
void build_vnode_cache_stats(struct build_vnode_stats *st);
void build_vnode_cache_flush(void);

/*
 * be must be validated (names unique, weights in range) before these run.
 * ring, maglev: byname[n] = be[] indices in name order (build_sort_by_name).
 */
/* Ring builds on this thread that started from spec->prev / from nothing (tests). */
struct build_ring_stats {
	__u64 from_prev, from_nothing;
	__u64 patched; /* of from_prev: the lines that change patched, the rest copied */
};
void build_ring_stats(struct build_ring_stats *st);
int build_ring(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	       const __u32 *byname, struct chlb_table *out, char *err, size_t errlen);
int build_jump(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	       struct chlb_table *out, char *err, size_t errlen);
int build_jtable(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		 struct chlb_table *out, char *err, size_t errlen);
int build_hrw(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	      struct chlb_table *out, char *err, size_t errlen);
int build_maglev(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		 const __u32 *byname, struct chlb_table *out, char *err, size_t errlen);

/*
 * The jump bucket order of spec (or a fresh one: be[] in name order) as be[]
 * indices or CHLB_TOMBSTONE, each backend at most once (weight-0 backends
 * keep their buckets); *order is malloc'd. live = backends of weight > 0.
 */
int build_jump_resolve(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		       __u32 **order, __u32 *nb, __u32 *live, char *err, size_t errlen);

/* Raw CRC32C update (chlb_crc32c_update), with the SSE4.2 instruction where the CPU has it. */
__u32 build_crc32c_update(__u32 crc, const void *buf, size_t len);

/* The weight of a full threshold: spec->jump_norm, or the heaviest in the order above it. */
__u32 build_jump_norm(const struct chlb_table_spec *spec, const struct chlb_table_be *be,
		      const __u32 *order, __u32 nb);

/* Maglev's table-size rule (prime, <= CHLB_MAGLEV_MAX_M); 0 or -EINVAL with a message. */
int build_check_m(__u32 m, char *err, size_t errlen);

#endif /* CHLB_TABLE_BUILD_INT_H */
