// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Dry-run keyspace diff (see plan.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "plan.h"

/* Backends of both sides get pseudo slots: their index in this list. */
struct names {
	char (*name)[CHLB_BE_NAME_LEN];
	__u32 n;
};

static __u32 name_slot(struct names *ns, const char *name)
{
	for (__u32 i = 0; i < ns->n; i++)
		if (!strcmp(ns->name[i], name))
			return i;
	snprintf(ns->name[ns->n], CHLB_BE_NAME_LEN, "%s", name);
	return ns->n++;
}

static int build(const struct chlb_svc_cfg *s, struct names *ns, struct chlb_table *t)
{
	struct chlb_be *be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	char err[CHLB_ERR_MAX];
	int r;

	if (!be)
		return -1;
	for (__u32 i = 0; i < s->nbe; i++)
		be[i].slot = name_slot(ns, s->be[i].name);
	r = chlb_svc_build(s, be, t, err, sizeof(err));
	free(be);
	return r;
}

static __u32 splitmix32(__u64 *x)
{
	__u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (__u32)(z ^ (z >> 31));
}

/*
 * A random flow to the VIP: random client address and port, the VIP's
 * port (a random one for a port-0 service). Only whole flows can be hashed
 * on two sets of fields; a flow hash alone is bound to one.
 */
static void sample_flow(const struct chlb_vip *vip, __u64 *seed, struct chlb_flow *f)
{
	__u32 r;

	memset(f, 0, sizeof(*f));
	f->family = vip->addr.family;
	f->proto = vip->proto;
	memcpy(f->dst, vip->addr.a, 16);
	for (int i = 0; i < (f->family == CHLB_AF_INET6 ? 16 : 4); i += 4) {
		r = splitmix32(seed);
		memcpy(f->src + i, &r, 4);
	}
	r = splitmix32(seed);
	f->sport = htons((__u16)(1024 + (r & 0xffff) % 64512));
	f->dport = htons(vip->port ? vip->port : (__u16)(r >> 16));
}

/*
 * What a change does to flows already running, as the data plane treats
 * them (bpf/chlb_stick.h): every established TCP connection has a
 * connection entry, found by its 5-tuple, and keeps its backend while the
 * backend stays in the service (draining included); an entry-less UDP flow
 * gets one on its first packet after a change, but is decided by its hash,
 * which new hash fields change.
 */
static json_object *established(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *n,
				bool rehash)
{
	char buf[512];
	int len, nrem = 0;

	if (o->vip.proto == IPPROTO_UDP && rehash)
		len = snprintf(buf, sizeof(buf),
			       "UDP flows without a connection entry move like new flows "
			       "(the new hash fields re-key them)");
	else if (o->vip.proto == IPPROTO_UDP)
		len = snprintf(buf, sizeof(buf),
			       "active UDP flows keep their backends (an entry is written on their "
			       "first packet after the change) until idle for the UDP timeout");
	else
		len = snprintf(buf, sizeof(buf),
			       "established connections keep their connection entries and their "
			       "backends");
	for (__u32 i = 0; i < o->nbe; i++) {
		if (chlb_svc_find_be(n, &o->be[i].addr))
			continue;
		if (nrem < 3 && len > 0 && (size_t)len < sizeof(buf))
			len +=
			    snprintf(buf + len, sizeof(buf) - len, "%s%s",
				     nrem ? ", " : "; those of removed backends (", o->be[i].name);
		nrem++;
	}
	if (nrem && len > 0 && (size_t)len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "%s) are decided again",
			 nrem > 3 ? " and more" : "");
	return json_object_new_string(buf);
}

static json_object *diff_svc(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *n)
{
	struct chlb_table to = { 0 }, tn = { 0 };
	struct names ns = { 0 };
	json_object *j = json_object_new_object(), *arr = json_object_new_array();
	__u32 total = (o ? o->nbe : 0) + (n ? n->nbe : 0), moved = 0;
	__u32 *before = NULL, *after = NULL;
	char vip[CHLB_ADDRSTR];
	__u64 seed = 1;
	/* new hash fields: every flow gets another hash, so sample flows, not hashes */
	bool rehash = o && n && o->hash != n->hash;

	chlb_fmt_vip(o ? &o->vip : &n->vip, vip, sizeof(vip));
	json_object_object_add(j, "service", json_object_new_string(vip));
	json_object_object_add(j, "action",
			       json_object_new_string(!o   ? "add"
						      : !n ? "delete"
							   : "change"));
	ns.name = calloc(total + 1, sizeof(*ns.name));
	before = calloc(total + 2, sizeof(*before));
	after = calloc(total + 2, sizeof(*after));
	if (!ns.name || !before || !after || (o && build(o, &ns, &to)) || (n && build(n, &ns, &tn)))
		goto out;
	for (__u32 i = 0; i < CHLB_PLAN_SAMPLES; i++) {
		__u32 ca, cb, a = total, b = total;

		if (rehash) {
			struct chlb_flow f;

			sample_flow(&n->vip, &seed, &f);
			ca = chlb_flow_crc(&f, o->hash);
			cb = chlb_flow_crc(&f, n->hash);
		} else {
			ca = cb = splitmix32(&seed);
		}
		if (o && chlb_table_decide(&to, ca, &a))
			a = total;
		if (n && chlb_table_decide(&tn, cb, &b))
			b = total;
		before[a]++;
		after[b]++;
		moved += a != b;
	}
	json_object_object_add(j, "moved",
			       json_object_new_double((double)moved / CHLB_PLAN_SAMPLES));
	/* what "moved" is a share of: flow hashes, or (hash change) sampled flows */
	json_object_object_add(j, "basis", json_object_new_string(rehash ? "flows" : "keyspace"));
	if (rehash) {
		json_object_object_add(j, "hash_from",
				       json_object_new_string(chlb_hash_name(o->hash)));
		json_object_object_add(j, "hash_to",
				       json_object_new_string(chlb_hash_name(n->hash)));
	}
	if (o && n && o->nbe) /* a service without backends has nothing running */
		json_object_object_add(j, "established", established(o, n, rehash));
	for (__u32 i = 0; i < ns.n; i++) {
		json_object *b = json_object_new_object();

		json_object_object_add(b, "address", json_object_new_string(ns.name[i]));
		json_object_object_add(
		    b, "before", json_object_new_double((double)before[i] / CHLB_PLAN_SAMPLES));
		json_object_object_add(
		    b, "after", json_object_new_double((double)after[i] / CHLB_PLAN_SAMPLES));
		json_object_array_add(arr, b);
	}
	json_object_object_add(j, "backends", arr);
	arr = NULL;
	json_object_object_add(j, "no_backend_after",
			       json_object_new_double((double)after[total] / CHLB_PLAN_SAMPLES));
out:
	json_object_put(arr);
	chlb_table_free(&to);
	chlb_table_free(&tn);
	free(ns.name);
	free(before);
	free(after);
	return j;
}

json_object *chlb_plan(const struct chlb_state *cur, const struct chlb_state *next)
{
	json_object *j = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(j, "dry_run", json_object_new_boolean(1));
	for (__u32 i = 0; i < next->nsvc; i++) {
		const struct chlb_svc_cfg *o = chlb_state_find(cur, &next->svc[i].vip);

		if (!o || !chlb_svc_equal(o, &next->svc[i]))
			json_object_array_add(arr, diff_svc(o, &next->svc[i]));
	}
	for (__u32 i = 0; i < cur->nsvc; i++)
		if (!chlb_state_find(next, &cur->svc[i].vip))
			json_object_array_add(arr, diff_svc(&cur->svc[i], NULL));
	json_object_object_add(j, "services", arr);
	return j;
}
