/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the ring builder's files: build_ring.c (a ring from its
 * backends), build_ring_prev.c (a ring from the previous one) and
 * build_ring_lines.c (writing the lines, used by both).
 */
#ifndef CHLB_BUILD_RING_INT_H
#define CHLB_BUILD_RING_INT_H

#include "table/build_int.h"

/* ring_line reads the pairs of vnodes first .. first + 11, used or not */
#define LINE_READ (CHLB_RING_LINE_HASHES + 2)
#define RING_NONE 0xffffffffu

/* A vnode of a backend the previous ring did not have (ring_from_prev). */
struct added_vnode {
	__u32 hash, rank, replica, slot; /* rank: the backend's place in name order */
};

/*
 * Scratch, kept per thread and grown, never shrunk: fresh arrays per build
 * cost as many page faults as the table itself. The vnodes' hashes in
 * generation order and partitioned {hash, slot} (at most 12 MB, the
 * 1M-vnode limit); vnodes per line; one partition's sorted pairs and its
 * directory.
 */
struct ring_scratch {
	__u32 *hash, *pair, *dir, *per_line;
	__u64 *part;
	__u32 nhash, npair, ndir, nlines, npart; /* capacities */
	/* ring_from_prev: the added vnodes, per-slot marks */
	struct added_vnode *added;
	__u32 nadded;
	__s32 *slot_prev, *slot_rank; /* CHLB_MAX_BACKENDS each, -1 where unused */
	/* ring_patch_prev: the lines it writes, their vnodes, one line's pairs */
	__u32 *touched, *tfirst, *tcount, *vbuf;
	__u32 ntouched, ntfirst, ntcount, nvbuf;
};

extern __thread struct ring_scratch ring_scratch;
extern __thread struct build_ring_stats ring_stats;

/* The table being written: lines, then the spilled vnodes. */
struct ring_out {
	struct chlb_table *t;
	__u32 base, nspill;
};

int ring_grow(void *arrp, __u32 *have, __u32 want, size_t size);
void ring_line(struct ring_out *o, __u32 l, const __u32 *v, __u32 c);
void ring_patch_after(struct ring_out *o, __u32 from, __u32 to, __u32 slot);
__u32 ring_bits(__u32 count, __u32 per);
__u64 ring_vnode_count(__u32 vnodes, __u32 weight);
void ring_put_vnode(__u32 g, __u32 hash, __u32 slot, __u32 lbits);
int ring_alloc(struct ring_out *o, const __u32 *per_line, __u32 lbits, char *err, size_t errlen);
void ring_finish(struct chlb_table *out, __u32 count, __u32 lbits, __u32 live);
int ring_write_sorted(struct chlb_table *out, const __u32 *pair, __u32 count, __u32 lbits,
		      __u32 live, char *err, size_t errlen);
int ring_from_prev(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		   const __u32 *byname, __u32 count, struct chlb_table *out, char *err,
		   size_t errlen);

#endif /* CHLB_BUILD_RING_INT_H */
