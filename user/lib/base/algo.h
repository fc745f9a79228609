/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one table of names for a service's options as the grammar, chlbctl
 * (`sim --algo`) and the replies spell them: algorithms, forwarding modes,
 * hash fields. The values are include/chlb_common.h's, plus the
 * builder-only CHLB_ALGO_JTABLE and CHLB_ALGO_HRW.
 */
#ifndef CHLB_BASE_ALGO_H
#define CHLB_BASE_ALGO_H

#include <stdbool.h>
#include <linux/types.h>
#include "chlb_common.h"

/*
 * Builder-only algorithm: a jump bucket order compiled into a Maglev-format
 * table (O(1) direct-index lookup, Maglev's balance, jump's disruption; see
 * table/build_jtable.c). Its tables carry CHLB_ALGO_MAGLEV in the header, so
 * the data plane needs nothing new; the control plane keeps a jump order
 * for it exactly as for jump (chlb_jump_order_*) and passes spec.table_size (M).
 */
#define CHLB_ALGO_JTABLE 4
/*
 * Builder-only algorithm: weighted rendezvous (HRW) hashing compiled into a
 * Maglev-format table (table/build_hrw.c); the header says CHLB_ALGO_MAGLEV.
 * Stateless: the table is a function of the backend set and M alone.
 */
#define CHLB_ALGO_HRW	 5

/* jump and jtable keep a bucket order; maglev, jtable and hrw have a table size M */
static inline bool chlb_algo_has_order(__u8 a)
{
	return a == CHLB_ALGO_JUMP || a == CHLB_ALGO_JTABLE;
}

static inline bool chlb_algo_has_table(__u8 a)
{
	return a == CHLB_ALGO_MAGLEV || a == CHLB_ALGO_JTABLE || a == CHLB_ALGO_HRW;
}

/* The name of a value ("?" when unknown). */
const char *chlb_algo_name(__u8 algo);
const char *chlb_fwd_name(__u8 fwd);
const char *chlb_hash_name(__u8 hash);

/* The value of a name: 0, or -EINVAL when the name is unknown (*out untouched). */
int chlb_algo_parse(const char *name, __u8 *out);
int chlb_fwd_parse(const char *name, __u8 *out);
int chlb_hash_parse(const char *name, __u8 *out);

#endif /* CHLB_BASE_ALGO_H */
