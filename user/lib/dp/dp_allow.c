// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Services' source allow-lists in the data plane's allow trie
 * (include/chlb_maps.h, struct chlb_allow_key). One trie serves every
 * service, keyed by (service id, prefix), so a list is changed entry by
 * entry: the caller adds the new prefixes before the view that needs them
 * and prunes the old ones after the view that stops using them, so an
 * allowed source is never dropped in between.
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>

#include "dp/dp_int.h"

static void allow_key(struct chlb_allow_key *k, __u32 id, const struct chlb_allow_pfx *p)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = CHLB_ALLOW_PLEN(p->plen);
	k->svc_id = id;
	memcpy(k->addr, p->addr, 16);
}

static bool listed(const struct chlb_allow_key *k, const struct chlb_allow_pfx *p, __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		struct chlb_allow_key w;

		allow_key(&w, k->svc_id, &p[i]);
		if (!memcmp(&w, k, sizeof(w)))
			return true;
	}
	return false;
}

/* Entries of svc_id not in p[0..n-1], deleted after the walk (a delete would move the cursor). */
static int prune(int fd, __u32 svc_id, const struct chlb_allow_pfx *p, __u32 n)
{
	struct chlb_allow_key key, next, gone[CHLB_ALLOW_MAX * 2];
	void *prev = NULL;
	__u32 ngone = 0;
	int rc = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (next.svc_id == svc_id && !listed(&next, p, n)) {
			if (ngone == sizeof(gone) / sizeof(gone[0]))
				break; /* more than a list holds: the rest at the next call */
			gone[ngone++] = next;
		}
		key = next;
		prev = &key;
	}
	for (__u32 i = 0; i < ngone; i++)
		if (bpf_map_delete_elem(fd, &gone[i]) && errno != ENOENT && !rc)
			rc = -errno;
	return rc;
}

int chlb_dp_set_allow(struct chlb_dp *dp, __u32 svc_id, const struct chlb_allow_pfx *p, __u32 n,
		      bool do_prune)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_ALLOW);
	__u32 one = 1;

	if (fd < 0)
		return -ENOENT;
	if (n > CHLB_ALLOW_MAX || svc_id >= CHLB_MAX_SERVICES)
		return -E2BIG;
	for (__u32 i = 0; i < n; i++) {
		struct chlb_allow_key k;

		allow_key(&k, svc_id, &p[i]);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return -errno;
	}
	return do_prune ? prune(fd, svc_id, p, n) : 0;
}
