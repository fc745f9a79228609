// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `conns [VIP] [backend ADDR] persist`: the client affinity entries of
 * persist services (bpf/chlb_persist.h), the analogue of the persistence
 * templates `ipvsadm -Lnc` shows. Counts (the table's size and entries,
 * inserts and evictions since the data plane's counters started) and the
 * entries that pass the filters, each with its client prefix, service,
 * backend, age and whether it still holds. Written as JSON text straight
 * into the reply, as `conns list` is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "chlbd.h"
#include "base/json_out.h"
#include "ctl/ctl.h"

#define PERSIST_LIST_MAX 100000 /* entries in a reply; the counts cover them all */

struct persist_walk {
	int svc;		  /* only this service id's entries; -1: all */
	struct chlb_addr backend; /* only entries naming this address (family 0: all) */
	FILE *out;
	__u64 now, entries, listed;
	bool truncated;
};

bool chlbd_persist_holds(const struct chlb_conn *c, const struct chlb_svc_cfg *cfg, __u64 age)
{
	const struct chlb_rt_be *rb = c->backend < CHLB_MAX_BACKENDS ? &D.rt->be[c->backend] : NULL;

	return cfg && rb && rb->state == CHLB_BE_LIVE && rb->gen == c->gen && !rb->no_new &&
	       age < (__u64)cfg->persist_s * 1000000000ull;
}

static int walk_one(const struct chlb_persist_key *k, const struct chlb_conn *c, void *ctx)
{
	struct persist_walk *w = ctx;
	const struct chlb_rt_be *rb = c->backend < CHLB_MAX_BACKENDS ? &D.rt->be[c->backend] : NULL;
	const struct chlb_rt_svc *s = k->svc_id < CHLB_MAX_SERVICES && D.rt->svc[k->svc_id].used
					  ? &D.rt->svc[k->svc_id]
					  : NULL;
	const struct chlb_svc_cfg *cfg = s ? chlb_state_find(&D.state, &s->vip) : NULL;
	struct chlb_prefix client = { 0 };
	__u64 age = w->now > c->last_ns ? w->now - c->last_ns : 0;
	bool named = rb && rb->state != CHLB_BE_EMPTY && rb->gen == c->gen;
	char b[CHLB_ADDRSTR];

	w->entries++;
	if (w->svc >= 0 && (int)k->svc_id != w->svc)
		return 0;
	if (w->backend.family && (!named || !chlb_addr_eq(&rb->addr, &w->backend)))
		return 0;
	if (w->listed >= PERSIST_LIST_MAX) {
		w->truncated = true;
		return 0;
	}
	client.addr.family = s ? s->vip.addr.family : CHLB_AF_INET6;
	client.plen = cfg ? cfg->persist_plen : 128;
	memcpy(client.addr.a, k->addr, 16);
	fprintf(w->out, "%s{\"client\":\"%s\",\"service\":", w->listed ? "," : "",
		chlb_fmt_prefix(&client, b, sizeof(b)));
	if (s)
		fprintf(w->out, "\"%s\"", chlb_fmt_vip(&s->vip, b, sizeof(b)));
	else
		fputs("null", w->out);
	/* the address only while the slot still holds the generation the entry names */
	if (named)
		fprintf(w->out, ",\"backend\":\"%s\"", chlb_fmt_addr(&rb->addr, b, sizeof(b)));
	else
		fputs(",\"backend\":null", w->out);
	fprintf(w->out, ",\"slot\":%u,\"gen\":%u,\"age_s\":%.1f,\"holds\":%s}", c->backend, c->gen,
		(double)age / 1e9, chlbd_persist_holds(c, cfg, age) ? "true" : "false");
	w->listed++;
	return 0;
}

/* The walk's filters from the request; an error reply when they name nothing. */
static json_object *filters(const struct chlb_cmd *c, struct persist_walk *w)
{
	char b[CHLB_ADDRSTR], msg[CHLB_ADDRSTR + 64];

	w->svc = -1;
	w->backend = c->backend;
	if (!c->has_vip)
		return NULL;
	w->svc = chlb_rt_svc_id(D.rt, &c->vip);
	if (w->svc < 0) {
		snprintf(msg, sizeof(msg), "'%s': no such service",
			 chlb_fmt_vip(&c->vip, b, sizeof(b)));
		return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
	}
	return NULL;
}

char *reply_persist(const struct chlb_cmd *c)
{
	struct persist_walk w = { 0 };
	struct chlb_global_stats gs;
	struct bpf_map_info info = { 0 };
	__u32 ilen = sizeof(info);
	json_object *o, *e;
	char *list = NULL, *reply, msg[128];
	size_t len = 0;
	__u64 inserts = 0;
	int rc;

	e = filters(c, &w);
	if (e)
		return chlbd_reply(e);
	w.out = open_memstream(&list, &len);
	if (!w.out)
		return chlbd_reply(chlbd_jerr_kind("out of memory", CHLBD_ERR_FAILED));
	w.now = chlb_coarse_now_ns();
	rc = chlb_dp_persist_foreach(D.dp, walk_one, &w);
	fclose(w.out);
	if (!rc && bpf_obj_get_info_by_fd(chlb_dp_map_fd(D.dp, CHLB_MAP_PERSIST), &info, &ilen))
		rc = -errno;
	if (rc) {
		snprintf(msg, sizeof(msg), "couldn't read the client affinity table: %s",
			 chlb_strerror(rc));
		free(list);
		return chlbd_reply(chlbd_jerr_kind(msg, CHLBD_ERR_FAILED));
	}
	if (!chlb_dp_read_global(D.dp, &gs))
		inserts = gs.reason[CHLB_R_PERSIST_INSERT];
	o = json_object_new_object();
	chlb_json_add_u64(o, "persist_size", info.max_entries);
	chlb_json_add_u64(o, "entries", w.entries);
	chlb_json_add_u64(o, "inserts", inserts);
	/* the LRU evicts, the data plane never deletes: evictions = inserts - entries */
	chlb_json_add_u64(o, "evictions", inserts > w.entries ? inserts - w.entries : 0);
	chlb_json_add_u64(o, "listed", w.listed);
	json_object_object_add(o, "truncated", json_object_new_boolean(w.truncated));
	reply = chlbd_reply_splice(o, "persist", list, len);
	free(list);
	return reply;
}
