// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Jump builder and bucket-order maintenance (policy: table/build.h).
 *
 * Bucket order is order of addition and must survive restarts: jump maps a
 * key to a bucket index, so renumbering buckets (naive compaction after a
 * removal) moves ~50% of flows. A removed backend leaves a tombstone; the
 * lookup rehashes flows that land on one, so exactly the removed backend's
 * flows move, evenly (1.0x ideal).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

int build_jump_resolve(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		       __u32 **order_out, __u32 *nb_out, __u32 *live_out, char *err, size_t errlen)
{
	__u32 nb = 0, live = 0, *seen, *order;

	if (spec->jump_order) {
		nb = spec->jump_nbuckets;
	} else {
		for (__u32 i = 0; i < n; i++)
			nb += chlb_jump_multiplicity(be[i].weight);
	}
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
		for (__u32 b = 0; b < nb; b++) {
			__u32 x = spec->jump_order[b];

			if (x != CHLB_TOMBSTONE && x >= n) {
				free(order);
				free(seen);
				return chlb_err(err, errlen, -EINVAL,
						"jump bucket %u names backend %u of %u", b, x, n);
			}
			/* a drained backend keeps its buckets as tombstones */
			order[b] = (x != CHLB_TOMBSTONE && be[x].weight) ? x : CHLB_TOMBSTONE;
		}
	} else {
		__u32 b = 0;

		for (__u32 i = 0; i < n; i++)
			for (__u32 k = chlb_jump_multiplicity(be[i].weight); k; k--)
				order[b++] = i;
	}
	for (__u32 b = 0; b < nb; b++)
		if (order[b] != CHLB_TOMBSTONE && !seen[order[b]]++)
			live++;
	free(seen);
	*order_out = order;
	*nb_out = nb;
	*live_out = live;
	return 0;
}

int build_jump(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
	       struct chlb_table *out, char *err, size_t errlen)
{
	__u32 nb, live, *order, *bucket;
	struct chlb_table_hdr *hdr;
	int rc;

	rc = build_jump_resolve(spec, be, n, &order, &nb, &live, err, errlen);
	if (rc)
		return rc;
	/* nothing live: an empty table, not buckets that all rehash into nothing */
	rc = build_alloc(out, CHLB_ALGO_JUMP, CHLB_TBL_HDR_WORDS + (live ? nb : 0), err, errlen);
	if (rc || !live)
		goto out;
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->count = nb;
	hdr->nbackends = live;
	bucket = out->words + CHLB_TBL_HDR_WORDS;
	for (__u32 b = 0; b < nb; b++) {
		bucket[b] = order[b] == CHLB_TOMBSTONE ? CHLB_TOMBSTONE : be[order[b]].slot;
		if (hdr->fallback == CHLB_TOMBSTONE)
			hdr->fallback = bucket[b];
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

int chlb_jump_order_sync(struct chlb_jump_order *o, const struct chlb_table_be *be, __u32 n,
			 char *err, size_t errlen)
{
	__u32 *byname = NULL, *have = NULL, nb = o->n, live = 0, tombs = 0, pos, next_tomb = 0;
	char(*name)[CHLB_BE_NAME_LEN] = NULL;
	__u8 *created = NULL;
	__u64 want_total = 0;
	int rc = 0;

	for (__u32 i = 0; i < n; i++)
		want_total += chlb_jump_multiplicity(be[i].weight);
	if (want_total > CHLB_JUMP_MAX_BUCKETS)
		return chlb_err(err, errlen, -E2BIG, "%llu jump buckets wanted: at most %u",
				(unsigned long long)want_total, CHLB_JUMP_MAX_BUCKETS);
	/* work on a copy: on any error o stays as it was */
	byname = malloc((n ? n : 1) * sizeof(*byname));
	have = calloc(n ? n : 1, sizeof(*have));
	name = malloc(((size_t)nb + want_total + 1) * sizeof(*name));
	created = calloc(nb + want_total + 1, 1);
	if (!byname || !have || !name || !created) {
		rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (__u32 i = 0; i < n; i++)
		if (memchr(be[i].name, 0, sizeof(be[i].name)) == NULL || !be[i].name[0]) {
			rc = chlb_err(err, errlen, -EINVAL,
				      "backend %u: empty or unterminated name", i);
			goto out;
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
	/* gone backends -> tombstones; count what the others hold */
	for (__u32 b = 0; b < nb; b++) {
		if (!name[b][0])
			continue;
		if (find_be(be, byname, n, name[b], &pos))
			have[pos]++;
		else
			name[b][0] = 0, created[b] = 1;
	}
	/* too many buckets (weight lowered or drained): tombstone the highest ones */
	for (__u32 b = nb; b-- > 0;) {
		const struct chlb_table_be *x;

		if (!name[b][0])
			continue;
		x = find_be(be, byname, n, name[b], &pos);
		if (have[pos] > chlb_jump_multiplicity(x->weight)) {
			have[pos]--;
			name[b][0] = 0;
			created[b] = 1;
		}
	}
	/* missing buckets, in name order: lowest tombstone first, else append */
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_table_be *x = &be[byname[r]];

		for (__u32 k = have[r]; k < chlb_jump_multiplicity(x->weight); k++) {
			while (next_tomb < nb && name[next_tomb][0])
				next_tomb++;
			if (next_tomb < nb) {
				created[next_tomb] = 0;
				strcpy(name[next_tomb], x->name);
			} else {
				created[nb] = 0;
				strcpy(name[nb++], x->name);
			}
		}
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
	if (tombs && 2 * tombs > live) {
		__u32 w = 0;

		for (__u32 b = 0; b < nb; b++)
			if (name[b][0])
				memmove(name[w++], name[b], sizeof(*name));
		nb = w;
		rc = 1;
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
	free(have);
	free(byname);
	return rc;
}
