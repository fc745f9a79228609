/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The connection table, read for operators: `conns`, the per-backend
 * "conns" of `backend list`, and the table pressure in `stats`. Each is one
 * walk of the table (user/lib/dp/dp_conns.c; its cost: docs/performance.md),
 * during which chlbd's event loop answers nothing else.
 */
#ifndef CHLBD_CONNS_H
#define CHLBD_CONNS_H

#include "chlbd.h"
#include "engine/conn_tally.h"

/*
 * At most this many entries in a `conns list` reply ("truncated": true
 * beyond): ~300 bytes each at worst (IPv6), so the reply stays under
 * ~30 MB, well inside chlbctl's 64 MiB reply limit. The counts always
 * cover the whole table.
 */
#define CHLBD_CONNS_LIST_MAX 100000

/* One walk of the connection table into t (chlb_ct_tally_free() it). 0 or -errno. */
int conns_tally(struct chlb_ct_tally *t);
/* Its two steps: an empty tally of chlbd's state and timeouts, then the walk (t kept on failure). */
int conns_tally_init(struct chlb_ct_tally *t);
int conns_tally_walk(struct chlb_ct_tally *t);

/*
 * `stats`: the table's pressure into o: ct_size, ct_entries, ct_inserts
 * (the ct_insert counter, given), ct_evictions, ct_memory_bytes,
 * ct_bytes_per_entry. Nothing is added when the table can't be read.
 */
void conns_stats(json_object *o, __u64 inserts);

/* `conns [VIP] [backend ADDR] [list]`: the reply text (malloc'd). */
char *view_conns(const struct chlb_cmd *c);

#endif /* CHLBD_CONNS_H */
