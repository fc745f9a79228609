// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* chlb_sim_run(): balance and disruption of one algorithm (method: table/sim.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table/sim.h"
#include "base/err.h"
#include "base/util.h"

#define KEYSPACE 4294967296.0

void chlb_sim_name(__u32 i, char *buf, size_t len)
{
	snprintf(buf, len, "10.%u.%u.%u", i / 62500, (i / 250) % 250, i % 250 + 1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A random IPv4 TCP flow to one VIP: what a client population looks like. */
static __u32 random_flow_crc(__u64 *s)
{
	static const __u8 vip[4] = { 192, 0, 2, 1 };
	struct chlb_flow f;
	__u64 r = chlb_splitmix64(s);

	memset(&f, 0, sizeof(f));
	memcpy(f.src, &r, 4);
	memcpy(f.dst, vip, 4);
	f.sport = (__be16)(r >> 32);
	f.dport = __builtin_bswap16(80);
	f.proto = 6;
	f.family = CHLB_AF_INET;
	return chlb_flow_crc(&f, CHLB_HASH_5TUPLE);
}

/* ---- exact keyspace shares, share[slot] (slots < nslots) ---- */

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Ring: the owner is constant between consecutive vnode hashes of both
 * tables, so evaluating the real lookup at each interval's top end
 * (interval (p[k-1], p[k]]) gives exact shares of either table and the
 * exact moved fraction between them. b may be NULL.
 */
static int ring_sweep(const struct chlb_table *a, const struct chlb_table *b, double *share,
		      __u32 nslots, double *moved)
{
	__u32 na = chlb_table_header(a)->count, nbv = b ? chlb_table_header(b)->count : 0;
	__u32 *pt = malloc(((size_t)na + nbv + 1) * sizeof(*pt)), np, u = 0;
	struct chlb_flat_table fa = { a->words, a->nwords }, fb = { NULL, 0 };
	__u64 prev = 0, mv = 0;

	if (!pt)
		return -ENOMEM;
	if (chlb_ring_vnodes(a, pt, NULL) || (b && chlb_ring_vnodes(b, pt + na, NULL))) {
		free(pt);
		return -EINVAL;
	}
	np = na + nbv;
	if (b)
		fb = (struct chlb_flat_table){ b->words, b->nwords };
	pt[np++] = 0xffffffffu;
	qsort(pt, np, sizeof(*pt), cmp_u32);
	for (__u32 k = 0; k < np; k++)
		if (!u || pt[u - 1] != pt[k])
			pt[u++] = pt[k];
	for (__u32 k = 0; k < u; k++) {
		__u64 len = (__u64)pt[k] + 1 - prev;
		__u32 sa = CHLB_TOMBSTONE, sb = CHLB_TOMBSTONE;

		prev = (__u64)pt[k] + 1;
		if (na && chlb_ring_lookup(&fa, chlb_table_header(a), pt[k], &sa)) {
			free(pt);
			return -EINVAL;
		}
		if (share && sa < nslots)
			share[sa] += len / KEYSPACE;
		if (b) {
			if (nbv && chlb_ring_lookup(&fb, chlb_table_header(b), pt[k], &sb)) {
				free(pt);
				return -EINVAL;
			}
			if (sa != sb)
				mv += len;
		}
	}
	if (moved)
		*moved = mv / KEYSPACE;
	free(pt);
	return 0;
}

/* Maglev: entry i owns the hashes h with h % M == i. */
static double maglev_entry_share(__u32 i, __u32 m)
{
	return ((0xffffffffull - i) / m + 1) / KEYSPACE;
}

static void maglev_shares(const struct chlb_table *a, const struct chlb_table *b, double *share,
			  __u32 nslots, double *moved)
{
	__u32 m = chlb_table_header(a)->count;
	const __u32 *ea = a->words + CHLB_TBL_HDR_WORDS;
	double mv = 0;

	for (__u32 i = 0; i < m; i++) {
		double s = maglev_entry_share(i, m);

		if (share && ea[i] < nslots)
			share[ea[i]] += s;
		if (b) {
			/* the sim builds every table with the same M */
			__u32 sb = chlb_table_header(b)->count == m
				       ? b->words[CHLB_TBL_HDR_WORDS + i]
				       : CHLB_TOMBSTONE;

			if (sb != ea[i])
				mv += s;
		}
	}
	if (moved)
		*moved = mv;
}

/*
 * Jump: P(final bucket = b) for the integer jump of chlb_jump_bucket() with
 * a uniform key. From bucket b the next candidate is floor((b+1)*2^31/r)
 * with r uniform in [1, 2^31], so P(next >= m | b) = min(2^31,
 * floor((b+1)*2^31/m)) / 2^31 exactly; reach[] is a forward DP.
 */
static double jump_ge(__u64 b, __u64 m)
{
	__u64 c = ((b + 1) << 31) / m;

	return (c >= (1ull << 31) ? (double)(1ull << 31) : (double)c) / 2147483648.0;
}

static int jump_bucket_dist(__u32 n, double *p)
{
	double *reach;

	if (n > CHLB_SIM_JUMP_DP_MAX) {
		for (__u32 b = 0; b < n; b++)
			p[b] = 1.0 / n;
		return 0;
	}
	reach = calloc(n, sizeof(*reach));
	if (!reach)
		return -ENOMEM;
	reach[0] = 1.0;
	for (__u32 j = 1; j < n; j++) {
		double s = 0;

		for (__u32 b = 0; b < j; b++)
			s += reach[b] * (jump_ge(b, j) - jump_ge(b, j + 1));
		reach[j] = s;
	}
	for (__u32 b = 0; b < n; b++)
		p[b] = reach[b] * jump_ge(b, n);
	free(reach);
	return 1;
}

/* A jump bucket word's chance to take a flow that lands on it. */
static double jump_accept(__u32 word)
{
	__u32 thr = CHLB_JUMP_WORD_THR(word);

	return thr == CHLB_JUMP_THR_FULL ? 1.0 : thr / (double)(1u << CHLB_JUMP_THR_BITS);
}

/*
 * Every attempt lands on bucket b with p[b] (a rehashed key is a fresh
 * uniform one) and keeps it with accept(b), independently (the acceptance
 * hash is another hash of the key): a flow ends on b with p[b] * accept(b)
 * * (1 - q^R) / (1 - q), q = 1 - sum p * accept, and on the fallback with q^R.
 */
static int jump_shares(const struct chlb_table *t, double *share, __u32 nslots)
{
	const struct chlb_table_hdr *h = chlb_table_header(t);
	const __u32 *bk = t->words + CHLB_TBL_HDR_WORDS;
	double *p, acc = 0, scale;
	int exact;

	if (!h->count)
		return 1;
	p = malloc(h->count * sizeof(*p));
	if (!p)
		return -ENOMEM;
	exact = jump_bucket_dist(h->count, p);
	for (__u32 b = 0; b < h->count; b++)
		acc += p[b] * jump_accept(bk[b]);
	/* up to CHLB_JUMP_MAX_REHASH attempts, then the fallback */
	scale = acc > 0 ? (1 - pow(1 - acc, CHLB_JUMP_MAX_REHASH)) / acc : 0;
	for (__u32 b = 0; b < h->count; b++) {
		__u32 slot = CHLB_JUMP_WORD_SLOT(bk[b]);

		if (CHLB_JUMP_WORD_THR(bk[b]) && slot < nslots)
			share[slot] += p[b] * jump_accept(bk[b]) * scale;
	}
	if (h->fallback < nslots)
		share[h->fallback] += pow(1 - acc, CHLB_JUMP_MAX_REHASH);
	free(p);
	return exact;
}

/* The heaviest weight of a set: jump's threshold scale. */
static __u32 max_weight(const struct chlb_table_be *be, __u32 n)
{
	__u32 w = 0;

	for (__u32 i = 0; i < n; i++)
		w = be[i].weight > w ? be[i].weight : w;
	return w;
}

/* ---- the three tables ---- */

struct sim_set {
	struct chlb_table_be *be;
	__u32 n;
	struct chlb_jump_order order;
	struct chlb_table t;
	int compacted;
};

static int sim_build(const struct chlb_sim_opts *o, struct sim_set *s, char *err, size_t errlen)
{
	struct chlb_table_spec spec = { .algo = o->algo,
					.vnodes = o->vnodes,
					.table_size = o->table_size };
	__u32 *idx = NULL;
	int rc;

	if (o->algo == CHLB_ALGO_JUMP || o->algo == CHLB_ALGO_JTABLE) {
		rc = chlb_jump_order_sync(&s->order, s->be, s->n, err, errlen);
		if (rc < 0)
			return rc;
		s->compacted = rc;
		idx = malloc((s->order.n + 1) * sizeof(*idx));
		if (!idx)
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		rc = chlb_jump_order_map(&s->order, s->be, s->n, idx, err, errlen);
		if (rc) {
			free(idx);
			return rc;
		}
		spec.jump_order = idx;
		spec.jump_nbuckets = s->order.n;
	}
	rc = chlb_table_build(&spec, s->be, s->n, &s->t, err, errlen);
	free(idx);
	return rc;
}

static int shares(const struct chlb_sim_opts *o, const struct chlb_table *t, double *share,
		  __u32 nslots)
{
	memset(share, 0, nslots * sizeof(*share));
	switch (o->algo) {
	case CHLB_ALGO_RING:
		return chlb_ring_shares(t, share, nslots);
	case CHLB_ALGO_MAGLEV:
	case CHLB_ALGO_JTABLE: /* a Maglev-format table */
	case CHLB_ALGO_HRW:
		if (chlb_table_header(t)->count)
			maglev_shares(t, NULL, share, nslots, NULL);
		return 0;
	default:
		return jump_shares(t, share, nslots);
	}
}

static void balance(const struct sim_set *s, const double *share, double *mx, double *mn)
{
	chlb_sim_balance(s->be, s->n, share, mx, mn);
}

static int keyspace_moved(const struct chlb_sim_opts *o, const struct sim_set *a,
			  const struct sim_set *b, const double *share_a, const double *share_b,
			  __u32 changed_slot, int added, double *moved)
{
	switch (o->algo) {
	case CHLB_ALGO_RING:
		return ring_sweep(&a->t, &b->t, NULL, 0, moved);
	case CHLB_ALGO_MAGLEV:
	case CHLB_ALGO_JTABLE:
	case CHLB_ALGO_HRW:
		maglev_shares(&a->t, &b->t, NULL, 0, moved);
		return 0;
	default:
		/*
		 * Reshuffled, or every threshold rescaled, or a bucket appended
		 * below the full threshold (the flows that land on it and are
		 * turned away rehash elsewhere: docs/algorithms.md): only the
		 * flow measurement tells.
		 */
		if (b->compacted || max_weight(a->be, a->n) != max_weight(b->be, b->n) ||
		    (added && b->be[b->n - 1].weight < max_weight(b->be, b->n)))
			return -EAGAIN;
		*moved = added ? share_b[changed_slot] : share_a[changed_slot];
		return 0;
	}
}

static int sim_sets(const struct chlb_sim_opts *o, struct sim_set *base, struct sim_set *add,
		    struct sim_set *rem, struct chlb_sim_result *r, char *err, size_t errlen)
{
	__u32 n = o->nbackends, mid = n / 2, k = n;

	base->be = calloc(n + 1, sizeof(*base->be));
	add->be = calloc(n + 1, sizeof(*add->be));
	rem->be = calloc(n + 1, sizeof(*rem->be));
	if (!base->be || !add->be || !rem->be)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	for (__u32 i = 0; i < n; i++) {
		struct chlb_table_be *b = &base->be[i];

		b->slot = i;
		b->weight = o->weights ? o->weights[i] : CHLB_WEIGHT_DEFAULT;
		if (o->names) {
			if (strlen(o->names[i]) >= sizeof(b->name))
				return chlb_err(err, errlen, -EINVAL, "backend name too long: %s",
						o->names[i]);
			strcpy(b->name, o->names[i]);
		} else {
			chlb_sim_name(i, b->name, sizeof(b->name));
		}
	}
	base->n = n;
	/* the added backend: the next generated name nobody uses yet */
	memcpy(add->be, base->be, n * sizeof(*base->be));
	for (int clash = 1; clash; k++) {
		chlb_sim_name(k, add->be[n].name, sizeof(add->be[n].name));
		clash = 0;
		for (__u32 i = 0; i < n && !clash; i++)
			clash = !strcmp(base->be[i].name, add->be[n].name);
	}
	add->be[n].slot = n;
	add->be[n].weight = CHLB_WEIGHT_DEFAULT;
	add->n = n + 1;
	/* removing from the middle: jump's worst case for naive compaction */
	memcpy(rem->be, base->be, mid * sizeof(*base->be));
	memcpy(rem->be + mid, base->be + mid + 1, (n - mid - 1) * sizeof(*base->be));
	rem->n = n - 1;
	r->removed = mid;
	strcpy(r->added_name, add->be[n].name);
	strcpy(r->removed_name, base->be[mid].name);
	return 0;
}

static void sim_set_free(struct sim_set *s)
{
	chlb_table_free(&s->t);
	chlb_jump_order_free(&s->order);
	free(s->be);
}

/*
 * hrw: the share of the keyspace where the table's entry differs from
 * rendezvous computed by its definition (every backend scored). Every entry
 * while M N <= 2^25 scores; past that every step-th entry (*checked of
 * them), the share then estimated from those.
 */
static int hrw_fidelity(const struct sim_set *s, double *differ, __u32 *checked, double *ms,
			char *err, size_t errlen)
{
	const struct chlb_table_hdr *h = chlb_table_header(&s->t);
	__u32 m = h->count, *direct, step, k = 0;
	double t0 = now_ms(), d = 0, all = 0;
	int rc;

	*differ = 0;
	*checked = 0;
	if (!m)
		return 0;
	step = (__u32)(((__u64)m * s->n + (1u << 25) - 1) >> 25);
	step = step ? step : 1;
	direct = malloc(((size_t)m / step + 1) * sizeof(*direct));
	if (!direct)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	rc = chlb_hrw_direct(s->be, s->n, m, step, direct, err, errlen);
	for (__u32 i = 0; !rc && i < m; i += step, k++) {
		all += maglev_entry_share(i, m);
		if (direct[k] != s->t.words[CHLB_TBL_HDR_WORDS + i])
			d += maglev_entry_share(i, m);
	}
	*differ = all > 0 ? d / all : 0;
	*checked = k;
	*ms = now_ms() - t0;
	free(direct);
	return rc;
}

/* F flows through all three tables; jump's balance takes max(F, samples). */
static int measure_flows(const struct chlb_sim_opts *o, struct sim_set *base, struct sim_set *add,
			 struct sim_set *rem, double *share, __u32 nslots,
			 struct chlb_sim_result *r)
{
	__u64 seed = o->seed, ma = 0, mr = 0, total;
	__u64 *cnt = calloc(nslots, sizeof(*cnt));

	if (!cnt)
		return -ENOMEM;
	total = r->flows > r->samples ? r->flows : r->samples;
	for (__u64 f = 0; f < total; f++) {
		__u32 crc = random_flow_crc(&seed), s0, s1, s2;

		if (chlb_table_decide(&base->t, crc, &s0)) {
			free(cnt);
			return -ENOENT;
		}
		if (s0 < nslots)
			cnt[s0]++;
		if (f >= r->flows)
			continue;
		if (chlb_table_decide(&add->t, crc, &s1) || chlb_table_decide(&rem->t, crc, &s2)) {
			free(cnt);
			return -ENOENT;
		}
		ma += s1 != s0;
		mr += s2 != s0;
	}
	for (__u32 i = 0; i < nslots; i++)
		share[i] = (double)cnt[i] / total;
	balance(base, share, &r->flows_balance_max, &r->flows_balance_min);
	r->flows_disruption_add = (double)ma / r->flows;
	r->flows_disruption_remove = (double)mr / r->flows;
	free(cnt);
	return 0;
}

int chlb_sim_run(const struct chlb_sim_opts *given, struct chlb_sim_result *r, char *err,
		 size_t errlen)
{
	struct chlb_sim_opts opts = *given, *o = &opts; /* o->vnodes: the K picked, with a target */
	struct sim_set base = { 0 }, add = { 0 }, rem = { 0 };
	double *sb = NULL, *sa = NULL, *sr = NULL, t0, wsum = 0;
	__u32 n = o->nbackends, nslots = n + 1;
	int rc;

	memset(r, 0, sizeof(*r));
	if (o->algo != CHLB_ALGO_RING && o->algo != CHLB_ALGO_JUMP && o->algo != CHLB_ALGO_MAGLEV &&
	    o->algo != CHLB_ALGO_JTABLE && o->algo != CHLB_ALGO_HRW)
		return chlb_err(err, errlen, -EINVAL, "unknown algorithm %u", o->algo);
	if (n < 2 || n >= CHLB_MAX_SVC_BACKENDS)
		return chlb_err(err, errlen, -EINVAL, "backends: 2..%u (one is added to the set)",
				CHLB_MAX_SVC_BACKENDS - 1);
	r->nbackends = n;
	r->flows = o->flows ? o->flows : CHLB_SIM_DEFAULT_FLOWS;
	r->samples = r->flows;
	if (o->algo == CHLB_ALGO_JUMP)
		r->samples =
		    o->samples ? o->samples
			       : (r->flows > CHLB_SIM_MIN_JUMP_SAMPLES ? r->flows
								       : CHLB_SIM_MIN_JUMP_SAMPLES);
	rc = sim_sets(o, &base, &add, &rem, r, err, errlen);
	if (rc)
		goto out;
	for (__u32 i = 0; i < n; i++)
		wsum += base.be[i].weight;
	if (base.be[r->removed].weight == 0 || wsum == 0) {
		rc = chlb_err(err, errlen, -EINVAL,
			      "the middle backend %s (or every backend) has weight 0: nothing to "
			      "remove",
			      r->removed_name);
		goto out;
	}
	if (o->algo == CHLB_ALGO_RING && o->target) {
		rc = chlb_vnodes_pick(base.be, n, o->target, &r->pick, err, errlen);
		if (rc)
			goto out;
		o->vnodes = r->pick.vnodes;
	}
	r->vnodes = o->vnodes ? o->vnodes : CHLB_RING_DEFAULT_VNODES;
	t0 = now_ms();
	rc = sim_build(o, &base, err, errlen);
	r->build_ms = now_ms() - t0;
	if (rc)
		goto out;
	/* jump, jtable: the changed sets evolve from the base's bucket order, as chlbd's would */
	if (o->algo == CHLB_ALGO_JUMP || o->algo == CHLB_ALGO_JTABLE) {
		const char **names = malloc((base.order.n + 1) * sizeof(*names));

		if (!names) {
			rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		for (__u32 b = 0; b < base.order.n; b++)
			names[b] = base.order.name[b];
		rc = chlb_jump_order_set(&add.order, names, base.order.n);
		if (!rc)
			rc = chlb_jump_order_set(&rem.order, names, base.order.n);
		free(names);
		if (rc) {
			rc = chlb_syserr(err, errlen, rc, "jump order");
			goto out;
		}
	}
	rc = sim_build(o, &add, err, errlen);
	if (!rc)
		rc = sim_build(o, &rem, err, errlen);
	if (rc)
		goto out;
	r->table_words = base.t.nwords;
	r->table_bytes = (__u64)base.t.nwords * 4;
	r->disruption_add_ideal = CHLB_WEIGHT_DEFAULT / (wsum + CHLB_WEIGHT_DEFAULT);
	r->disruption_remove_ideal = base.be[r->removed].weight / wsum;

	sb = calloc(nslots, sizeof(*sb));
	sa = calloc(nslots, sizeof(*sa));
	sr = calloc(nslots, sizeof(*sr));
	if (!sb || !sa || !sr) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = shares(o, &base.t, sb, nslots)) < 0 || (rc = shares(o, &add.t, sa, nslots)) < 0 ||
	    (rc = shares(o, &rem.t, sr, nslots)) < 0) {
		rc = chlb_syserr(err, errlen, rc, "keyspace shares");
		goto out;
	}
	r->jump_model = o->algo == CHLB_ALGO_JUMP ? rc : 0;
	balance(&base, sb, &r->balance_max, &r->balance_min);

	if (o->algo == CHLB_ALGO_HRW) {
		rc = hrw_fidelity(&base, &r->hrw_differ, &r->hrw_checked, &r->hrw_direct_ms, err,
				  errlen);
		if (rc)
			goto out;
	}
	rc = measure_flows(o, &base, &add, &rem, sr, nslots, r);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc, "a flow found no backend");
		goto out;
	}
	rc = keyspace_moved(o, &base, &add, sb, sa, n, 1, &r->disruption_add);
	if (rc == -EAGAIN)
		r->disruption_add = r->flows_disruption_add;
	else if (rc)
		goto moved_err;
	rc = keyspace_moved(o, &base, &rem, sb, NULL, r->removed, 0, &r->disruption_remove);
	if (rc == -EAGAIN)
		r->disruption_remove = r->flows_disruption_remove;
	else if (rc)
		goto moved_err;
	rc = 0;
	goto out;
moved_err:
	rc = chlb_syserr(err, errlen, rc, "disruption");
out:
	free(sb);
	free(sa);
	free(sr);
	sim_set_free(&base);
	sim_set_free(&add);
	sim_set_free(&rem);
	return rc;
}
