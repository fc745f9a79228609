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
 *   jump    one bucket per backend; the weight is the bucket's acceptance
 *           threshold, round(2^19 * weight / norm) with norm = the heaviest
 *           configured weight (spec.jump_norm), stored in the bucket word
 *           (include/chlb_table.h). Shares follow weights exactly (up to the
 *           threshold's 19 bits and the rehash cap); a weight change moves
 *           only flows to or from that backend while norm stays; weight 0 =
 *           threshold 0: the backend keeps its bucket, its flows rehash.
 *   jtable  one bucket per backend; entries per backend = M * weight / total
 *           (largest remainder), see build_jtable.c.
 *   hrw     weighted rendezvous per table entry: score -ln(1 - u) / weight,
 *           so an entry goes to backend b with probability weight / total;
 *           shares are binomial around that (build_hrw.c).
 *
 * Empty set, or every weight 0: the build succeeds with count = 0 and
 * chlb_table_decide() returns -ENOENT ("no backend with weight > 0").
 */
#ifndef CHLB_TABLE_BUILD_H
#define CHLB_TABLE_BUILD_H

#include <stddef.h>
#include "chlb_table.h"
#include "base/algo.h" /* CHLB_ALGO_JTABLE, CHLB_ALGO_HRW */

#define CHLB_BE_NAME_LEN 48

/*
 * Jump's acceptance threshold for weight w when the heaviest (norm) weighs
 * norm: CHLB_JUMP_THR_FULL (always taken) at or above norm, 0 for weight 0,
 * else round(2^19 * w / norm), at least 1.
 */
static inline __u32 chlb_jump_threshold(__u32 w, __u32 norm)
{
	__u64 t;

	if (!w)
		return 0;
	if (w >= norm)
		return CHLB_JUMP_THR_FULL;
	t = (((__u64)w << CHLB_JUMP_THR_BITS) + norm / 2) / norm;
	return t < 1 ? 1 : t >= CHLB_JUMP_THR_FULL ? CHLB_JUMP_THR_FULL - 1 : (__u32)t;
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

/*
 * A ring this builder made, and what it was made from: a ring build starts
 * from it (its vnodes already sorted) when the new set keeps most of its
 * backends, as a membership change does. It never changes the result: the
 * table is the one a build from nothing gives, word for word (build_ring.c).
 */
struct chlb_table_prev {
	const struct chlb_table *t;
	const struct chlb_table_be *be; /* slot, weight and name of each of its backends */
	__u32 n;
	__u32 vnodes; /* its spec's vnodes */
};

struct chlb_table_spec {
	__u32 algo;		 /* enum chlb_algo, CHLB_ALGO_JTABLE or CHLB_ALGO_HRW */
	__u32 vnodes;		 /* ring: vnodes per backend at weight 100 (0 = default 160) */
	__u32 table_size;	 /* maglev, jtable, hrw: M, prime, > backends/buckets (0 = 65537) */
	const __u32 *jump_order; /* jump, jtable: jump_order[b] = index into be[] or CHLB_TOMBSTONE,
				  * each backend at most once; NULL = a fresh order: one bucket
				  * per backend, in name (canonical) order */
	__u32 jump_nbuckets;	 /* jump: entries in jump_order */
	__u32 jump_norm;	 /* jump, jtable: the weight of a full threshold (the heaviest
				  * configured weight, which health and slow start never exceed,
				  * so they never rescale the others); 0 or below the heaviest
				  * weight in be[]: that weight */
	const struct chlb_table_prev *prev; /* ring: the table this one replaces, or NULL */
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
 * Rendezvous by its definition: slot[k] = the backend slot of the HRW winner
 * of entry e = k * step (step 0 = 1) over every live backend of be[0..n),
 * N scores each, for e < m, or CHLB_TOMBSTONE when none is live. What an hrw
 * table of size m must hold entry by entry; chlbctl sim and the tests
 * compare the two. 0 or -errno.
 */
int chlb_hrw_direct(const struct chlb_table_be *be, __u32 n, __u32 m, __u32 step, __u32 *slot,
		    char *err, size_t errlen);

/*
 * A ring table's vnodes in ring order, read back from its lines and spill:
 * hash[i] and slot[i] for i < the header's count (either may be NULL).
 * Returns 0, or -EINVAL when the words are not a well-formed ring.
 */
int chlb_ring_vnodes(const struct chlb_table *t, __u32 *hash, __u32 *slot);

/*
 * Jump bucket order: what chlbd persists per jump service, part of the
 * desired state (`bucket N` on a backend, `buckets N` on the service, both
 * written by save). Bucket b belongs to the backend named name[b]; "" is a
 * tombstone. Every backend holds exactly one bucket, whatever its weight
 * (weight 0 included: weights are thresholds, so weights never renumber
 * buckets). Rules, applied by chlb_jump_order_sync():
 *   - a backend gone turns its bucket into a tombstone: flows there rehash
 *     over the others and nobody else moves (1.0x ideal); a backend found
 *     in two buckets (old state files: one bucket per 100 of weight) keeps
 *     the lowest, the others become tombstones;
 *   - a backend asked for bucket N (want[]) gets it: the order grows with
 *     tombstones up to N, its old bucket becomes a tombstone; a bucket held
 *     by another backend that stays is an error, and so is growing the
 *     order until more buckets are empty than held;
 *   - a backend without a bucket gets the lowest tombstone, else the next
 *     bucket at the end, in canonical (name) order: the result does not
 *     depend on be[] order or on the order of statements;
 *   - trailing tombstones created by this sync are trimmed (free: jump(k, n-1)
 *     equals jump(k, n) except for the keys of bucket n-1). Older trailing
 *     tombstones stay: trimming them would move their already-rehashed flows
 *     a second time;
 *   - compaction: when this sync created tombstones (no explicit bucket
 *     asked for) and tombstones then exceed half the live buckets, the order
 *     is rebuilt without tombstones (live buckets keep their relative order)
 *     and ~half the flows move once. Why: every tombstone is an attempt
 *     wasted, and the lookup gives up after CHLB_JUMP_MAX_REHASH attempts.
 *     A deterministic function of the order and the set, like all rules.
 * The table's fallback word is the heaviest backend (the lowest bucket of
 * the heaviest weight).
 */
struct chlb_jump_order {
	char (*name)[CHLB_BE_NAME_LEN]; /* name[b]: bucket b's backend; "" = tombstone */
	__u32 n;			/* buckets, tombstones included */
	__u32 cap;			/* allocated entries */
};

/*
 * Brings o in line with be[0..n) (rules above; weights play no part).
 * want[i] (want may be NULL): the bucket be[i] must hold, or CHLB_TOMBSTONE.
 * Returns 0, 1 when it had to compact (flows reshuffled; worth a log line),
 * or -errno with a message in err (o unchanged).
 */
int chlb_jump_order_sync(struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			 char *err, size_t errlen);
int chlb_jump_order_sync_want(struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			      const __u32 *want, char *err, size_t errlen);

/* The bucket name holds in o, or CHLB_TOMBSTONE. O(buckets). */
__u32 chlb_jump_order_find(const struct chlb_jump_order *o, const char *name);

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
