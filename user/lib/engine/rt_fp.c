// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The decision fingerprint of a table the engine serves: its words with
 * every backend slot named by the address the slot holds (rt->be), in the
 * canonical text the builders use (chlb_fmt_addr: inet_ntop), so a table
 * chlbd built and one a previous chlbd left pinned are fingerprinted alike.
 */
#include <errno.h>
#include <stdlib.h>
#include "engine/apply_int.h"
#include "base/err.h"

int chlb_rt_table_fp(const struct chlb_rt *rt, const __u32 *words, __u32 nwords, const __u32 *slots,
		     __u32 nslots, __u32 *fp, char *err, size_t errlen)
{
	char(*text)[CHLB_BE_NAME_LEN] = calloc(CHLB_MAX_BACKENDS, sizeof(*text));
	const char **name = calloc(CHLB_MAX_BACKENDS, sizeof(*name));
	__u32 n = slots ? nslots : CHLB_MAX_BACKENDS;
	int rc;

	if (!text || !name) {
		free(text);
		free(name);
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	}
	for (__u32 i = 0; i < n; i++) {
		__u32 s = slots ? slots[i] : i;

		if (s >= CHLB_MAX_BACKENDS || !rt->be[s].addr.family)
			continue;
		name[s] = chlb_fmt_addr(&rt->be[s].addr, text[s], sizeof(text[s]));
	}
	rc = chlb_table_decision_fp(words, nwords, name, CHLB_MAX_BACKENDS, fp, err, errlen);
	free(text);
	free(name);
	return rc;
}
