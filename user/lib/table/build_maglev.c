// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Maglev builder (Eisenbud et al., NSDI'16, section 3.4). Each live backend
 * walks its own permutation of the M entries, offset + j * skip (mod M), M
 * prime, taking turns and claiming the next free entry of its permutation.
 * Weights are the relative frequency of turns: per round every backend
 * earns its weight in credit and takes a turn per wmax of credit, so entry
 * counts are proportional to weight within one round. Backends take turns
 * in name order, so every host builds the same table whatever order the
 * backends were added in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

static int is_prime(__u32 m)
{
	if (m < 2)
		return 0;
	for (__u32 d = 2; (__u64)d * d <= m; d++)
		if (m % d == 0)
			return 0;
	return 1;
}

int build_check_m(__u32 m, char *err, size_t errlen)
{
	if (m > CHLB_MAGLEV_MAX_M || !is_prime(m))
		return chlb_err(err, errlen, -EINVAL, "maglev table size %u: must be a prime <= %u",
				m, CHLB_MAGLEV_MAX_M);
	return 0;
}

/* fmix32(crc32c("<name>#<suffix>")) */
static __u32 name_hash(const char *name, const char *suffix)
{
	char buf[CHLB_BE_NAME_LEN + 16];
	size_t len = strnlen(name, CHLB_BE_NAME_LEN - 1), sl = strlen(suffix);

	memcpy(buf, name, len);
	buf[len] = '#';
	memcpy(buf + len + 1, suffix, sl);
	return chlb_fmix32(chlb_crc32c(buf, (__u32)(len + 1 + sl)));
}

/* cur = offset + j * skip (mod M) for the j-th turn, kept by addition: no division */
struct perm {
	__u32 cur, skip, slot, weight;
	__u64 credit;
};

int build_maglev(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		 const __u32 *byname, struct chlb_table *out, char *err, size_t errlen)
{
	__u32 m = spec->table_size ? spec->table_size : CHLB_MAGLEV_DEFAULT_M;
	__u32 *entry, live = 0, filled = 0, wmax = 0;
	struct perm *p = NULL;
	__u64 *used = NULL;
	int rc;

	rc = build_check_m(m, err, errlen);
	if (rc)
		return rc;
	for (__u32 i = 0; i < n; i++)
		live += be[i].weight > 0;
	if (live && m <= live)
		return chlb_err(err, errlen, -EINVAL,
				"maglev table size %u: must exceed the %u backends", m, live);
	if (!live)
		return build_alloc(out, CHLB_ALGO_MAGLEV, CHLB_TBL_HDR_WORDS, err, errlen);

	p = calloc(live, sizeof(*p));
	if (!p) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	live = 0;
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *b = &be[byname[r]];

		if (!b->weight)
			continue;
		p[live].cur = name_hash(b->name, "offset") % m;
		p[live].skip = name_hash(b->name, "skip") % (m - 1) + 1;
		p[live].slot = b->slot;
		p[live].weight = b->weight;
		if (b->weight > wmax)
			wmax = b->weight;
		live++;
	}
	/* which entries are taken: m bits (8 KB at the default M) stay in L1 while probing */
	used = calloc((m + 63) / 64, sizeof(*used));
	if (!used) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	rc = build_alloc_direct(out, m, live, &entry, err, errlen);
	if (rc)
		goto out;
	/* the heaviest backend turns every round, so each round fills >= 1 entry */
	while (filled < m) {
		for (__u32 i = 0; i < live && filled < m; i++) {
			struct perm *q = &p[i];
			__u32 c, cur, skip;

			q->credit += q->weight;
			if (q->credit < wmax)
				continue;
			q->credit -= wmax;
			/* M prime, skip in [1, M-1]: the walk visits every entry, so a free one exists */
			cur = q->cur;
			skip = q->skip;
			do {
				c = cur;
				cur += skip; /* both < m <= 2^20: no overflow */
				if (cur >= m)
					cur -= m;
			} while (used[c / 64] & (1ull << (c % 64)));
			q->cur = cur;
			used[c / 64] |= 1ull << (c % 64);
			entry[c] = q->slot;
			filled++;
		}
	}
out:
	free(used);
	free(p);
	return rc;
}
