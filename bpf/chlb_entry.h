/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One-load reads of a backend record's check word and of an entry's word
 * (include/chlb_maps.h): what stickiness (chlb_stick.h) and client
 * persistence (chlb_persist.h) both trust a backend slot by.
 */
#ifndef CHLB_ENTRY_H
#define CHLB_ENTRY_H

#include "chlb_maps.bpf.h"

/*
 * Slot's record if it is LIVE (and, with want_gen, of generation gen), else
 * NULL; also NULL when it has one of reject_flags (CHLB_BE_F_*). State,
 * flags and generation come from one load of the record's check word
 * (include/chlb_maps.h): never one occupant's state with another's
 * generation. The barrier keeps the record's other fields (address, next
 * hop) from being read before it: userspace writes them before it flips the
 * state to LIVE.
 */
static __always_inline struct chlb_backend *be_check(__u32 slot, bool want_gen, __u32 gen,
						     __u16 reject_flags)
{
	struct chlb_backend *be = bpf_map_lookup_elem(&backends, &slot);
	union {
		__u64 word;
		struct {
			__u8 family, state;
			__u16 flags;
			__u32 gen;
		};
	} c;

	if (!be)
		return NULL;
	c.word = READ_ONCE_U64(&be->check);
	__asm__ volatile("" ::: "memory");
	if (c.state != CHLB_BE_LIVE || (want_gen && c.gen != gen) || (c.flags & reject_flags))
		return NULL;
	return be;
}

static __always_inline struct chlb_backend *be_live(__u32 slot)
{
	return be_check(slot, false, 0, 0);
}

/* An entry's backend, flags and generation: one load (include/chlb_maps.h). */
static __always_inline struct chlb_conn conn_word(const struct chlb_conn *e)
{
	struct chlb_conn c;

	c.word = READ_ONCE_U64(&e->word);
	c.last_ns = 0;
	return c;
}

#endif /* CHLB_ENTRY_H */
