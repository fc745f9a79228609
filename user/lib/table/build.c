// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb_table_build(): validation and per-algorithm dispatch to the builders
 * (build_ring.c, build_jump.c, build_maglev.c, build_jtable.c,
 * build_hrw.c); what every
 * table shares is in table.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/build_int.h"

/*
 * Names present, terminated, unique; weights in range; slots not the
 * tombstone. byname[n] gets be[] indices in name order (checking uniqueness
 * sorts them anyway; the ring and maglev builders reuse it).
 */
static int validate(const struct chlb_table_be *be, __u32 n, __u32 *byname, char *err,
		    size_t errlen)
{
	if (n > CHLB_MAX_SVC_BACKENDS)
		return chlb_err(err, errlen, -E2BIG, "%u backends: a service holds at most %u", n,
				CHLB_MAX_SVC_BACKENDS);
	if (n && !be)
		return chlb_err(err, errlen, -EINVAL, "no backend array");
	for (__u32 i = 0; i < n; i++) {
		if (memchr(be[i].name, 0, sizeof(be[i].name)) == NULL || !be[i].name[0])
			return chlb_err(err, errlen, -EINVAL,
					"backend %u: empty or unterminated name", i);
		if (be[i].weight > CHLB_WEIGHT_MAX)
			return chlb_err(err, errlen, -EINVAL, "backend %s: weight %u > %u",
					be[i].name, be[i].weight, CHLB_WEIGHT_MAX);
		if (be[i].slot == CHLB_TOMBSTONE)
			return chlb_err(err, errlen, -EINVAL, "backend %s: slot %#x is reserved",
					be[i].name, be[i].slot);
	}
	build_sort_by_name(be, n, byname);
	for (__u32 i = 1; i < n; i++)
		if (!strcmp(be[byname[i - 1]].name, be[byname[i]].name))
			return chlb_err(err, errlen, -EINVAL, "backend %s listed twice",
					be[byname[i]].name);
	return 0;
}

int chlb_table_build(const struct chlb_table_spec *spec, const struct chlb_table_be *be, __u32 n,
		     struct chlb_table *out, char *err, size_t errlen)
{
	struct chlb_table_hdr *hdr;
	__u32 *byname;
	int rc;

	out->words = NULL;
	out->nwords = 0;
	if (!spec)
		return chlb_err(err, errlen, -EINVAL, "no table spec");
	if (n > CHLB_MAX_SVC_BACKENDS)
		return chlb_err(err, errlen, -E2BIG, "%u backends: a service holds at most %u", n,
				CHLB_MAX_SVC_BACKENDS);
	byname = malloc((n ? n : 1) * sizeof(*byname));
	if (!byname)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	rc = validate(be, n, byname, err, errlen);
	if (rc) {
		free(byname);
		return rc;
	}
	switch (spec->algo) {
	case CHLB_ALGO_RING:
		rc = build_ring(spec, be, n, byname, out, err, errlen);
		break;
	case CHLB_ALGO_JUMP:
		rc = build_jump(spec, be, n, out, err, errlen);
		break;
	case CHLB_ALGO_MAGLEV:
		rc = build_maglev(spec, be, n, byname, out, err, errlen);
		break;
	case CHLB_ALGO_JTABLE:
		rc = build_jtable(spec, be, n, out, err, errlen);
		break;
	case CHLB_ALGO_HRW:
		rc = build_hrw(spec, be, n, out, err, errlen);
		break;
	default:
		rc = chlb_err(err, errlen, -EINVAL, "unknown algorithm %u", spec->algo);
		break;
	}
	free(byname);
	if (rc) {
		chlb_table_free(out);
		return rc;
	}
	hdr = (struct chlb_table_hdr *)out->words;
	hdr->fingerprint = chlb_table_fingerprint(out->words, out->nwords);
	return 0;
}
