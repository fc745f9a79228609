// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Dry-run keyspace diff (see plan.h). */
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

static json_object *diff_svc(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *n)
{
	struct chlb_table to = { 0 }, tn = { 0 };
	struct names ns = { 0 };
	json_object *j = json_object_new_object(), *arr = json_object_new_array();
	__u32 total = (o ? o->nbe : 0) + (n ? n->nbe : 0), moved = 0;
	__u32 *before = NULL, *after = NULL;
	char vip[CHLB_ADDRSTR];
	__u64 seed = 1;

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
		__u32 crc = splitmix32(&seed), a = total, b = total;

		if (o && chlb_table_decide(&to, crc, &a))
			a = total;
		if (n && chlb_table_decide(&tn, crc, &b))
			b = total;
		before[a]++;
		after[b]++;
		moved += a != b;
	}
	json_object_object_add(j, "moved",
			       json_object_new_double((double)moved / CHLB_PLAN_SAMPLES));
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
