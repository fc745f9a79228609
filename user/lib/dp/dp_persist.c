// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Client persistence in the data plane (include/chlb_maps.h, struct
 * chlb_persist_cfg; bpf/chlb_persist.h): a service's timeout and netmask
 * in persist_cfg, and the affinity entries of the persist map, read for
 * `which` and `conns --persist` and flushed when a service id is freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "dp/dp_int.h"

void chlb_persist_mask(__u8 *addr, int family, __u8 plen)
{
	int bytes = family == CHLB_AF_INET ? 4 : 16;

	for (int i = 0; i < 16; i++) {
		int bits = (int)plen - 8 * i;

		if (i >= bytes || bits <= 0)
			addr[i] = 0;
		else if (bits < 8)
			addr[i] &= (__u8)(0xff << (8 - bits));
	}
}

int chlb_dp_set_persist(struct chlb_dp *dp, __u32 svc_id, __u32 timeout_s, int family, __u8 plen)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_PERSIST_CFG);
	struct chlb_persist_cfg c = { .timeout_ns = (__u64)timeout_s * 1000000000ull };

	if (fd < 0)
		return -ENOENT;
	if (svc_id >= CHLB_MAX_SERVICES)
		return -E2BIG;
	memset(c.mask, 0xff, sizeof(c.mask));
	chlb_persist_mask((__u8 *)c.mask, family, plen);
	return bpf_map_update_elem(fd, &svc_id, &c, BPF_ANY) ? -errno : 0;
}

int chlb_dp_persist_lookup(struct chlb_dp *dp, const struct chlb_persist_key *key,
			   struct chlb_conn *out)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_PERSIST);

	if (fd < 0)
		return -ENOENT;
	return bpf_map_lookup_elem(fd, key, out) ? -errno : 0;
}

int chlb_dp_persist_foreach(struct chlb_dp *dp,
			    int (*fn)(const struct chlb_persist_key *, const struct chlb_conn *,
				      void *),
			    void *ctx)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_PERSIST), rc;
	struct chlb_persist_key key, next;
	struct chlb_conn c;
	void *prev = NULL;

	if (fd < 0)
		return -ENOENT;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &c))
			continue; /* evicted since: gone */
		rc = fn(&key, &c, ctx);
		if (rc)
			return rc;
	}
	return 0;
}

/* Collects one service id's keys; deleted after the walk (a delete would move the cursor). */
struct flush {
	__u32 id, n, cap;
	struct chlb_persist_key *keys;
};

static int flush_cb(const struct chlb_persist_key *k, const struct chlb_conn *c, void *ctx)
{
	struct flush *f = ctx;

	(void)c;
	if (k->svc_id != f->id)
		return 0;
	if (f->n == f->cap) {
		__u32 cap = f->cap ? f->cap * 2 : 256;
		struct chlb_persist_key *nk = realloc(f->keys, cap * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		f->keys = nk;
		f->cap = cap;
	}
	f->keys[f->n++] = *k;
	return 0;
}

int chlb_dp_persist_flush(struct chlb_dp *dp, __u32 svc_id)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_PERSIST), rc;
	struct flush f = { .id = svc_id };

	if (fd < 0)
		return -ENOENT;
	rc = chlb_dp_persist_foreach(dp, flush_cb, &f);
	for (__u32 i = 0; i < f.n; i++)
		if (bpf_map_delete_elem(fd, &f.keys[i]) && errno != ENOENT && !rc)
			rc = -errno;
	free(f.keys);
	return rc;
}
