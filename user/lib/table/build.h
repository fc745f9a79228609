/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Table builders: a service's backend set -> the flat word array of
 * include/chlb_table.h, which the data plane holds and both sides look up.
 * chlbd, chlbctl (sim, which) and the tests link this.
 *
 * Determinism: the same backend set (names + weights, plus the jump bucket
 * order) gives a bit-identical table on every host, whatever order the
 * backends were added in. Names are the canonical address text (inet_ntop
 * form); the caller canonicalizes, the builders only compare bytes.
 *
 * Weights (0..CHLB_WEIGHT_MAX, 100 = normal, 0 = drain: no new flows):
 *   ring    K = vnodes * weight / 100 vnodes (rounded, at least 1 when weight > 0).
 *   maglev  weight = relative frequency of turns in the permutation fill, so
 *           entries are proportional to weight (within one round).
 *   jump    integer bucket multiplicity: a backend holds
 *           round(weight / CHLB_JUMP_WEIGHT_UNIT) buckets (at least 1 when
 *           weight > 0). Jump has no finer weights than that: weights 100 and
 *           149 get the same share, 150 gets twice it. Use ring or maglev when
 *           ratios matter finer than multiples of 100. Weight 0 = the backend's
 *           buckets become tombstones (its flows rehash; nobody else moves).
 *
 * Empty set, or every weight 0: the build succeeds with count = 0 and
 * chlb_table_decide() returns -ENOENT ("no backend with weight > 0").
 */
#ifndef CHLB_TABLE_BUILD_H
#define CHLB_TABLE_BUILD_H

#include <stddef.h>
#include "chlb_table.h"
#include "base/algo.h" /* CHLB_ALGO_JTABLE */

#define CHLB_BE_NAME_LEN      48
#define CHLB_JUMP_WEIGHT_UNIT 100 /* jump: weight per bucket */

/* Jump buckets a backend of this weight holds (0 when drained). */
static inline __u32 chlb_jump_multiplicity(__u32 weight)
{
	__u32 m = (weight + CHLB_JUMP_WEIGHT_UNIT / 2) / CHLB_JUMP_WEIGHT_UNIT;

	return weight == 0 ? 0 : (m ? m : 1);
}

/*
 * One backend of a service, as the builders see it. A backend has one struct per layer, each named for it: struct chlb_backend
 * (include/chlb_maps.h) is the data plane's slot, a BPF map value;
 * struct chlb_table_be (table/build.h) is a backend as the builders see it
 * (slot, weight, name); struct chlb_cfg_be (config/state.h) is one as the
 * desired state holds it (address, name, weight); struct chlb_rt_be
 * (engine/apply.h) is the engine's bookkeeping of a slot (owner, state,
 * generation, next hop).
 */
struct chlb_table_be {
	__u32 slot;   /* data-plane backend slot index: what the table words store */
	__u32 weight; /* 0..CHLB_WEIGHT_MAX; 100 = normal; 0 = drain (no new flows) */
	char name[CHLB_BE_NAME_LEN]; /* canonical address text: "10.1.0.2", "2001:db8::2" */
};

struct chlb_table_spec {
	__u32 algo;		 /* enum chlb_algo, or CHLB_ALGO_JTABLE */
	__u32 vnodes;		 /* ring: vnodes per backend at weight 100 (0 = default 160) */
	__u32 table_size;	 /* maglev, jtable: M, prime, > backends/buckets (0 = 65537) */
	const __u32 *jump_order; /* jump, jtable: jump_order[b] = index into be[] or CHLB_TOMBSTONE;
				  * NULL = a fresh order: be[] order, weight multiplicity */
	__u32 jump_nbuckets;	 /* jump: entries in jump_order */
};

/* A built table: words[0..CHLB_TBL_HDR_WORDS) is struct chlb_table_hdr. */
struct chlb_table {
	__u32 *words;
	__u32 nwords;
};

/*
 * Builds the table for be[0..n). Returns 0, or -errno with a message in err
 * (-EINVAL: bad spec, weight, duplicate or empty name, jump order naming a
 * backend twice in a way weights do not allow...; -E2BIG: over a limit of
 * chlb_common.h; -ENOMEM). On error *out is left empty ({NULL, 0}).
 */
int chlb_table_build(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		     struct chlb_table *out, char *err, size_t errlen);
void chlb_table_free(struct chlb_table *t);

static inline const struct chlb_table_hdr *chlb_table_header(const struct chlb_table *t)
{
	return (const struct chlb_table_hdr *)t->words;
}

/*
 * The decision for a flow CRC (chlb_flow_crc), by the same chlb_table_lookup
 * the data plane runs. 0 and *slot, or -ENOENT when the table names no
 * backend (empty set / all drained), -EINVAL when the table is malformed.
 */
int chlb_table_decide(const struct chlb_table *t, __u32 crc, __u32 *slot);

/*
 * CRC32C of the words after the header: what hdr.fingerprint holds. It
 * covers backend SLOT numbers, which are per host: use it to tell a table
 * from the same host's other tables (a restart adopts an identical pinned
 * table by it), never to compare hosts.
 */
__u32 chlb_table_fingerprint(const __u32 *words, __u32 nwords);

/*
 * The decision fingerprint (table_fp.c), what users see: CRC32C of the
 * table's decisions, position by position, with every backend slot replaced
 * by its canonical address text (name[slot], slot < nname). Equal on hosts
 * that send every flow hash to the same address, whatever slots they use;
 * different otherwise (a backend missing, another weight, jump buckets in
 * another order). 0, -EINVAL (malformed words) or -ENOENT (a slot the table
 * names has no name), with a message in err.
 */
int chlb_table_decision_fp(const __u32 *words, __u32 nwords, const char *const *name, __u32 nname,
			   __u32 *fp, char *err, size_t errlen);
/* The same with the names of be[0..n) (the builders' input: slot and name). */
int chlb_table_decision_fp_be(const struct chlb_table *t, const struct chlb_table_be *be, __u32 n,
			      __u32 *fp, char *err, size_t errlen);

/*
 * A ring table's vnodes in ring order, read back from its lines and spill:
 * hash[i] and slot[i] for i < the header's count (either may be NULL).
 * Returns 0, or -EINVAL when the words are not a well-formed ring.
 */
int chlb_ring_vnodes(const struct chlb_table *t, __u32 *hash, __u32 *slot);

/*
 * Jump bucket order: what chlbd persists per jump service. Bucket b belongs
 * to the backend named name[b]; "" is a tombstone. Rules, applied by
 * chlb_jump_order_sync():
 *   - a backend gone (or drained to weight 0, or with fewer buckets wanted
 *     than it holds) turns its highest buckets into tombstones: flows there
 *     rehash evenly over the live buckets and nobody else moves (1.0x ideal);
 *   - a new bucket fills the lowest tombstone first, else is appended; new
 *     buckets are handed out in canonical (name) order, so the result does
 *     not depend on be[] order;
 *   - trailing tombstones created by this sync are trimmed (free: jump(k, n-1)
 *     equals jump(k, n) except for the keys of bucket n-1). Older trailing
 *     tombstones stay: trimming them would move their already-rehashed flows
 *     a second time;
 *   - compaction: when tombstones exceed half the live buckets, the order is
 *     rebuilt without tombstones (live buckets keep their relative order) and
 *     ~half the flows move once. Why: a flow rehashes at most
 *     CHLB_JUMP_MAX_REHASH (16) times before the fallback backend takes it;
 *     with a tombstone fraction f that is f^16 of all flows piled on one
 *     backend: 2.3e-8 at f = 1/3, but 1.5e-5 (1.5% extra load at N = 1000) at
 *     f = 1/2. It also bounds the lookup's rehash cost.
 * The table's fallback word is the first live bucket's backend.
 */
struct chlb_jump_order {
	char (*name)[CHLB_BE_NAME_LEN]; /* name[b]: bucket b's backend; "" = tombstone */
	__u32 n;			/* buckets, tombstones included */
	__u32 cap;			/* allocated entries */
};

/*
 * Brings o in line with be[0..n) (weights give each backend's bucket count).
 * Returns 0, 1 when it had to compact (flows reshuffled; worth a log line),
 * or -errno with a message in err (o unchanged).
 */
int chlb_jump_order_sync(struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			 char *err, size_t errlen);

/* Restores a persisted order: names[b], "" or "-" for a tombstone. 0 or -errno. */
int chlb_jump_order_set(struct chlb_jump_order *o, const char *const *names, __u32 nbuckets);

/*
 * Translates o into spec form: idx[b] = index into be[] or CHLB_TOMBSTONE
 * (idx holds o->n entries). -EINVAL (message in err) when a bucket names a
 * backend missing from be[]: sync first.
 */
int chlb_jump_order_map(const struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			__u32 *idx, char *err, size_t errlen);

void chlb_jump_order_free(struct chlb_jump_order *o);

#endif /* CHLB_TABLE_BUILD_H */
