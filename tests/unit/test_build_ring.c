// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Ring builder: layout, brute force, ties, determinism, weights, empty sets. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "build_helpers.h"
#include "table/build_int.h"

struct ref_vnode {
	__u32 hash;
	const char *name;
	__u32 replica, slot;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct ref_vnode *x = a, *y = b;
	int c;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->replica < y->replica ? -1 : (x->replica > y->replica);
}

/* The ring, computed independently of build_ring.c: sorted vnode list. */
static struct ref_vnode *ref_ring(const struct chlb_table_be *be, __u32 n, __u32 vnodes,
				  __u32 *count)
{
	struct ref_vnode *v = NULL;
	__u32 c = 0;

	for (__u32 i = 0; i < n; i++) {
		__u32 k = (vnodes * be[i].weight + 50) / 100;

		if (!be[i].weight)
			continue;
		k = k ? k : 1;
		v = realloc(v, (c + k) * sizeof(*v));
		for (__u32 r = 0; r < k; r++) {
			char buf[80];
			int len = snprintf(buf, sizeof(buf), "%s#%u", be[i].name, r);

			v[c++] = (struct ref_vnode){ chlb_fmix32(chlb_crc32c(buf, len)), be[i].name,
						     r, be[i].slot };
		}
	}
	qsort(v, c, sizeof(*v), cmp_ref);
	*count = c;
	return v;
}

/*
 * The builder's lines and spill, word for word, against the plain writer's
 * for the reference ring; and the vnodes read back from them.
 */
static void check_lines(const struct chlb_table *t, const struct ref_vnode *ref, __u32 count)
{
	__u32 bits = t_hdr(t)->dir_bits, *hash = malloc(count * 4), *slot = malloc(count * 4);
	__u32 *w = calloc(chlb_ring_base(bits) + 2 * count, 4), nwords, spills = 0, *gh, *gs;

	for (__u32 i = 0; i < count; i++) {
		hash[i] = ref[i].hash;
		slot[i] = ref[i].slot;
	}
	nwords = t_ring_lines(w, bits, hash, slot, count);
	assert_int_equal(t->nwords, nwords);
	assert_memory_equal(w + CHLB_RING_LINES, t->words + CHLB_RING_LINES,
			    (nwords - CHLB_RING_LINES) * 4);
	for (__u32 d = 0; d < (1u << bits); d++)
		spills += w[CHLB_RING_LINES + (d + 1) * CHLB_RING_LINE_WORDS - 1] >> 16 ==
			  CHLB_RING_LINE_SPILL;
	print_message("# %u vnodes, %u lines, %u spilled, %u words\n", count, 1u << bits, spills,
		      nwords);
	t_vnodes(t, &gh, &gs);
	assert_memory_equal(gh, hash, count * 4);
	assert_memory_equal(gs, slot, count * 4);
	free(gh);
	free(gs);
	free(hash);
	free(slot);
	free(w);
}

static void test_vnode_position_vector(void **state)
{
	struct chlb_table_be be = { .slot = 3, .weight = 1, .name = "10.1.0.7" };
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 100 };
	struct chlb_table t;
	__u32 *hash, *slot;

	/* weight 1 at 100 vnodes: exactly one vnode, replica 0: "10.1.0.7#0" */
	assert_int_equal(chlb_table_build(&spec, &be, 1, &t, NULL, 0), 0);
	assert_int_equal(t_hdr(&t)->count, 1);
	t_vnodes(&t, &hash, &slot);
	assert_int_equal(hash[0], 0x8a402e62u);
	assert_int_equal(slot[0], 3);
	free(hash);
	free(slot);
	chlb_table_free(&t);
}

static void test_layout_and_brute_force(void **state)
{
	__u32 sizes[] = { 1, 2, 7, 100, 333 };
	__u64 seed = 1;

	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		__u32 n = sizes[s], count;
		struct chlb_table_be *be = t_backends(n, 0);
		struct chlb_table t;
		const struct chlb_table_hdr *h;
		struct ref_vnode *ref;
		__u32 bits;

		for (__u32 i = 0; i < n; i++)
			be[i].weight = 50 + t_rand(&seed) % 300;
		t = t_build(CHLB_ALGO_RING, be, n);
		ref = ref_ring(be, n, CHLB_RING_DEFAULT_VNODES, &count);
		h = t_hdr(&t);
		assert_int_equal(h->magic, CHLB_TABLE_MAGIC);
		assert_int_equal(h->algo, CHLB_ALGO_RING);
		assert_int_equal(h->count, count);
		assert_int_equal(h->nbackends, n);
		assert_int_equal(h->words, t.nwords);
		assert_int_equal(h->fingerprint, chlb_table_fingerprint(t.words, t.nwords));
		bits = h->dir_bits;
		assert_true(bits >= 1 && bits <= CHLB_RING_MAX_DIR_BITS);
		/* the fewest lines with at most 5 vnodes per line on average */
		assert_true((5ull << bits) >= count);
		assert_true(bits == 1 || (5ull << (bits - 1)) < count);
		assert_int_equal(chlb_ring_base(bits) % 2, 0);
		check_lines(&t, ref, count);
		for (int k = 0; k < 20000; k++) {
			__u32 crc = (__u32)t_rand(&seed), got, hh = chlb_fmix32(crc),
			      want = ref[0].slot;

			for (__u32 i = 0; i < count; i++)
				if (ref[i].hash >= hh) {
					want = ref[i].slot;
					break;
				}
			assert_int_equal(chlb_table_decide(&t, crc, &got), 0);
			assert_int_equal(got, want);
			if (n > 7 && k > 200)
				break; /* big rings: a few hundred brute-force checks are plenty */
		}
		free(ref);
		free(be);
		chlb_table_free(&t);
	}
}

/*
 * Equal vnode hashes sort by name, then replica, so every host and every
 * insertion order agrees. These two names collide (found by a birthday
 * search; same-length names with digit differences rarely do, CRC being
 * linear): 0x0281b299 for replica 0 of both.
 */
static void test_tie_sorts_by_name(void **state)
{
	struct chlb_table_be be[2] = {
		{ .slot = 1, .weight = 100, .name = "2001:db8::7cb412ab" }, /* check_refs: allow */
		{ .slot = 2, .weight = 100, .name = "2001:db8::2c14f630" }, /* check_refs: allow */
	};
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 1 };
	struct chlb_table_be swapped[2] = { be[1], be[0] };
	struct chlb_table a, b;
	__u32 *hash, *slot, got;
	__u64 seed = 2;

	assert_int_equal(chlb_table_build(&spec, be, 2, &a, NULL, 0), 0);
	assert_int_equal(t_hdr(&a)->count, 2);
	t_vnodes(&a, &hash, &slot);
	assert_int_equal(hash[0], 0x0281b299u);
	assert_int_equal(hash[1], 0x0281b299u);
	assert_int_equal(slot[0], 2); /* the second name sorts first */
	assert_int_equal(slot[1], 1);
	free(hash);
	free(slot);
	/* the first of the equals owns the whole ring */
	for (int k = 0; k < 2000; k++) {
		assert_int_equal(chlb_table_decide(&a, (__u32)t_rand(&seed), &got), 0);
		assert_int_equal(got, 2);
	}
	/* the other insertion order: the same table */
	assert_int_equal(chlb_table_build(&spec, swapped, 2, &b, NULL, 0), 0);
	assert_memory_equal(a.words, b.words, a.nwords * 4);
	chlb_table_free(&a);
	chlb_table_free(&b);
}

/* Big rings: every vnode where the reference puts it; ties (if any) go to the first. */
static void test_ties_are_deterministic(void **state)
{
	struct chlb_table_be *be = t_backends(1000, 0);
	struct chlb_table t = t_build(CHLB_ALGO_RING, be, 1000);
	__u32 count, ties = 0;
	struct ref_vnode *ref = ref_ring(be, 1000, CHLB_RING_DEFAULT_VNODES, &count);

	assert_int_equal(t_hdr(&t)->count, count);
	check_lines(&t, ref, count);
	for (__u32 i = 0; i < count; i++) {
		if (i && ref[i].hash == ref[i - 1].hash) {
			__u32 got;

			ties++;
			/* a flow hashing exactly onto the tie goes to the first of the equals */
			assert_int_equal(
			    chlb_ring_lookup(&(struct chlb_flat_table){ t.words, t.nwords },
					     t_hdr(&t), ref[i].hash, &got),
			    0);
			assert_int_equal(got, ref[i - 1].slot);
		}
	}
	print_message("# %u tied vnode hashes among %u\n", ties, count);
	free(ref);
	free(be);
	chlb_table_free(&t);
}

/* A ring built from the previous one (spec.prev) against one built from nothing. */
static void check_from_prev(struct chlb_table_spec spec, const struct chlb_table_be *be, __u32 n,
			    const struct chlb_table_prev *prev, struct chlb_table *out)
{
	struct chlb_table scratch_built;
	char err[256] = "";

	spec.prev = NULL;
	assert_int_equal(chlb_table_build(&spec, be, n, &scratch_built, err, sizeof(err)), 0);
	spec.prev = prev;
	assert_int_equal(chlb_table_build(&spec, be, n, out, err, sizeof(err)), 0);
	assert_int_equal(out->nwords, scratch_built.nwords);
	assert_memory_equal(out->words, scratch_built.words, (size_t)out->nwords * 4);
	chlb_table_free(&scratch_built);
}

/* check_from_prev for next[0, m), which then becomes the ring t and its list cur[0, *n). */
static void advance(struct chlb_table_spec spec, const struct chlb_table_prev *prev,
		    struct chlb_table_be *cur, const struct chlb_table_be *next, __u32 m,
		    struct chlb_table *t, __u32 *n)
{
	struct chlb_table nt;

	check_from_prev(spec, next, m, prev, &nt);
	chlb_table_free(t);
	*t = nt;
	memcpy(cur, next, m * sizeof(*cur));
	*n = m;
}

/*
 * 200 random changes to a ring of ~300 backends, each built from the
 * previous table: backends leave, join (some taking a slot one that left
 * had), change weight, drain; now and then the vnode factor changes or
 * many join at once (built from nothing then): always the same words as a
 * build from nothing.
 */
static void test_from_prev_is_the_same_table(void **state)
{
	struct chlb_table_be *cur = calloc(600, sizeof(*cur)), *next = calloc(600, sizeof(*next));
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 40 };
	struct chlb_table t, nt;
	__u32 n = 300, fresh = 300, vnodes = 40, freed = ~0u;
	struct build_ring_stats st0, st1;
	__u64 seed = 7;

	for (__u32 i = 0; i < n; i++) {
		snprintf(cur[i].name, sizeof(cur[i].name), "10.8.%u.%u", i / 250, i % 250 + 1);
		cur[i].slot = i;
		cur[i].weight = 100;
	}
	assert_int_equal(chlb_table_build(&spec, cur, n, &t, NULL, 0), 0);
	build_ring_stats(&st0);
	for (int step = 0; step < 200; step++) {
		struct chlb_table_prev prev = { &t, cur, n, vnodes };
		__u32 m = n, op = (__u32)(t_rand(&seed) % 8), i = (__u32)(t_rand(&seed) % n);

		memcpy(next, cur, n * sizeof(*cur));
		if (op == 0 && m > 2) { /* one leaves */
			freed = next[i].slot;
			next[i] = next[--m];
		} else if (op == 1 ||
			   op == 2) { /* one joins, a new slot or the slot of one that left */
			snprintf(next[m].name, sizeof(next[m].name), "10.7.%u.%u", fresh / 250,
				 fresh % 250 + 1);
			next[m].slot = op == 2 && freed != ~0u ? freed : 1000 + fresh;
			freed = ~0u;
			next[m].weight = 100;
			fresh++;
			m++;
		} else if (op == 3) { /* a weight */
			next[i].weight = (__u32)(t_rand(&seed) % 400);
		} else if (op == 4) { /* a drain */
			next[i].weight = 0;
		} else if (op == 5 && step % 50 == 49) { /* the vnode factor */
			vnodes = vnodes == 40 ? 48 : 40;
		} else if (op == 6 && m + 120 < 600) { /* many join: from nothing */
			for (int k = 0; k < 120; k++, m++, fresh++) {
				snprintf(next[m].name, sizeof(next[m].name), "10.7.%u.%u",
					 fresh / 250, fresh % 250 + 1);
				next[m].slot = 1000 + fresh;
				next[m].weight = 100;
			}
		} else if (m > 3) { /* two leave */
			freed = next[i].slot;
			next[i] = next[--m];
			next[0] = next[--m];
		}
		spec.vnodes = vnodes;
		advance(spec, &prev, cur, next, m, &t, &n);
	}
	/* most from the previous table; the factor changes and big joins from nothing */
	build_ring_stats(&st1);
	print_message("# from the previous ring %llu (its changed lines patched %llu), "
		      "from nothing %llu\n",
		      (unsigned long long)(st1.from_prev - st0.from_prev),
		      (unsigned long long)(st1.patched - st0.patched),
		      (unsigned long long)(st1.from_nothing - st0.from_nothing));
	assert_true(st1.from_prev - st0.from_prev >= 150);
	/* patched unless the line count changed (a few hundred vnodes in 64 lines) */
	assert_true(st1.patched - st0.patched >= 100);
	assert_true(st1.from_nothing - st0.from_nothing >= 2);
	/* a previous table that lacks what its list says: built from nothing, the same */
	{
		struct chlb_table_prev wrong = { &t, cur, n, vnodes };

		cur[n] = (struct chlb_table_be){ .slot = 5000, .weight = 100, .name = "10.6.0.1" };
		wrong.n = n + 1;
		check_from_prev(spec, cur, n + 1, &wrong, &nt);
		build_ring_stats(&st0);
		assert_int_equal(st0.from_nothing, st1.from_nothing + 2);
		chlb_table_free(&nt);
	}
	chlb_table_free(&t);
	free(cur);
	free(next);
}

/*
 * The production size: 1,000 backends x 160 vnodes, 32,768 lines of which
 * ~350 spill, so a change touches spilled lines too. 24 changes (a backend
 * leaves, joins on a new or a freed slot, changes weight, drains), each
 * patched from the previous table: the same words as a build from nothing.
 */
static void test_patch_big_ring(void **state)
{
	struct chlb_table_be *cur = calloc(1100, sizeof(*cur)), *next = calloc(1100, sizeof(*next));
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 160 };
	struct build_ring_stats st0, st1;
	__u32 n = 1000, fresh = 0, freed = ~0u;
	struct chlb_table t;
	__u64 seed = 11;

	for (__u32 i = 0; i < n; i++) {
		snprintf(cur[i].name, sizeof(cur[i].name), "10.9.%u.%u", i / 250, i % 250 + 1);
		cur[i].slot = i + 1;
		cur[i].weight = 100;
	}
	assert_int_equal(chlb_table_build(&spec, cur, n, &t, NULL, 0), 0);
	build_ring_stats(&st0);
	for (int step = 0; step < 24; step++) {
		struct chlb_table_prev prev = { &t, cur, n, 160 };
		__u32 m = n, i = (__u32)(t_rand(&seed) % n);

		memcpy(next, cur, n * sizeof(*cur));
		switch (step % 4) {
		case 0: /* one leaves */
			freed = next[i].slot;
			next[i] = next[--m];
			break;
		case 1: /* one joins, on the freed slot every other time */
			snprintf(next[m].name, sizeof(next[m].name), "10.8.%u.%u", fresh / 250,
				 fresh % 250 + 1);
			next[m].slot = step % 8 == 1 ? freed : 2000 + fresh;
			next[m].weight = 100;
			fresh++;
			m++;
			break;
		case 2: /* a weight */
			next[i].weight = 50 + (__u32)(t_rand(&seed) % 100);
			break;
		default: /* a drain */
			next[i].weight = 0;
		}
		advance(spec, &prev, cur, next, m, &t, &n);
	}
	build_ring_stats(&st1);
	assert_int_equal(st1.patched - st0.patched, 24);
	chlb_table_free(&t);
	free(cur);
	free(next);
}

/*
 * Equal hashes from the previous ring and from an added backend sort by
 * name as a build from nothing sorts them (the pair of test_tie_sorts_by_name),
 * whichever of the two was there first.
 */
static void test_from_prev_ties(void **state)
{
	struct chlb_table_be be[4] = {
		{ .slot = 1, .weight = 100, .name = "2001:db8::7cb412ab" }, /* check_refs: allow */
		{ .slot = 3, .weight = 100, .name = "10.1.0.1" },
		{ .slot = 4, .weight = 100, .name = "10.1.0.2" },
		{ .slot = 2, .weight = 100, .name = "2001:db8::2c14f630" }, /* check_refs: allow */
	};
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 1 };

	for (int first = 0; first < 2; first++) {
		/* the ring without one of the pair, then with it */
		struct chlb_table_be without[3] = { be[first ? 3 : 0], be[1], be[2] };
		struct chlb_table_prev prev = { NULL, without, 3, 1 };
		struct chlb_table t, nt;
		__u32 *hash, *slot;

		assert_int_equal(chlb_table_build(&spec, without, 3, &t, NULL, 0), 0);
		prev.t = &t;
		struct build_ring_stats st0, st1;

		build_ring_stats(&st0);
		check_from_prev(spec, be, 4, &prev, &nt);
		build_ring_stats(&st1);
		assert_int_equal(st1.from_prev, st0.from_prev + 1);
		t_vnodes(&nt, &hash, &slot);
		for (__u32 v = 1; v < 4; v++)
			if (hash[v] == 0x0281b299u) /* the second name of the pair sorts first */
				assert_true(slot[v - 1] == 2 && slot[v] == 1);
		free(hash);
		free(slot);
		chlb_table_free(&t);
		chlb_table_free(&nt);
	}
}

/*
 * The fingerprint's CRC (build_crc32c_update: three streams at once over
 * 12 KiB blocks, combined) equals the one-byte-at-a-time table CRC, for
 * every length around the block sizes and from any start state.
 */
static void test_fingerprint_crc_streams(void **state)
{
	size_t max = 3 * 3 * 4096 + 100;
	__u8 *buf = malloc(max);
	__u64 seed = 11;

	assert_non_null(buf);
	for (size_t i = 0; i < max; i++)
		buf[i] = (__u8)t_rand(&seed);
	for (size_t len = 0; len <= max; len += len < 64 || (len % 12288) > 12200 ? 1 : 997) {
		__u32 init = (__u32)t_rand(&seed);

		assert_int_equal(build_crc32c_update(init, buf, len),
				 chlb_crc32c_update(init, buf, (__u32)len));
	}
	free(buf);
}

static void test_insertion_order_independent(void **state)
{
	struct chlb_table_be *be = t_backends(200, 0);
	struct chlb_table a, b;
	__u64 seed = 99;

	for (__u32 i = 0; i < 200; i++)
		be[i].weight = t_rand(&seed) % 4 * 100; /* some drained */
	a = t_build(CHLB_ALGO_RING, be, 200);
	for (int round = 0; round < 5; round++) {
		t_shuffle(be, 200, &seed);
		b = t_build(CHLB_ALGO_RING, be, 200);
		assert_int_equal(a.nwords, b.nwords);
		assert_memory_equal(a.words, b.words, a.nwords * 4);
		chlb_table_free(&b);
	}
	chlb_table_free(&a);
	free(be);
}

static void test_weights_scale_vnodes_and_share(void **state)
{
	struct chlb_table_be *be = t_backends(4, 0);
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING, .vnodes = 1000 };
	__u32 cnt[4] = { 0 }, count = 0, got, *hash, *slot;
	struct chlb_table t;
	__u64 seed = 4, hits[4] = { 0 };

	be[0].weight = 100;
	be[1].weight = 300;
	be[2].weight = 0;
	be[3].weight = 50;
	assert_int_equal(chlb_table_build(&spec, be, 4, &t, NULL, 0), 0);
	count = t_hdr(&t)->count;
	t_vnodes(&t, &hash, &slot);
	assert_int_equal(count, 1000 + 3000 + 500);
	assert_int_equal(t_hdr(&t)->nbackends, 3);
	for (__u32 i = 0; i < count; i++)
		cnt[slot[i] - 1000]++;
	free(hash);
	free(slot);
	assert_int_equal(cnt[0], 1000);
	assert_int_equal(cnt[1], 3000);
	assert_int_equal(cnt[2], 0);
	assert_int_equal(cnt[3], 500);
	for (int k = 0; k < 200000; k++) {
		assert_int_equal(chlb_table_decide(&t, (__u32)t_rand(&seed), &got), 0);
		hits[got - 1000]++;
	}
	/* 1000 vnodes per unit: shares within a few % of 2/9, 6/9, 0, 1/9 */
	assert_true(hits[2] == 0);
	assert_true(hits[0] > 200000 * 2 / 9 * 0.93 && hits[0] < 200000 * 2 / 9 * 1.07);
	assert_true(hits[1] > 200000 * 6 / 9 * 0.97 && hits[1] < 200000 * 6 / 9 * 1.03);
	assert_true(hits[3] > 200000 * 1 / 9 * 0.9 && hits[3] < 200000 * 1 / 9 * 1.1);
	chlb_table_free(&t);
	free(be);
}

static void test_empty_and_drained(void **state)
{
	struct chlb_table_be *be = t_backends(3, 0);
	struct chlb_table t;
	__u32 got = 12345;

	t = t_build(CHLB_ALGO_RING, be, 0);
	assert_int_equal(t_hdr(&t)->count, 0);
	assert_int_equal(t.nwords, CHLB_TBL_HDR_WORDS);
	assert_int_equal(chlb_table_decide(&t, 1, &got), -ENOENT);
	assert_int_equal(got, 12345);
	chlb_table_free(&t);
	for (int i = 0; i < 3; i++)
		be[i].weight = 0;
	t = t_build(CHLB_ALGO_RING, be, 3);
	assert_int_equal(chlb_table_decide(&t, 1, &got), -ENOENT);
	chlb_table_free(&t);
	free(be);
}

static void test_single_backend_takes_everything(void **state)
{
	struct chlb_table_be *be = t_backends(1, 0);
	struct chlb_table t = t_build(CHLB_ALGO_RING, be, 1);
	__u64 seed = 8;
	__u32 got;

	for (int k = 0; k < 5000; k++) {
		assert_int_equal(chlb_table_decide(&t, (__u32)t_rand(&seed), &got), 0);
		assert_int_equal(got, be[0].slot);
	}
	chlb_table_free(&t);
	free(be);
}

static void test_rejects_bad_input(void **state)
{
	struct chlb_table_be *be = t_backends(3, 0);
	struct chlb_table_spec spec = { .algo = CHLB_ALGO_RING };
	struct chlb_table t;
	char err[256];

	strcpy(be[2].name, be[0].name);
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "listed twice"));
	assert_null(t.words);
	strcpy(be[2].name, "10.9.0.99");
	be[1].weight = CHLB_WEIGHT_MAX + 1;
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "weight"));
	be[1].weight = 100;
	be[1].name[0] = 0;
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -EINVAL);
	strcpy(be[1].name, "10.9.0.98");
	spec.vnodes = CHLB_RING_MAX_VNODES;
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -E2BIG);
	spec.algo = 77;
	assert_int_equal(chlb_table_build(&spec, be, 3, &t, err, sizeof(err)), -EINVAL);
	free(be);
}

static void test_fingerprint_tracks_content(void **state)
{
	struct chlb_table_be *be = t_backends(10, 0);
	struct chlb_table a = t_build(CHLB_ALGO_RING, be, 10), b;

	be[4].weight = 101;
	b = t_build(CHLB_ALGO_RING, be, 10);
	assert_int_not_equal(t_hdr(&a)->fingerprint, t_hdr(&b)->fingerprint);
	chlb_table_free(&b);
	be[4].weight = 100;
	b = t_build(CHLB_ALGO_RING, be, 10);
	assert_int_equal(t_hdr(&a)->fingerprint, t_hdr(&b)->fingerprint);
	/* a corrupted table is refused by decide, not misread */
	b.words[0] ^= 1;
	assert_int_equal(chlb_table_decide(&b, 5, &(__u32){ 0 }), -EINVAL);
	chlb_table_free(&a);
	chlb_table_free(&b);
	free(be);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vnode_position_vector),
		cmocka_unit_test(test_layout_and_brute_force),
		cmocka_unit_test(test_tie_sorts_by_name),
		cmocka_unit_test(test_ties_are_deterministic),
		cmocka_unit_test(test_from_prev_is_the_same_table),
		cmocka_unit_test(test_from_prev_ties),
		cmocka_unit_test(test_patch_big_ring),
		cmocka_unit_test(test_fingerprint_crc_streams),
		cmocka_unit_test(test_insertion_order_independent),
		cmocka_unit_test(test_weights_scale_vnodes_and_share),
		cmocka_unit_test(test_empty_and_drained),
		cmocka_unit_test(test_single_backend_takes_everything),
		cmocka_unit_test(test_rejects_bad_input),
		cmocka_unit_test(test_fingerprint_tracks_content),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
