// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * apply.c's data-plane operations, on chlb_dp. Also what a restart needs to
 * read back: pinned views, backends and table headers.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "chlbd.h"
#include "dp/nexthop.h"

static int set_backend(void *ctx, __u32 slot, const struct chlb_backend *be)
{
	return chlb_dp_set_backend(ctx, slot, be);
}

static int write_table(void *ctx, __u32 tslot, const __u32 *w, __u32 n)
{
	return chlb_dp_write_table(ctx, tslot, w, n);
}

static int set_service(void *ctx, const struct chlb_vip_key *k, const struct chlb_service *v)
{
	return chlb_dp_set_service(ctx, k, v);
}

static int del_service(void *ctx, const struct chlb_vip_key *k)
{
	return chlb_dp_del_service(ctx, k);
}

static int reset_stats(void *ctx, __u32 slot)
{
	return chlb_dp_reset_backend_stats(ctx, slot);
}

static int reset_svc_stats(void *ctx, __u32 id)
{
	return chlb_dp_reset_service_stats(ctx, id);
}

static int set_allow(void *ctx, __u32 id, const struct chlb_prefix *p, __u32 n, bool prune)
{
	struct chlb_allow_pfx a[CHLB_ALLOW_MAX];

	if (n > CHLB_ALLOW_MAX)
		return -E2BIG;
	for (__u32 i = 0; i < n; i++) {
		memcpy(a[i].addr, p[i].addr.a, 16);
		a[i].plen = p[i].plen;
	}
	return chlb_dp_set_allow(ctx, id, a, n, prune);
}

static int set_persist(void *ctx, __u32 id, __u32 timeout_s, int family, __u8 plen)
{
	return chlb_dp_set_persist(ctx, id, timeout_s, family, plen);
}

static int flush_persist(void *ctx, __u32 id)
{
	return chlb_dp_persist_flush(ctx, id);
}

static int prealloc(void *ctx, const __u32 *tslot, const __u32 *nwords, __u32 n, __u64 until_ns)
{
	return chlb_dp_prealloc_tables(ctx, tslot, nwords, n, until_ns);
}

/* Next hop from the kernel's tables (in our netns); unresolved: the data plane looks it up. */
static int resolve(void *ctx, struct chlb_backend *be)
{
	struct chlb_nh nh;
	int r = chlb_nh_resolve(be->family == CHLB_AF_INET6 ? AF_INET6 : AF_INET, be->addr, &nh);

	if (r)
		return r;
	memcpy(be->dmac, nh.dmac, 6);
	memcpy(be->smac, nh.smac, 6);
	be->ifindex = nh.ifindex;
	be->flags |= CHLB_BE_F_NH_VALID;
	return 0;
}

static int get_backend(void *ctx, __u32 slot, struct chlb_backend *be)
{
	return chlb_dp_get_backend(ctx, slot, be);
}

static int get_service(void *ctx, const struct chlb_vip_key *k, struct chlb_service *v)
{
	return chlb_dp_get_service(ctx, k, v);
}

/* A table slot's header (the engine adopts a pinned table by it). */
static int get_table_hdr(void *ctx, __u32 tslot, struct chlb_table_hdr *hdr)
{
	return chlb_dp_read_table(ctx, tslot, hdr, NULL);
}

void chlbd_dp_ops(struct chlb_dp *dp, struct chlb_dp_ops *ops, struct chlb_adopt_ops *aops)
{
	*ops = (struct chlb_dp_ops){ .ctx = dp,
				     .set_backend = set_backend,
				     .write_table = write_table,
				     .set_service = set_service,
				     .del_service = del_service,
				     .resolve = resolve,
				     .prealloc = prealloc,
				     .reset_stats = reset_stats,
				     .reset_svc_stats = reset_svc_stats,
				     .set_allow = set_allow,
				     .set_persist = set_persist,
				     .flush_persist = flush_persist };
	*aops = (struct chlb_adopt_ops){ .get_backend = get_backend,
					 .get_service = get_service,
					 .get_table_hdr = get_table_hdr };
}

static bool key_wanted(const struct chlb_state *st, const struct chlb_vip_key *k)
{
	for (__u32 i = 0; i < st->nsvc; i++) {
		struct chlb_vip_key w;

		chlb_vip_to_key(&st->svc[i].vip, &w);
		if (!memcmp(&w, k, sizeof(w)))
			return true;
	}
	return false;
}

/* Views a previous chlbd published for services the state no longer has. */
int chlbd_drop_stale_views(struct chlb_dp *dp, const struct chlb_state *st)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_VIPS), n = 0;
	struct chlb_vip_key key, next, stale[CHLB_MAX_SERVICES];
	void *prev = NULL;

	if (fd < 0)
		return 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!key_wanted(st, &next) && n < CHLB_MAX_SERVICES)
			stale[n++] = next;
		key = next;
		prev = &key;
	}
	for (int i = 0; i < n; i++)
		chlb_dp_del_service(dp, &stale[i]);
	return n;
}
