// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ring builder. Backend i at weight w gets K = vnodes * w / 100 vnodes
 * (rounded, at least 1 when w > 0) at positions
 * fmix32(crc32c("<name>#<replica>")). Vnodes are sorted by (hash, name,
 * replica): a function of the set alone, so every host and every insertion
 * order gives the same ring, and equal hashes (birthday collisions happen at
 * ~1e5 vnodes) still sort the same way everywhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_int.h"

struct vnode {
	__u32 hash;
	__u32 rank; /* backend's position in name order */
	__u32 replica;
	__u32 slot;
};

static int cmp_vnode(const void *a, const void *b)
{
	const struct vnode *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->replica < y->replica ? -1 : (x->replica > y->replica);
}

static __u32 ring_dir_bits(__u32 count)
{
	__u32 bits = 0;

	/* ceil(log2(count)): about one vnode per directory bucket */
	while (bits < 32 && (1ull << bits) < count)
		bits++;
	if (bits < 1)
		bits = 1;
	if (bits > CHLB_RING_MAX_DIR_BITS)
		bits = CHLB_RING_MAX_DIR_BITS;
	return bits;
}

static __u32 vnode_hash(const char *name, __u32 replica)
{
	char buf[CHLB_BE_NAME_LEN + 16];
	int len = snprintf(buf, sizeof(buf), "%s#%u", name, replica);

	return chlb_fmix32(chlb_crc32c(buf, (__u32)len));
}

int build_ring(const struct chlb_table_spec *spec, const struct chlb_be *be, __u32 n,
	       struct chlb_table *out, char *err, size_t errlen)
{
	__u32 vnodes = spec->vnodes ? spec->vnodes : CHLB_RING_DEFAULT_VNODES;
	__u32 *idx = NULL, count = 0, live = 0, bits, base, d, v;
	struct chlb_table_hdr *hdr;
	struct vnode *vn = NULL;
	__u64 total = 0;
	int rc;

	if (vnodes > CHLB_RING_MAX_VNODES)
		return build_err(err, errlen, -E2BIG, "%u vnodes per backend: at most %u", vnodes,
				 CHLB_RING_MAX_VNODES);
	for (__u32 i = 0; i < n; i++) {
		__u64 k = ((__u64)vnodes * be[i].weight + 50) / 100;

		if (be[i].weight)
			total += k ? k : 1;
	}
	if (total > CHLB_RING_MAX_VNODES)
		return build_err(err, errlen, -E2BIG,
				 "ring of %llu vnodes: at most %u (lower --vnodes or weights)",
				 (unsigned long long)total, CHLB_RING_MAX_VNODES);
	if (total == 0)
		return build_alloc(out, CHLB_ALGO_RING, CHLB_TBL_HDR_WORDS, err, errlen);

	idx = malloc(n * sizeof(*idx));
	vn = malloc(total * sizeof(*vn));
	if (!idx || !vn) {
		rc = build_err(err, errlen, -ENOMEM, "out of memory for %llu vnodes",
			       (unsigned long long)total);
		goto out;
	}
	build_sort_by_name(be, n, idx);
	for (__u32 r = 0; r < n; r++) {
		const struct chlb_be *b = &be[idx[r]];
		__u64 k = ((__u64)vnodes * b->weight + 50) / 100;

		if (!b->weight)
			continue;
		live++;
		for (__u32 rep = 0; rep < (k ? k : 1); rep++)
			vn[count++] = (struct vnode){ vnode_hash(b->name, rep), r, rep, b->slot };
	}
	qsort(vn, count, sizeof(*vn), cmp_vnode);

	bits = ring_dir_bits(count);
	base = chlb_ring_base(bits);
	rc = build_alloc(out, CHLB_ALGO_RING, base + 2 * count, err, errlen);
	if (rc)
		goto out;
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->count = count;
	hdr->dir_bits = bits;
	hdr->nbackends = live;
	/* dir[d] = first vnode with hash >= d << (32 - bits) */
	for (d = 0, v = 0; d < (1u << bits); d++) {
		__u64 lo = (__u64)d << (32 - bits);

		while (v < count && vn[v].hash < lo)
			v++;
		out->words[CHLB_TBL_HDR_WORDS + d] = v;
	}
	out->words[CHLB_TBL_HDR_WORDS + (1u << bits)] = count;
	for (v = 0; v < count; v++) {
		out->words[base + 2 * v] = vn[v].hash;
		out->words[base + 2 * v + 1] = vn[v].slot;
	}
out:
	free(vn);
	free(idx);
	return rc;
}
