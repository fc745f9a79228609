/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The `chlbctl sim` planner as a library call, so the tests run exactly what
 * operators run. For one algorithm and a backend set it builds three tables
 * with the real builders (the set, the set plus one backend, the set minus
 * the middle one) and measures them with the real lookups:
 *
 *   keyspace numbers (balance_*, disruption_*): exact shares of the 2^32
 *     flow hashes. ring: arcs between vnodes (a sweep over every vnode of
 *     both tables); maglev: entries, each owning the hashes h with
 *     h % M == i. jump has no arcs: its numbers come from the exact bucket
 *     distribution of the integer jump under a uniform key, computed by
 *     dynamic programming over the buckets (O(buckets^2), up to 8192
 *     buckets; past that 1/buckets per bucket), with each bucket's
 *     acceptance threshold (weights, tombstones) and the rehash cap's
 *     fallback. jump moves only the added / removed backend's flows (jump's
 *     monotonicity; the rehash preserves it), so its disruption is that
 *     backend's share - unless the heaviest weight changed (every threshold
 *     is rescaled) or the order was compacted: then the flows tell.
 *     jtable and hrw tables are Maglev-format: measured like maglev. hrw
 *     also computes rendezvous by its definition (chlb_hrw_direct, every
 *     backend scored for every entry) and reports where the table differs.
 *   measured numbers (flows_*): F random IPv4 TCP flows through
 *     chlb_table_decide(). For jump the balance uses max(F, 2^24) flows.
 *     Sampling noise: about 3 * sqrt(N / F) on balance_max.
 *
 * Load is relative to weight: balance_max = max over live backends of
 * share / (weight / total weight); 1.0 is perfect.
 */
#ifndef CHLB_SIM_H
#define CHLB_SIM_H

#include <stddef.h>
#include "table/build.h"
#include "table/vnodes_auto.h"

#define CHLB_SIM_DEFAULT_FLOWS	  1000000ull
#define CHLB_SIM_MIN_JUMP_SAMPLES (1ull << 24)
#define CHLB_SIM_JUMP_DP_MAX	  8192 /* buckets the exact jump model handles */

struct chlb_sim_opts {
	__u32 algo;		  /* enum chlb_algo or CHLB_ALGO_JTABLE */
	__u32 nbackends;	  /* N */
	__u32 vnodes;		  /* ring: 0 = default */
	__u32 target;		  /* ring: vnodes auto with this balance target, thousandths
				   * (chlb_vnodes_pick on the base set); 0 = vnodes as given */
	__u32 table_size;	  /* maglev: 0 = default */
	__u64 flows;		  /* F; 0 = CHLB_SIM_DEFAULT_FLOWS */
	__u64 samples;		  /* jump balance flows; 0 = max(F, 2^24) */
	__u64 seed;		  /* picks the flows */
	const __u32 *weights;	  /* weights[N]; NULL = all 100 */
	const char *const *names; /* names[N]; NULL = generated (chlb_sim_name) */
};

struct chlb_sim_result {
	__u32 nbackends;
	__u32 removed; /* index of the backend removed for disruption_remove */
	char added_name[CHLB_BE_NAME_LEN];
	char removed_name[CHLB_BE_NAME_LEN];
	double balance_max, balance_min; /* keyspace, relative to weight */
	double disruption_add, disruption_add_ideal;
	double disruption_remove, disruption_remove_ideal;
	double flows_balance_max, flows_balance_min;
	double flows_disruption_add, flows_disruption_remove;
	__u64 flows, samples;
	__u64 table_bytes; /* words * 4 of the base table */
	__u32 table_words;
	double build_ms; /* building the base table */
	int jump_model;	 /* jump keyspace numbers: 1 exact model, 0 1/buckets (too many buckets) */
	double hrw_differ;    /* hrw: keyspace share where the table differs from direct HRW */
	double hrw_direct_ms; /* hrw: computing direct HRW (N scores per entry checked) */
	__u32 hrw_checked;    /* hrw: entries checked (all while M N <= 2^25, else evenly spread) */
	__u32 vnodes;	      /* ring: the K the tables were built with */
	struct chlb_vnodes_pick pick; /* ring with a target: the picker's answer */
};

/* Generated backend i: 10.<i/65536>.<i/256%256>.<i%256>, offset so none ends in .0. */
void chlb_sim_name(__u32 i, char *buf, size_t len);

/* 0, or -errno with a message in err. */
int chlb_sim_run(const struct chlb_sim_opts *o, struct chlb_sim_result *r, char *err,
		 size_t errlen);

#endif /* CHLB_SIM_H */
