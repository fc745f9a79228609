// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Jump builder and bucket-order maintenance (policy: table/build.h).
 *
 * Bucket numbers are part of the desired state and must survive restarts
 * and agree between hosts: jump maps a key to a bucket index, so
 * renumbering buckets (naive compaction after a removal) moves ~50% of
 * flows, and two hosts with different numbers disagree on most flows. A
 * removed backend leaves a tombstone; the lookup rehashes flows that land
 * on one, so exactly the removed backend's flows move, evenly (1.0x ideal).
 * Weights are per-bucket acceptance thresholds (include/chlb_table.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

int build_jump_resolve(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		       __u32 **order_out, __u32 *nb_out, __u32 *live_out, char *err, size_t errlen)
{
	__u32 nb = spec->jump_order ? spec->jump_nbuckets : n, live = 0, *seen, *order;

	if (nb > CHLB_JUMP_MAX_BUCKETS)
		return chlb_err(err, errlen, -E2BIG, "%u jump buckets: at most %u", nb,
				CHLB_JUMP_MAX_BUCKETS);
	order = malloc((nb ? nb : 1) * sizeof(*order));
	seen = calloc(n ? n : 1, sizeof(*seen));
	if (!order || !seen) {
		free(order);
		free(seen);
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	}
	if (spec->jump_order) {
		memcpy(order, spec->jump_order, nb * sizeof(*order));
	} else {
		/* a fresh order: the canonical one, so be[] order never matters */
		build_sort_by_name(be, n, order);
	}
	for (__u32 b = 0; b < nb; b++) {
		__u32 x = order[b];

		if (x == CHLB_TOMBSTONE)
			continue;
		if (x >= n || seen[x]++) {
			int rc = x >= n
				     ? chlb_err(err, errlen, -EINVAL,
						"jump bucket %u names backend %u of %u", b, x, n)
				     : chlb_err(err, errlen, -EINVAL,
						"jump bucket %u: backend %s holds another bucket: "
						"one bucket per backend",
						b, be[x].name);

			free(order);
			free(seen);
			return rc;
		}
		live += be[x].weight > 0;
	}
	free(seen);
	*order_out = order;
	*nb_out = nb;
	*live_out = live;
	return 0;
}

__u32 build_jump_norm(const struct chlb_table_spec *spec, const struct chlb_table_be *be,
		      const __u32 *order, __u32 nb)
{
	__u32 norm = spec->jump_norm;

	for (__u32 b = 0; b < nb; b++)
		if (order[b] != CHLB_TOMBSTONE && be[order[b]].weight > norm)
			norm = be[order[b]].weight;
	return norm;
}

int build_jump(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	       struct chlb_table *out, char *err, size_t errlen)
{
	__u32 nb, live, norm, best = 0, *order, *bucket;
	struct chlb_table_hdr *hdr;
	int rc;

	rc = build_jump_resolve(spec, be, n, &order, &nb, &live, err, errlen);
	if (rc)
		return rc;
	for (__u32 i = 0; i < n; i++)
		if (be[i].slot > CHLB_JUMP_SLOT_MASK) {
			rc = chlb_err(err, errlen, -EINVAL,
				      "backend %s: slot %u does not fit a jump bucket word (< %u)",
				      be[i].name, be[i].slot, CHLB_JUMP_SLOT_MASK + 1);
			goto out;
		}
	/* nothing live: an empty table, not buckets that all rehash into nothing */
	rc = build_alloc(out, CHLB_ALGO_JUMP, CHLB_TBL_HDR_WORDS + (live ? nb : 0), err, errlen);
	if (rc || !live)
		goto out;
	norm = build_jump_norm(spec, be, order, nb);
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->count = nb;
	hdr->nbackends = live;
	bucket = out->words + CHLB_TBL_HDR_WORDS;
	for (__u32 b = 0; b < nb; b++) {
		const struct chlb_table_be *x = order[b] == CHLB_TOMBSTONE ? NULL : &be[order[b]];

		bucket[b] = x ? CHLB_JUMP_WORD(x->slot, chlb_jump_threshold(x->weight, norm))
			      : CHLB_JUMP_TOMBSTONE_WORD;
		/* the fallback: the heaviest, the lowest bucket of it */
		if (x && x->weight > best) {
			best = x->weight;
			hdr->fallback = x->slot;
		}
	}
out:
	free(order);
	return rc;
}

/* ---- bucket order ---- */

static int order_reserve(struct chlb_jump_order *o, __u32 need)
{
	char(*p)[CHLB_BE_NAME_LEN];
	__u32 cap;

	if (need <= o->cap)
		return 0;
	cap = o->cap ? o->cap : 16;
	while (cap < need)
		cap *= 2;
	p = realloc(o->name, (size_t)cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	o->name = p;
	o->cap = cap;
	return 0;
}

void chlb_jump_order_free(struct chlb_jump_order *o)
{
	free(o->name);
	o->name = NULL;
	o->n = o->cap = 0;
}

int chlb_jump_order_set(struct chlb_jump_order *o, const char *const *names, __u32 nbuckets)
{
	if (nbuckets > CHLB_JUMP_MAX_BUCKETS)
		return -E2BIG;
	for (__u32 b = 0; b < nbuckets; b++)
		if (strlen(names[b]) >= CHLB_BE_NAME_LEN)
			return -EINVAL;
	if (order_reserve(o, nbuckets))
		return -ENOMEM;
	for (__u32 b = 0; b < nbuckets; b++)
		strcpy(o->name[b], strcmp(names[b], "-") ? names[b] : "");
	o->n = nbuckets;
	return 0;
}

static const struct chlb_table_be *find_be(const struct chlb_table_be *be, const __u32 *byname,
					   __u32 n, const char *name, __u32 *pos)
{
	__u32 lo = 0, hi = n;

	while (lo < hi) {
		__u32 mid = (lo + hi) / 2;
		int c = strcmp(be[byname[mid]].name, name);

		if (c == 0) {
			*pos = mid;
			return &be[byname[mid]];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int chlb_jump_order_map(const struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			__u32 *idx, char *err, size_t errlen)
{
	__u32 *byname = malloc((n ? n : 1) * sizeof(*byname)), pos;
	int rc = 0;

	if (!byname)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	build_sort_by_name(be, n, byname);
	for (__u32 b = 0; b < o->n && !rc; b++) {
		if (!o->name[b][0])
			idx[b] = CHLB_TOMBSTONE;
		else if (find_be(be, byname, n, o->name[b], &pos))
			idx[b] = byname[pos];
		else
			rc = chlb_err(err, errlen, -EINVAL,
				      "jump bucket %u names unknown backend %s", b, o->name[b]);
	}
	free(byname);
	return rc;
}

__u32 chlb_jump_order_find(const struct chlb_jump_order *o, const char *name)
{
	for (__u32 b = 0; b < o->n; b++)
		if (!strcmp(o->name[b], name))
			return b;
	return CHLB_TOMBSTONE;
}

int chlb_jump_order_sync(struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			 char *err, size_t errlen)
{
	return chlb_jump_order_sync_want(o, be, n, NULL, err, errlen);
}

int chlb_jump_order_sync_want(struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			      const __u32 *want, char *err, size_t errlen)
{
	__u32 *byname = NULL, *at = NULL, nb = o->n, live = 0, tombs = 0, pos, next_tomb = 0;
	__u32 cap = o->n + n + 1, grown_to = CHLB_TOMBSTONE;
	char(*name)[CHLB_BE_NAME_LEN] = NULL;
	bool any_created = false, any_want = false;
	__u8 *created = NULL;
	int rc = 0;

	/* room for every wanted bucket: the order may grow up to the highest */
	for (__u32 i = 0; want && i < n; i++) {
		if (want[i] == CHLB_TOMBSTONE)
			continue;
		if (want[i] >= CHLB_JUMP_MAX_BUCKETS)
			return chlb_err(err, errlen, -E2BIG, "'%u': bucket beyond the last (%u)",
					want[i], CHLB_JUMP_MAX_BUCKETS - 1);
		if (want[i] + 1 + n > cap)
			cap = want[i] + 1 + n;
	}
	if (n > CHLB_JUMP_MAX_BUCKETS)
		return chlb_err(err, errlen, -E2BIG, "%u jump buckets wanted: at most %u", n,
				CHLB_JUMP_MAX_BUCKETS);
	/* work on a copy: on any error o stays as it was */
	byname = malloc((n ? n : 1) * sizeof(*byname));
	at = malloc((n ? n : 1) * sizeof(*at));
	name = malloc((size_t)cap * sizeof(*name));
	created = calloc(cap, 1);
	if (!byname || !at || !name || !created) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (__u32 i = 0; i < n; i++) {
		at[i] = CHLB_TOMBSTONE;
		if (memchr(be[i].name, 0, sizeof(be[i].name)) == NULL || !be[i].name[0]) {
			rc = chlb_err(err, errlen, -EINVAL,
				      "backend %u: empty or unterminated name", i);
			goto out;
		}
	}
	build_sort_by_name(be, n, byname);
	for (__u32 i = 1; i < n; i++)
		if (!strcmp(be[byname[i - 1]].name, be[byname[i]].name)) {
			rc = chlb_err(err, errlen, -EINVAL, "backend %s listed twice",
				      be[byname[i]].name);
			goto out;
		}
	if (nb)
		memcpy(name, o->name, (size_t)nb * sizeof(*name));
	/* gone backends, and second buckets of one backend -> tombstones */
	for (__u32 b = 0; b < nb; b++) {
		if (!name[b][0])
			continue;
		if (find_be(be, byname, n, name[b], &pos) && at[pos] == CHLB_TOMBSTONE) {
			at[pos] = b;
			continue;
		}
		name[b][0] = 0;
		created[b] = 1;
		any_created = true;
	}
	/*
	 * Asked-for buckets: first every mover leaves its bucket (so two
	 * backends may swap), then each takes its own, in name order (so a
	 * clash names the same backend everywhere).
	 */
	for (__u32 r = 0; want && r < n; r++) {
		__u32 w = want[byname[r]];

		if (w == CHLB_TOMBSTONE || at[r] == w)
			continue;
		any_want = true;
		if (at[r] != CHLB_TOMBSTONE) {
			name[at[r]][0] = 0;
			created[at[r]] = 1;
			at[r] = CHLB_TOMBSTONE;
		}
	}
	for (__u32 r = 0; any_want && r < n; r++) {
		__u32 i = byname[r], w = want[i];

		if (w == CHLB_TOMBSTONE || at[r] == w)
			continue;
		if (nb <= w)
			grown_to = w;
		while (nb <= w) {
			name[nb][0] = 0;
			created[nb++] = 0;
		}
		if (name[w][0]) {
			rc = chlb_err(err, errlen, -EINVAL, "'bucket %u': held by %s (for %s)", w,
				      name[w], be[i].name);
			goto out;
		}
		strcpy(name[w], be[i].name);
		created[w] = 0;
		at[r] = w;
	}
	/* backends without a bucket, in name order: lowest tombstone first, else append */
	for (__u32 r = 0; r < n; r++) {
		if (at[r] != CHLB_TOMBSTONE)
			continue;
		while (next_tomb < nb && name[next_tomb][0])
			next_tomb++;
		if (next_tomb == nb) {
			if (nb == CHLB_JUMP_MAX_BUCKETS) {
				rc = chlb_err(err, errlen, -E2BIG,
					      "%s: no jump bucket left (at most %u)",
					      be[byname[r]].name, CHLB_JUMP_MAX_BUCKETS);
				goto out;
			}
			nb++;
		}
		created[next_tomb] = 0;
		strcpy(name[next_tomb], be[byname[r]].name);
		at[r] = next_tomb;
	}
	/* trailing tombstones made by this sync cost nothing to trim */
	while (nb && !name[nb - 1][0] && created[nb - 1])
		nb--;
	for (__u32 b = 0; b < nb; b++) {
		if (name[b][0])
			live++;
		else
			tombs++;
	}
	/*
	 * A bucket asked for past the end may not leave more empty buckets than
	 * held ones: every empty one is a wasted attempt, and past 64 attempts
	 * the fallback takes the flow (`bucket 65535` on a small service would
	 * send nearly every flow there).
	 */
	if (grown_to != CHLB_TOMBSTONE && tombs > live) {
		rc = chlb_err(err, errlen, -EINVAL,
			      "'bucket %u': %u of %u buckets would be empty (at most half may be)",
			      grown_to, tombs, nb);
		goto out;
	}
	if (any_created && !any_want && tombs && 2 * tombs > live) {
		__u32 w = 0;

		for (__u32 b = 0; b < nb; b++)
			if (name[b][0])
				memmove(name[w++], name[b], sizeof(*name));
		nb = w;
		rc = 1;
	}
	if (nb > CHLB_JUMP_MAX_BUCKETS) {
		rc = chlb_err(err, errlen, -E2BIG, "%u jump buckets: at most %u", nb,
			      CHLB_JUMP_MAX_BUCKETS);
		goto out;
	}
	if (order_reserve(o, nb)) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if (nb)
		memcpy(o->name, name, (size_t)nb * sizeof(*name));
	o->n = nb;
out:
	free(created);
	free(name);
	free(at);
	free(byname);
	return rc;
}
