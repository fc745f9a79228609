// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `conns [VIP] [backend ADDR] [list]`: the connection table by service and
 * backend (live, ended, stale, held: see user/lib/engine/conn_tally.h), and with `list`
 * the entries themselves, the analogue of `ipvsadm -Lnc`. The entries are
 * printed as JSON text straight into the reply: a json-c object per entry
 * costs about a kilobyte of heap, 100 MB for a full list.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chlbd.h"
#include "base/json_out.h"
#include "conns.h"
#include "ctl/ctl.h"
#include "dp/dp_conns.h"

/*
 * At most this many entries in a `conns list` reply ("truncated": true
 * beyond): ~300 bytes each at worst (IPv6), so the reply stays under
 * ~30 MB, well inside chlbctl's 64 MiB reply limit. The counts always
 * cover the whole table.
 */
#define CHLBD_CONNS_LIST_MAX 100000

/* One walk for `conns`: the tally, and the entries that pass the filters. */
struct walk {
	struct chlb_ct_tally t;
	int svc; /* only this service's entries; -1: all */
	bool
	    by_backend; /* only entries of the backend's slots (one per service), their generation */
	bool slot[CHLB_MAX_BACKENDS];
	FILE *out; /* the list, or NULL: counts only */
	__u64 listed;
	bool truncated;
};

static void put_hostport(FILE *o, const struct chlb_addr *a, __u16 port)
{
	char b[CHLB_ADDRSTR];

	chlb_fmt_addr(a, b, sizeof(b));
	fprintf(o, a->family == CHLB_AF_INET6 ? "[%s]:%u" : "%s:%u", b, port);
}

static void put_entry(struct walk *w, const struct chlb_flow *f, const struct chlb_conn *c,
		      enum chlb_conn_state state, int svc)
{
	const struct chlb_rt_be *rb = c->backend < CHLB_MAX_BACKENDS ? &D.rt->be[c->backend] : NULL;
	struct chlb_addr client = { .family = f->family };
	struct chlb_vip dst;
	char b[CHLB_ADDRSTR];
	FILE *o = w->out;

	memcpy(client.a, f->src, f->family == CHLB_AF_INET6 ? 16 : 4);
	chlb_flow_dst_vip(f, &dst);
	fprintf(o, "%s{\"client\":\"", w->listed ? "," : "");
	put_hostport(o, &client, ntohs(f->sport));
	fprintf(o, "\",\"vip\":\"%s\",\"service\":", chlb_fmt_vip(&dst, b, sizeof(b)));
	if (svc >= 0)
		fprintf(o, "\"%s\"", chlb_fmt_vip(&D.state.svc[svc].vip, b, sizeof(b)));
	else
		fputs("null", o);
	/* the address only while the slot still holds the generation the entry names */
	if (rb && rb->state != CHLB_BE_EMPTY && rb->gen == c->gen)
		fprintf(o, ",\"backend\":\"%s\"", chlb_fmt_addr(&rb->addr, b, sizeof(b)));
	else
		fputs(",\"backend\":null", o);
	fprintf(o, ",\"slot\":%u,\"gen\":%u,\"state\":\"%s\"", c->backend, c->gen,
		chlb_conn_state_name(state));
	if (f->proto == IPPROTO_UDP && c->last_ns)
		fprintf(o, ",\"idle_s\":%.1f",
			w->t.now_ns > c->last_ns ? (double)(w->t.now_ns - c->last_ns) / 1e9 : 0.0);
	fputc('}', o);
	w->listed++;
}

static int walk_one(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct walk *w = ctx;
	enum chlb_conn_state state;
	int s, b;

	state = chlb_ct_tally_add(&w->t, f, c, &s, &b);
	if (!w->out || (w->svc >= 0 && s != w->svc))
		return 0;
	if (w->by_backend && (c->backend >= CHLB_MAX_BACKENDS || !w->slot[c->backend] ||
			      c->gen != D.rt->be[c->backend].gen))
		return 0;
	if (w->listed >= CHLBD_CONNS_LIST_MAX)
		w->truncated = true;
	else
		put_entry(w, f, c, state, s);
	return 0;
}

static json_object *svc_json(const struct walk *w, __u32 i, const struct chlb_addr *only)
{
	const struct chlb_svc_cfg *s = &D.state.svc[i];
	const struct chlb_ct_svc *ts = &w->t.svc[i];
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	char b[CHLB_ADDRSTR];

	json_object_object_add(o, "service",
			       json_object_new_string(chlb_fmt_vip(&s->vip, b, sizeof(b))));
	chlb_json_add_u64(o, "entries", ts->entries);
	chlb_json_add_u64(o, "live", ts->live);
	chlb_json_add_u64(o, "ended", ts->ended);
	chlb_json_add_u64(o, "stale", ts->stale);
	chlb_json_add_u64(o, "held", ts->held);
	for (__u32 j = 0; j < s->nbe; j++) {
		const struct chlb_ct_be *tb = &ts->be[j];
		json_object *e;

		if (only && !chlb_addr_eq(only, &s->be[j].addr))
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "address", json_object_new_string(s->be[j].name));
		json_object_object_add(e, "slot", json_object_new_int(tb->slot));
		if (tb->slot >= 0)
			chlb_json_add_u64(e, "gen", D.rt->be[tb->slot].gen);
		chlb_json_add_u64(e, "live", tb->live);
		chlb_json_add_u64(e, "ended", tb->ended);
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "backends", arr);
	return o;
}

/* Which service and backend the request names; an error reply when one does not exist. */
static json_object *resolve(const struct chlb_cmd *c, struct walk *w)
{
	char b[CHLB_ADDRSTR], msg[2 * CHLB_ADDRSTR + 64];
	bool member = false;

	w->svc = -1;
	if (c->has_vip) {
		const struct chlb_svc_cfg *s = chlb_state_find(&D.state, &c->vip);

		if (!s) {
			snprintf(msg, sizeof(msg), "'%s': no such service",
				 chlb_fmt_vip(&c->vip, b, sizeof(b)));
			return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
		}
		w->svc = (int)(s - D.state.svc);
	}
	if (!c->backend.family)
		return NULL;
	for (__u32 i = 0; i < D.state.nsvc && !member; i++)
		member = (w->svc < 0 || (int)i == w->svc) &&
			 chlb_svc_find_be(&D.state.svc[i], &c->backend);
	if (!member) {
		snprintf(msg, sizeof(msg), "'%s': %s", chlb_fmt_addr(&c->backend, b, sizeof(b)),
			 c->has_vip ? "no such backend in the service"
				    : "not a backend of any service");
		return chlbd_jerr_kind(msg, CHLBD_ERR_CONFLICT);
	}
	w->by_backend = true;
	/* its slot in each service that has it (in the one named, with a VIP) */
	for (__u32 i = 0; i < D.state.nsvc; i++) {
		int slot;

		if (w->svc >= 0 && (int)i != w->svc)
			continue;
		slot =
		    chlb_rt_be_slot(D.rt, chlb_rt_svc_id(D.rt, &D.state.svc[i].vip), &c->backend);
		if (slot >= 0)
			w->slot[slot] = true;
	}
	return NULL;
}

char *reply_conns(const struct chlb_cmd *c)
{
	struct walk w = { .svc = -1 };
	json_object *o, *arr, *e;
	char *list = NULL, *reply, msg[128];
	size_t len = 0;
	__u32 size = 0;
	__u64 t0;
	int rc;

	if (c->persist_list)
		return reply_persist(c);
	e = resolve(c, &w);
	if (e)
		return chlbd_reply(e);
	if (c->list && !(w.out = open_memstream(&list, &len)))
		return chlbd_reply(chlbd_jerr_kind("out of memory", CHLBD_ERR_FAILED));
	t0 = chlb_now_ns();
	rc = conns_tally_init(&w.t);
	if (!rc)
		rc = chlb_dp_conns_foreach(D.dp, walk_one, &w);
	if (w.out)
		fclose(w.out);
	if (!rc)
		rc = chlb_dp_conn_size(D.dp, &size, NULL);
	if (rc) {
		snprintf(msg, sizeof(msg), "couldn't read the connection table: %s",
			 chlb_strerror(rc));
		chlb_ct_tally_free(&w.t);
		free(list);
		return chlbd_reply(chlbd_jerr_kind(msg, CHLBD_ERR_FAILED));
	}
	o = json_object_new_object();
	arr = json_object_new_array();
	chlb_json_add_u64(o, "ct_size", size);
	chlb_json_add_u64(o, "entries", w.t.entries);
	if (!c->has_vip && !w.by_backend)
		chlb_json_add_u64(o, "other", w.t.other);
	for (__u32 i = 0; i < D.state.nsvc; i++) {
		if ((w.svc >= 0 && (int)i != w.svc) ||
		    (w.by_backend && !chlb_svc_find_be(&D.state.svc[i], &c->backend)))
			continue;
		json_object_array_add(arr, svc_json(&w, i, w.by_backend ? &c->backend : NULL));
	}
	json_object_object_add(o, "services", arr);
	conns_tally_adopt(&w.t, t0); /* the background's last pass: this one is newer */
	chlb_ct_tally_free(&w.t);
	if (!c->list)
		return chlbd_reply(o);
	chlb_json_add_u64(o, "listed", w.listed);
	json_object_object_add(o, "truncated", json_object_new_boolean(w.truncated));
	chlb_json_add_u64(o, "list_max", CHLBD_CONNS_LIST_MAX);
	reply =
	    chlbd_reply_splice(o, "conns", list, len); /* fclose() left list set, "" when empty */
	free(list);
	return reply;
}
