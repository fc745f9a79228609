// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jtable: jump's consistency compiled into a Maglev-format table (direct
 * index, entry = h % M), so the data plane looks it up in O(1) with the
 * Maglev lookup and needs no change. The header says CHLB_ALGO_MAGLEV.
 *
 * Input is a jump bucket order (same persistence and rules as jump: one
 * bucket per backend, numbered by the desired state).
 * T(k), the table for k equal buckets, is defined by induction with exact
 * quotas q_k(b) = floor(M/k) + (b < M mod k):
 *   T(1): every entry belongs to bucket 0;
 *   T(k+1): every bucket b < k hands q_k(b) - q_{k+1}(b) >= 0 of its entries
 *           (the last ones it got) to the new bucket k; nothing else moves.
 * So appending a bucket moves exactly the new bucket's quota, M/(k+1): the
 * ideal, and every bucket holds floor or ceil of M/k entries.
 *
 * Weights and tombstones: each live bucket's quota is Q(b) = M * w(b) / W,
 * rounded by largest remainder (ties: lower bucket), 0 for tombstones and
 * weight 0, and it may hold up to cap(b) = max(Q(b), floor(1.005 M w(b) / W)).
 * A bucket of T(n) holding more than cap(b) keeps the first entries it got
 * and frees the rest; the freed entries are dealt in entry order, each to
 * the first bucket with room (below its cap) along its own weighted jump
 * chain (the lookup's rehash and acceptance, so an entry goes where jump
 * would send it when there is room), the rare leftovers to the lowest
 * buckets with room. The sum of caps is at least M, so every entry finds
 * room, and a bucket never holds more than its cap: shares within 0.5% (or
 * one entry) above the weight share. The slack is what keeps a removal
 * ideal: the live buckets already hold at most ceil(M/n) <= cap, so they
 * give nothing up. Equal weights without tombstones: nothing is freed,
 * T(n) itself.
 *
 * The honest limit: entries dealt are contended (room is first come, first
 * served), so a change that alters many quotas at once (a weight change
 * re-rounds every Q) can move some dealt entries between backends that did
 * not change, beyond the ideal: measured in docs/algorithms.md. Exact
 * quotas and consistency over every change cannot both hold (an entry that
 * never moves unless its owner changes follows a fixed preference list,
 * which gives binomial, not exact, loads), so jtable keeps the balance exact
 * and spends disruption. Use M >= ~500 * N when backends come and go often.
 *
 * Cost: O(M log n + n log n) to build; the table is M words like Maglev.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

/* q_k(b): entries bucket b holds in T(k) */
static __u32 quota(__u32 m, __u32 k, __u32 b)
{
	return m / k + (b < m % k);
}

struct stacks {
	__u32 *pool;  /* every bucket's entries, bucket b at pool[start[b]..] */
	__u64 *start; /* offsets into pool */
	__u32 *len;   /* entries bucket b holds now */
};

/* T(nb) as per-bucket stacks of entry indices. */
static int build_t(struct stacks *s, __u32 m, __u32 nb)
{
	__u64 total = m;
	__u32 p = 0x9e3779b1u % m;

	s->start = calloc(nb, sizeof(*s->start));
	s->len = calloc(nb, sizeof(*s->len));
	if (!s->start || !s->len)
		return -ENOMEM;
	/* bucket k never holds more than it got when it was added: q_{k+1}(k) */
	for (__u32 k = 1; k < nb; k++) {
		s->start[k] = total;
		total += quota(m, k + 1, k);
	}
	s->pool = malloc(total * sizeof(*s->pool));
	if (!s->pool)
		return -ENOMEM;
	/* T(1): a scrambled order, so handed-over blocks are not runs of h % M */
	p = p ? p : 1;
	for (__u32 j = 0; j < m; j++)
		s->pool[j] = (__u32)((__u64)j * p % m);
	s->len[0] = m;
	for (__u32 k = 1; k < nb; k++) {
		__u32 f0 = m / k, r0 = m % k, f1 = m / (k + 1), r1 = m % (k + 1);
		/* same floor: only buckets r1..r0-1 lose their +1; else everyone gives */
		__u32 lo = f0 == f1 ? r1 : 0, hi = f0 == f1 ? r0 : k;

		for (__u32 b = lo; b < hi; b++) {
			__u32 give = quota(m, k, b) - quota(m, k + 1, b);

			while (give--)
				s->pool[s->start[k] + s->len[k]++] =
				    s->pool[s->start[b] + --s->len[b]];
		}
	}
	return 0;
}

struct rank {
	__u64 rem;
	__u32 b;
};

static int by_rem(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;

	if (x->rem != y->rem)
		return x->rem > y->rem ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

/* Q(b): M * w(b) / W by largest remainder, ties to the lower bucket; 0 when dead. */
static int quotas(const struct chlb_table_be *be, const __u32 *order, __u32 m, __u32 nb, __u32 *q)
{
	struct rank *rk = malloc((nb ? nb : 1) * sizeof(*rk));
	__u64 wsum = 0, given = 0;
	__u32 nr = 0;

	if (!rk)
		return -ENOMEM;
	for (__u32 b = 0; b < nb; b++)
		if (order[b] != CHLB_TOMBSTONE)
			wsum += be[order[b]].weight;
	for (__u32 b = 0; b < nb; b++) {
		__u64 w = order[b] == CHLB_TOMBSTONE ? 0 : be[order[b]].weight;

		q[b] = (__u32)(w * m / wsum);
		given += q[b];
		if (w)
			rk[nr++] = (struct rank){ .rem = w * m % wsum, .b = b };
	}
	qsort(rk, nr, sizeof(*rk), by_rem);
	for (__u32 i = 0; given < m && i < nr; i++, given++)
		q[rk[i].b]++;
	free(rk);
	return 0;
}

/*
 * Deals the freed entries (in entry order) to buckets with room[], each
 * along its own weighted jump chain; what finds none goes to the lowest
 * buckets with room. room[] is consumed.
 */
static void deal_pass(const __u8 *freed, __u32 m, __u32 nb, const __u32 *thr, __u32 *room,
		      __u32 *owner, __u8 *placed)
{
	__u32 b = 0;

	for (__u32 e = 0; e < m; e++) {
		__u64 key = chlb_fmix64(((__u64)e << 32) | 0x6a746162u);

		if (!freed[e] || placed[e])
			continue;
		for (int r = 0; r < CHLB_JUMP_MAX_REHASH && !placed[e]; r++) {
			__u32 c = chlb_jump_bucket(key, nb);

			if (room[c] &&
			    (thr[c] == CHLB_JUMP_THR_FULL || chlb_jump_accept_hash(key) < thr[c])) {
				room[c]--;
				owner[e] = c;
				placed[e] = 1;
			}
			key = chlb_fmix64(key + 0x9e3779b97f4a7c15ULL);
		}
	}
	/* rare (a chain of dead, light or full buckets): the lowest buckets with room */
	for (__u32 e = 0; e < m; e++) {
		if (!freed[e] || placed[e])
			continue;
		while (b < nb && !room[b])
			b++;
		if (b == nb)
			return;
		room[b]--;
		owner[e] = b;
		placed[e] = 1;
	}
}

/*
 * Slack taken by some buckets can leave another short of its quota (the
 * entries ran out before its turn): the buckets above their quota hand
 * their last dealt entries (highest entry first) to those more than 0.5%
 * below it, lowest bucket first. So every bucket ends within 0.5% (or one
 * entry) of its quota, either way.
 */
static void repair(const __u8 *freed, __u32 m, __u32 nb, const __u32 *q, __u32 *owner)
{
	__u32 *cnt = calloc(nb, sizeof(*cnt)), b = 0;

	if (!cnt)
		return; /* balance within the slack instead: still a valid table */
	for (__u32 e = 0; e < m; e++)
		cnt[owner[e]]++;
	for (__u32 e = m; e-- > 0;) {
		__u32 o = owner[e];

		/* short by more than the slack (0.5%, as above): exact balance for
		 * light buckets, no churn for heavy ones that are merely rounded */
		while (b < nb && cnt[b] + q[b] / 200 >= q[b])
			b++;
		if (b == nb)
			break;
		if (!freed[e] || cnt[o] <= q[o])
			continue;
		cnt[o]--;
		cnt[b]++;
		owner[e] = b;
	}
	free(cnt);
}

/* Brings every bucket of T(nb) to its quota (policy: file comment). */
static int deal(struct stacks *s, const struct chlb_table_be *be, const __u32 *order, __u32 m,
		__u32 nb, __u32 norm, __u32 *owner)
{
	__u32 *need = calloc(nb, sizeof(*need)), *q = malloc(nb * sizeof(*q)), *thr = NULL;
	__u32 *slack = calloc(nb, sizeof(*slack));
	__u64 wsum = 0, freed_n = 0, need_n = 0, given = 0;
	__u8 *freed = NULL, *placed = NULL;
	int rc = -ENOMEM;

	thr = malloc(nb * sizeof(*thr));
	freed = calloc(m, 1);
	placed = calloc(m, 1);
	if (!need || !q || !thr || !slack || !freed || !placed || quotas(be, order, m, nb, q))
		goto out;
	for (__u32 b = 0; b < nb; b++)
		wsum += order[b] == CHLB_TOMBSTONE ? 0 : be[order[b]].weight;
	for (__u32 b = 0; b < nb; b++) {
		__u64 w = order[b] == CHLB_TOMBSTONE ? 0 : be[order[b]].weight;
		/* cap = max(Q, floor(1.005 * M * w / W)): see the file comment */
		__u32 cap = (__u32)(w * m * 1005 / (wsum * 1000)), keep = s->len[b];

		cap = cap > q[b] ? cap : q[b];
		thr[b] = w ? chlb_jump_threshold((__u32)w, norm) : 0;
		if (keep > cap) {
			/* over its cap: back to its quota, the last entries it got go */
			keep = q[b];
			for (__u32 i = keep; i < s->len[b]; i++)
				freed[s->pool[s->start[b] + i]] = 1;
			freed_n += s->len[b] - keep;
		}
		need[b] = keep < q[b] ? q[b] - keep : 0;
		slack[b] = cap - (keep > q[b] ? keep : q[b]);
		need_n += need[b];
	}
	/*
	 * Room: up to the caps (less contention along the chains, so fewer
	 * entries dealt differently from one table to the next). But when the
	 * buckets kept within their slack leave fewer entries than the quotas
	 * need, room is each need cut in proportion (largest remainder), so no
	 * bucket starves while another fills its slack.
	 */
	if (freed_n < need_n) {
		struct rank *rk = malloc(nb * sizeof(*rk));
		__u32 nr = 0;

		if (!rk)
			goto out;
		for (__u32 b = 0; b < nb; b++) {
			__u64 x = (__u64)need[b] * freed_n;

			need[b] = (__u32)(x / need_n);
			given += need[b];
			if (x % need_n)
				rk[nr++] = (struct rank){ .rem = x % need_n, .b = b };
		}
		qsort(rk, nr, sizeof(*rk), by_rem);
		for (__u32 i = 0; given < freed_n && i < nr; i++, given++)
			need[rk[i].b]++;
		free(rk);
	} else
		for (__u32 b = 0; b < nb; b++)
			need[b] += slack[b]; /* enough for every quota: the slack is room too */
	deal_pass(freed, m, nb, thr, need, owner, placed);
	repair(freed, m, nb, q, owner);
	rc = 0;
out:
	free(placed);
	free(freed);
	free(slack);
	free(thr);
	free(q);
	free(need);
	return rc;
}

int build_jtable(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		 struct chlb_table *out, char *err, size_t errlen)
{
	__u32 m = spec->table_size ? spec->table_size : CHLB_MAGLEV_DEFAULT_M;
	__u32 nb, live, *order = NULL, *owner = NULL, *entry;
	struct stacks s = { 0 };
	int rc;

	rc = build_check_m(m, err, errlen);
	if (rc)
		return rc;
	rc = build_jump_resolve(spec, be, n, &order, &nb, &live, err, errlen);
	if (rc)
		return rc;
	if (!live) {
		rc = build_alloc(out, CHLB_ALGO_MAGLEV, CHLB_TBL_HDR_WORDS, err, errlen);
		goto out;
	}
	if (nb >= m) {
		rc = chlb_err(err, errlen, -EINVAL,
			      "jtable: %u buckets need a table larger than %u", nb, m);
		goto out;
	}
	owner = malloc((size_t)m * sizeof(*owner));
	if (!owner || build_t(&s, m, nb)) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (__u32 b = 0; b < nb; b++)
		for (__u32 i = 0; i < s.len[b]; i++)
			owner[s.pool[s.start[b] + i]] = b;
	if (deal(&s, be, order, m, nb, build_jump_norm(spec, be, order, nb), owner)) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	rc = build_alloc_direct(out, m, live, &entry, err, errlen);
	if (rc)
		goto out;
	for (__u32 i = 0; i < m; i++)
		entry[i] = be[order[owner[i]]].slot;
out:
	free(s.pool);
	free(s.start);
	free(s.len);
	free(owner);
	free(order);
	return rc;
}
