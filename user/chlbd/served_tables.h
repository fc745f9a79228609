/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The tables the data plane serves, cached (served_tables.c): built by this
 * chlbd or adopted from a previous one, with their decision fingerprints.
 */
#ifndef CHLBD_SERVED_TABLES_H
#define CHLBD_SERVED_TABLES_H

#include "chlbd.h"

struct served_table {
	__u32 tslot;		    /* table slot (service id * CHLB_SLOTS_PER_SERVICE + k) */
	const struct chlb_table *t; /* its words; valid until the next request */
	bool adopted;		    /* left pinned by a previous chlbd, not rebuilt yet */
	bool has_fp;		    /* fp is known */
	__u32 fp;		    /* decision fingerprint (table/table_fp.c) */
	char why[CHLB_ERR_MAX];	    /* no words or no fingerprint: why */
};

/*
 * Table slot tslot as the data plane holds it: 0 (out->t set; has_fp when
 * its fingerprint is known, else why), or -errno with why.
 */
int served_table(__u32 tslot, struct served_table *out);
/* The service's current table (its view's first). */
int served_current(const struct chlb_rt_svc *r, struct served_table *out);
/* The view the data plane has for the service now (its tables, its hash fields). 0 or -ENOENT. */
int served_view(const struct chlb_rt_svc *r, struct chlb_service *v);

#endif /* CHLBD_SERVED_TABLES_H */
