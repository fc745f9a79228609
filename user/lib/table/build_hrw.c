// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hrw: weighted rendezvous (highest random weight) hashing compiled into a
 * Maglev-format table (direct index, entry = h % M), so the data plane
 * looks it up with the Maglev lookup and needs nothing new; the header says
 * CHLB_ALGO_MAGLEV. Entry e holds the rendezvous winner of the key e:
 *
 *   score(b, e) = -ln(1 - u(b, e)) / weight(b), the lowest wins
 *
 * (the exponential form of weighted rendezvous: -w / ln(u) ranks the same
 * way), ties to the lower name. u(b, e) is stratified: backend b ranks the
 * entries by its own Maglev-style permutation, e = offset + j * skip (mod M,
 * M prime), and the entry of rank j gets u = (j + r) / M with r a hash of
 * (b, j) in [0, 1). So every backend's u values over the table are exactly
 * uniform (one per 1/M), which halves the variance of its share, and u grows
 * with j, so b's scores ascend along its permutation.
 *
 * Being rendezvous, the table has its properties exactly: a score depends
 * only on (b, e), so adding a backend moves only the entries it wins, a
 * removal only the entries of the backend removed, a weight change only
 * entries to (raised) or from (lowered) that backend (x / w is monotone in w
 * in IEEE arithmetic), and the table is a function of the set alone (no
 * state, no order). Its shares are binomial around the weight shares:
 * about sqrt(N / 2M) relative spread per backend (docs/algorithms.md).
 *
 * Build, O(M (ln N + 1)) instead of O(M N): with all scores exponential of
 * rate w(b), the best score of an entry exceeds T = ln(N) / sum(w) with
 * probability 1/N. Every backend walks its permutation while its score is
 * below T (about M w(b) T entries, M ln N in all), keeping each entry's best;
 * an entry no walk reached (M / N of them) is scored against every backend.
 * A walked best below T is the true winner: every score below T was seen.
 * chlb_hrw_direct() scores every entry against every backend, O(M N): the
 * definition, which `chlbctl sim` and the tests compare with the table.
 *
 * Determinism: scores use basic IEEE double operations only (ln is the
 * series below, not libm's, whose last bit may differ between versions;
 * the Makefile forbids contracting them into FMAs), so hosts agree.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

/*
 * ln(x) for x in [2^-60, 1]: the exponent from the bits, then 2 atanh(s) of
 * the mantissa by its series (|s| <= 0.172, error ~1e-15). Cost: one division.
 */
static double hrw_ln(double x)
{
	union {
		double d;
		__u64 u;
	} v = { .d = x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1022; /* x = f * 2^e, f in [0.5, 1) */
	double f, s, s2, p;

	v.u = (v.u & ~(0x7ffull << 52)) | (1022ull << 52);
	f = v.d;
	if (f < 0.70710678118654752440) {
		f *= 2;
		e--;
	}
	s = (f - 1) / (f + 1);
	s2 = s * s;
	p = 1.0 / 19;
	p = 1.0 / 17 + s2 * p;
	p = 1.0 / 15 + s2 * p;
	p = 1.0 / 13 + s2 * p;
	p = 1.0 / 11 + s2 * p;
	p = 1.0 / 9 + s2 * p;
	p = 1.0 / 7 + s2 * p;
	p = 1.0 / 5 + s2 * p;
	p = 1.0 / 3 + s2 * p;
	return e * 0.69314718055994530942 + 2 * s + 2 * s * (s2 * p);
}

/* fmix32(crc32c("<name>#<suffix>")), as Maglev's permutations */
static __u32 name_hash(const char *name, const char *suffix)
{
	char buf[CHLB_BE_NAME_LEN + 16];
	size_t len = strnlen(name, CHLB_BE_NAME_LEN - 1), sl = strlen(suffix);

	memcpy(buf, name, len);
	buf[len] = '#';
	memcpy(buf + len + 1, suffix, sl);
	return chlb_fmix32(chlb_crc32c(buf, (__u32)(len + 1 + sl)));
}

/* x^-1 mod m, m prime, 0 < x < m (Fermat) */
static __u32 inv_mod(__u32 x, __u32 m)
{
	__u64 r = 1, b = x;

	for (__u32 k = m - 2; k; k >>= 1) {
		if (k & 1)
			r = r * b % m;
		b = b * b % m;
	}
	return (__u32)r;
}

struct hrw_be {
	__u32 off, skip, inv, seed, slot;
	double w, iw; /* iw = 1 / w: x * iw is monotone in the weight, like x / w */
};

/*
 * G(j) = -ln(1 - j / M), the exponential quantile at the bottom of stratum j
 * (G(M), past the top, is capped at G(M - 1) + 1). g[0..len) caches the
 * low strata, the only ones the walks read; others are computed.
 */
struct hrw_g {
	__u32 m, len;
	double im, *g;
};

static double hrw_g_calc(const struct hrw_g *q, __u32 j)
{
	if (j >= q->m)
		return -hrw_ln((double)1 * q->im) + 1;
	return -hrw_ln((double)(q->m - j) * q->im);
}

static double hrw_g_at(const struct hrw_g *q, __u32 j)
{
	return j < q->len ? q->g[j] : hrw_g_calc(q, j);
}

/*
 * The score of backend h at its own rank j: G interpolated across the
 * stratum by r = a hash of (h, j) in [0, 1), over the weight. Ascends with
 * j (strata) and r, so a backend's scores ascend along its permutation.
 */
static double hrw_score(const struct hrw_be *h, const struct hrw_g *q, __u32 j)
{
	double r =
	    (double)(chlb_fmix64(((__u64)h->seed << 32) | j) >> 11) * (1.0 / 9007199254740992.0);
	double lo = hrw_g_at(q, j), hi = hrw_g_at(q, j + 1);

	return (lo + r * (hi - lo)) * h->iw;
}

/*
 * What entries compare: the score's bits (a positive double orders as its
 * bit pattern) with the low 12 mantissa bits replaced by the backend's
 * index in name order, so the lowest key wins and a tie (scores equal to
 * 2^-40) goes to the lower name. One u64 per entry while building.
 */
#define HRW_IDX_BITS 12
_Static_assert(CHLB_MAX_SVC_BACKENDS <= (1u << HRW_IDX_BITS), "a backend index fits a key");

static __u64 hrw_key(double s, __u32 i)
{
	union {
		double d;
		__u64 u;
	} v = { .d = s };

	return (v.u & ~((1ull << HRW_IDX_BITS) - 1)) | i;
}

static __u32 hrw_rank_of(const struct hrw_be *h, __u32 e, __u32 m)
{
	return (__u32)((__u64)((e + m - h->off) % m) * h->inv % m);
}

/* the live backends of be[], in name order; *live = how many; NULL and 0 when none */
static int hrw_prep(const struct chlb_table_be *be, __u32 n, __u32 m, struct hrw_be **out,
		    __u32 *live)
{
	__u32 *byname = malloc((n ? n : 1) * sizeof(*byname)), k = 0;
	struct hrw_be *h = calloc(n ? n : 1, sizeof(*h));

	*out = NULL;
	*live = 0;
	if (!byname || !h) {
		free(byname);
		free(h);
		return -ENOMEM;
	}
	build_sort_by_name(be, n, byname);
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];

		if (!b->weight)
			continue;
		h[k].off = name_hash(b->name, "hrw-offset") % m;
		h[k].skip = name_hash(b->name, "hrw-skip") % (m - 1) + 1;
		h[k].inv = inv_mod(h[k].skip, m);
		h[k].seed = name_hash(b->name, "hrw-seed");
		h[k].slot = b->slot;
		h[k].w = b->weight;
		h[k].iw = 1.0 / b->weight;
		k++;
	}
	free(byname);
	*out = h;
	*live = k;
	return 0;
}

/* The winner of entry e over every backend: index into h[]. */
static __u32 hrw_direct_one(const struct hrw_be *h, __u32 live, const struct hrw_g *q, __u32 e)
{
	__u64 best = ~0ull;

	for (__u32 i = 0; i < live; i++) {
		__u64 k = hrw_key(hrw_score(&h[i], q, hrw_rank_of(&h[i], e, q->m)), i);

		best = k < best ? k : best;
	}
	return (__u32)(best & ((1ull << HRW_IDX_BITS) - 1));
}

static int check_m(__u32 m, __u32 live, char *err, size_t errlen)
{
	int rc = build_check_m(m, err, errlen);

	if (!rc && live && m <= live)
		rc = chlb_err(err, errlen, -EINVAL,
			      "hrw table size %u: must exceed the %u backends", m, live);
	return rc;
}

int chlb_hrw_direct(const struct chlb_table_be *be, __u32 n, __u32 m, __u32 step, __u32 *slot,
		    char *err, size_t errlen)
{
	struct hrw_g q = { .m = m, .im = 1.0 / m };
	struct hrw_be *h;
	__u32 live;
	int rc;

	rc = build_check_m(m, err, errlen);
	if (rc)
		return rc;
	if (hrw_prep(be, n, m, &h, &live))
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	step = step ? step : 1;
	for (__u32 e = 0, k = 0; e < m; e += step, k++)
		slot[k] = live ? h[hrw_direct_one(h, live, &q, e)].slot : CHLB_TOMBSTONE;
	free(h);
	return 0;
}

int build_hrw(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	      struct chlb_table *out, char *err, size_t errlen)
{
	__u32 m = spec->table_size ? spec->table_size : CHLB_MAGLEV_DEFAULT_M;
	struct hrw_g q = { .m = m, .im = 1.0 / m };
	__u32 live, *entry;
	double wsum = 0, wmax = 0, t, stop;
	__u64 *best = NULL, tkey;
	struct hrw_be *h = NULL;
	int rc;

	rc = build_check_m(m, err, errlen);
	if (rc)
		return rc;
	if (hrw_prep(be, n, m, &h, &live))
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	rc = check_m(m, live, err, errlen);
	if (rc)
		goto out;
	if (!live) {
		rc = build_alloc(out, CHLB_ALGO_MAGLEV, CHLB_TBL_HDR_WORDS, err, errlen);
		goto out;
	}
	for (__u32 i = 0; i < live; i++) {
		wsum += h[i].w;
		wmax = h[i].w > wmax ? h[i].w : wmax;
	}
	/*
	 * T = (ln N + 2) / sum(w): an entry stays unreached with probability
	 * e^-2 / N, and then costs N scores; the walks cost about M (ln N + 2)
	 * cheaper ones. Any T gives the same table; this one only sets the cost.
	 * A walk stops a little past T: computed scores ascend along it up to
	 * rounding (~1e-15), so every score below T has been seen.
	 */
	t = (log((double)live) + 2) / wsum;
	stop = t * (1 + 1e-9);
	/* the strata the walks read: score >= G(j) / w, so j < M (1 - e^(-stop wmax)) + 2 */
	q.len = (__u32)fmin((double)m + 1, ceil(m * -expm1(-stop * wmax)) + 3);
	q.g = malloc((size_t)q.len * sizeof(*q.g));
	best = malloc((size_t)m * sizeof(*best));
	if (!best || !q.g) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (__u32 j = 0; j < q.len; j++)
		q.g[j] = hrw_g_calc(&q, j);
	memset(best, 0xff, (size_t)m * sizeof(*best));
	for (__u32 i = 0; i < live; i++) {
		__u32 e = h[i].off;

		for (__u32 j = 0; j < m; j++) {
			double s = hrw_score(&h[i], &q, j);
			__u64 k;

			if (s >= stop)
				break;
			k = hrw_key(s, i);
			best[e] = k < best[e] ? k : best[e];
			e += h[i].skip; /* both < m <= 2^20: no overflow */
			if (e >= m)
				e -= m;
		}
	}
	rc = build_alloc_direct(out, m, live, &entry, err, errlen);
	if (rc)
		goto out;
	/* a key below T's (index bits 0) has a score below T: every one below was seen */
	tkey = hrw_key(t, 0);
	for (__u32 e = 0; e < m; e++) {
		__u32 w = best[e] < tkey ? (__u32)(best[e] & ((1ull << HRW_IDX_BITS) - 1))
					 : hrw_direct_one(h, live, &q, e); /* not reached below T */

		entry[e] = h[w].slot;
	}
out:
	free(q.g);
	free(best);
	free(h);
	return rc;
}
