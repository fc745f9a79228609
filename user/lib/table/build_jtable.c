// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * jtable: jump's consistency compiled into a Maglev-format table (direct
 * index, entry = h % M), so the data plane looks it up in O(1) with the
 * Maglev lookup and needs no change. The header says CHLB_ALGO_MAGLEV.
 *
 * Input is a jump bucket order (same persistence and rules as jump).
 * T(k), the table for k buckets without tombstones, is defined by induction
 * with exact quotas q_k(b) = floor(M/k) + (b < M mod k):
 *   T(1): every entry belongs to bucket 0;
 *   T(k+1): every bucket b < k hands q_k(b) - q_{k+1}(b) >= 0 of its entries
 *           (the last ones it got) to the new bucket k; nothing else moves.
 * So appending a bucket moves exactly the new bucket's quota, M/(k+1): the
 * ideal, and every bucket holds floor or ceil of M/k entries (Maglev's
 * balance). Refilling a tombstone gives the new backend exactly the entries
 * its bucket has in T(n).
 *
 * Tombstones: the dead buckets' entries of T(n) are dealt to the L live
 * buckets, each of which may grow to cap = max(ceil(M/L), floor(1.005 M/L)).
 * A live bucket holds at most ceil(M/n) <= cap already, so it never gives an
 * entry up, and L * cap >= M, so every dead entry finds room: a removal from
 * a table without tombstones moves only the removed backend's entries
 * (ideal), and balance stays within cap / (M/L). Dead entries are dealt in
 * entry order, each to the first live bucket with room along its own jump
 * rehash chain (jump's tombstone preference).
 *
 * The honest limit: with several tombstones, a further change re-deals all
 * dead entries and some earlier-dealt ones move again (room is contended).
 * Measured at N=1000 over 30 changes (10 tombstones): 1.0x-2.3x ideal per
 * change with M=65537, and 6x at the one change where ceil(M/L) steps up
 * (every bucket gains room at once); with M=655373 (~655 entries per
 * backend, so the 0.5% slack is real room) 1.0x-1.22x throughout. Exact
 * quotas and consistency over every set of removals cannot both hold (an
 * entry that never moves unless its owner dies follows a fixed preference
 * list, which gives binomial, not exact, loads), so jtable keeps the
 * balance exact and spends disruption, and the compaction policy of the
 * jump order bounds how many tombstones build up. Use M >= ~500 * N when
 * backends come and go often.
 *
 * Cost: O(M log n + n) to build; the table is M words like Maglev.
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

/* Deals the dead buckets' entries to the live ones (policy: file comment). */
static int deal(struct stacks *s, const __u32 *order, __u32 m, __u32 nb, __u32 live, __u32 *owner)
{
	__u32 *room = calloc(nb, sizeof(*room)), cap = (m + live - 1) / live, left = 0;
	__u32 slack = (__u32)((__u64)m * 1005 / ((__u64)live * 1000));
	__u32 *leftover = NULL;
	__u64 ndead = 0;

	if (!room)
		return -ENOMEM;
	if (slack > cap)
		cap = slack;
	/* cap = max(ceil(M / L), floor(1.005 M / L)): see the file comment */
	for (__u32 b = 0; b < nb; b++) {
		if (order[b] == CHLB_TOMBSTONE)
			ndead += s->len[b];
		else
			room[b] = cap - s->len[b];
	}
	leftover = malloc((ndead ? ndead : 1) * sizeof(*leftover));
	if (!leftover) {
		free(room);
		return -ENOMEM;
	}
	/* in entry order: one global priority, whichever buckets are dead */
	for (__u32 e = 0; e < m; e++) {
		__u64 key = chlb_fmix64(((__u64)e << 32) | 0x6a746162u);
		int placed = 0;

		if (order[owner[e]] != CHLB_TOMBSTONE)
			continue;
		for (int r = 0; r < CHLB_JUMP_MAX_REHASH && !placed; r++) {
			__u32 c = chlb_jump_bucket(key, nb);

			if (order[c] != CHLB_TOMBSTONE && room[c]) {
				room[c]--;
				owner[e] = c;
				placed = 1;
			}
			key = chlb_fmix64(key + 0x9e3779b97f4a7c15ULL);
		}
		if (!placed)
			leftover[left++] = e;
	}
	/* rare (a chain of 16 dead or full buckets): the lowest buckets with room */
	for (__u32 b = 0, i = 0; b < nb && i < left; b++)
		while (room[b] && i < left) {
			room[b]--;
			owner[leftover[i++]] = b;
		}
	free(leftover);
	free(room);
	return 0;
}

int build_jtable(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		 struct chlb_table *out, char *err, size_t errlen)
{
	__u32 m = spec->table_size ? spec->table_size : CHLB_MAGLEV_DEFAULT_M;
	__u32 nb, live, nlive = 0, *order = NULL, *owner = NULL, *entry;
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
	for (__u32 b = 0; b < nb; b++)
		nlive += order[b] != CHLB_TOMBSTONE;
	owner = malloc((size_t)m * sizeof(*owner));
	if (!owner || build_t(&s, m, nb)) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (__u32 b = 0; b < nb; b++)
		for (__u32 i = 0; i < s.len[b]; i++)
			owner[s.pool[s.start[b] + i]] = b;
	if (nlive < nb && deal(&s, order, m, nb, nlive, owner)) {
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
