// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Dry-run keyspace diff (see plan.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/plan.h"
#include "base/util.h"

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
	struct chlb_table_be *be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	char err[CHLB_ERR_MAX];
	int r;

	if (!be)
		return -ENOMEM;
	for (__u32 i = 0; i < s->nbe; i++)
		be[i].slot = name_slot(ns, s->be[i].name);
	r = chlb_svc_build(s, be, t, err, sizeof(err));
	free(be);
	return r;
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
		r = (__u32)chlb_splitmix64(seed);
		memcpy(f->src + i, &r, 4);
	}
	r = (__u32)chlb_splitmix64(seed);
	f->sport = htons((__u16)(1024 + (r & 0xffff) % 64512));
	f->dport = htons(vip->port ? vip->port : (__u16)(r >> 16));
}

/*
 * What a change does to flows already running, as the data plane treats
 * them (bpf/chlb_stick.h): every established TCP connection has a
 * connection entry, found by its 5-tuple, and keeps its backend while the
 * backend stays in the service (draining included); an entry-less UDP flow
 * gets one on its first packet after a change, but is decided by its hash,
 * which new hash fields change. A new UDP flow has no SYN to tell it from a
 * running one: it is decided by the oldest table of the view, so it takes
 * the new shares only once the older tables have left (one UDP idle
 * timeout and a second: engine history_of()). A
 * forwarding change keeps every backend, but changes the packets they get.
 */
static json_object *established(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *n,
				bool rehash)
{
	char buf[1024];
	int len, nrem = 0;
	bool serves = false;

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
		len += snprintf(buf + len, sizeof(buf) - len, "%s) are decided again",
				nrem > 3 ? " and more" : "");
	if (o->vip.proto == IPPROTO_UDP && !rehash && len > 0 && (size_t)len < sizeof(buf))
		len += snprintf(buf + len, sizeof(buf) - len,
				"; new UDP flows go by the oldest table the view keeps "
				"(for the UDP timeout and a second), by the shares below once it "
				"has left");
	/* draining every backend (or removing them all) drops new flows: say it, not only 0.00% */
	for (__u32 i = 0; i < n->nbe; i++)
		serves |= n->be[i].weight > 0;
	if (!serves && len > 0 && (size_t)len < sizeof(buf))
		len += snprintf(buf + len, sizeof(buf) - len,
				"; no backend takes new flows (%s): they are dropped "
				"(drop_no_backend)%s",
				n->nbe ? "every weight is 0" : "none is left",
				o->vip.proto == IPPROTO_UDP
				    ? ", UDP ones once the older tables have left the view"
				    : "");
	if (o->fwd != n->fwd && len > 0 && (size_t)len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len,
			 "; forwarding %s -> %s: their packets arrive %s from now on (%s)",
			 chlb_fwd_name(o->fwd), chlb_fwd_name(n->fwd),
			 n->fwd == CHLB_FWD_IPIP ? "encapsulated" : "unencapsulated",
			 n->fwd == CHLB_FWD_IPIP ? "backends must decapsulate"
						 : "backends must be on the LB's L2 segment");
	return json_object_new_string(buf);
}

/* A changed allow-list, as the dry run says it: "allow A -> B (...)". */
static json_object *allow_change(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *s)
{
	char a[CHLB_ALLOW_TEXT_MAX], b[CHLB_ALLOW_TEXT_MAX], *t;
	json_object *j;

	if (asprintf(&t,
		     "allow %s -> %s (no table change; established connections of a source "
		     "that leaves the list are dropped)",
		     chlb_allow_fmt(o->allow, o->nallow, a, sizeof(a)),
		     chlb_allow_fmt(s->allow, s->nallow, b, sizeof(b))) < 0)
		return json_object_new_string("allow-list change");
	j = json_object_new_string(t);
	free(t);
	return j;
}

/* "persist 300 -> persist off (...)": what a persistence change does */
static json_object *persist_change(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *s)
{
	char a[CHLB_PERSIST_TEXT_MAX], b[CHLB_PERSIST_TEXT_MAX], t[256];

	snprintf(t, sizeof(t),
		 "%s ->%s (no table change; established connections keep their backend, a "
		 "client's new ones follow %s)",
		 chlb_persist_fmt(o, a, sizeof(a)) + 1, chlb_persist_fmt(s, b, sizeof(b)),
		 s->persist_s ? "its affinity entry" : "the table");
	return json_object_new_string(t);
}

/*
 * The table's decision fingerprint (table/table_fp.c): by backend address,
 * so it is what `service list` shows once the change is applied, on any
 * host, whatever slots the pseudo slots here stand for.
 */
static void add_fingerprint(json_object *j, const struct chlb_table *t, const struct names *ns)
{
	const char **name = calloc(ns->n + 1, sizeof(*name));
	char err[CHLB_ERR_MAX], hex[16];
	__u32 fp;

	for (__u32 i = 0; name && i < ns->n; i++)
		name[i] = ns->name[i];
	if (name &&
	    !chlb_table_decision_fp(t->words, t->nwords, name, ns->n, &fp, err, sizeof(err))) {
		snprintf(hex, sizeof(hex), "%08x", fp);
		json_object_object_add(j, "fingerprint", json_object_new_string(hex));
	}
	free(name);
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
			ca = cb = (__u32)chlb_splitmix64(&seed);
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
	if (n)
		add_fingerprint(j, &tn, &ns);
out:
	json_object_put(arr);
	chlb_table_free(&to);
	chlb_table_free(&tn);
	free(ns.name);
	free(before);
	free(after);
	return j;
}

static bool svc_health_same(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *s);

/*
 * Did the check settings change, for the service or a backend it keeps? A
 * backend added or removed is a membership change the plan lists already:
 * chlb_svc_health_equal() is false for it too (the checker restarts), but
 * "health check settings change" would be wrong for a service without checks.
 */
static bool health_settings_change(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *n)
{
	if (!svc_health_same(o, n))
		return true;
	for (__u32 i = 0; i < o->nbe; i++) {
		const struct chlb_cfg_be *b = chlb_svc_find_be(n, &o->be[i].addr);
		struct chlb_check x, y;

		if (!b || (!chlb_be_check(&o->be[i])->set && !chlb_be_check(b)->set))
			continue; /* gone, or the service's check on both sides: compared above */
		chlb_check_effective(o, &o->be[i], &x);
		chlb_check_effective(n, b, &y);
		if (!chlb_check_equal(&x, &y))
			return true;
	}
	return false;
}

json_object *chlb_plan(const struct chlb_state *cur, const struct chlb_state *next)
{
	json_object *j = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(j, "dry_run", json_object_new_boolean(1));
	for (__u32 i = 0; i < next->nsvc; i++) {
		const struct chlb_svc_cfg *o = chlb_state_find(cur, &next->svc[i].vip);

		json_object *e;

		if (!o || !chlb_svc_equal(o, &next->svc[i])) {
			e = diff_svc(o, &next->svc[i]);
			if (o && health_settings_change(o, &next->svc[i]))
				json_object_object_add(
				    e, "health",
				    json_object_new_string("health check settings change"));
			if (o && !chlb_svc_allow_equal(o, &next->svc[i]))
				json_object_object_add(e, "allow", allow_change(o, &next->svc[i]));
			if (o && (o->persist_s != next->svc[i].persist_s ||
				  o->persist_plen != next->svc[i].persist_plen))
				json_object_object_add(e, "persist",
						       persist_change(o, &next->svc[i]));
			json_object_array_add(arr, e);
		} else if (!chlb_svc_health_equal(o, &next->svc[i])) {
			/* the checker's settings alone: no table is built or swapped */
			char vip[CHLB_ADDRSTR];

			e = json_object_new_object();
			chlb_fmt_vip(&o->vip, vip, sizeof(vip));
			json_object_object_add(e, "service", json_object_new_string(vip));
			json_object_object_add(e, "action", json_object_new_string("change"));
			json_object_object_add(e, "moved", json_object_new_double(0));
			json_object_object_add(e, "basis", json_object_new_string("keyspace"));
			/*
			 * The plan does not know the probes' verdicts: a check
			 * switched off puts back whatever they held down, which
			 * is a swap (chlbd's health overlay), so say so.
			 */
			json_object_object_add(
			    e, "health",
			    json_object_new_string(
				o->check.type != CHLB_CHECK_NONE &&
					next->svc[i].check.type == CHLB_CHECK_NONE
				    ? "health check settings change: no table change, except that "
				      "backends their probes hold down serve again (check none)"
				    : "health check settings change: no table change"));
			json_object_object_add(e, "backends", json_object_new_array());
			json_object_array_add(arr, e);
		}
	}
	for (__u32 i = 0; i < cur->nsvc; i++)
		if (!chlb_state_find(next, &cur->svc[i].vip))
			json_object_array_add(arr, diff_svc(&cur->svc[i], NULL));
	json_object_object_add(j, "services", arr);
	return j;
}

/* ---- the log's diff (chlb_state_diff) ---- */

struct diff {
	chlb_diff_fn fn;
	void *ctx;
	__u32 lines;
	struct chlb_diff_count n;
};

static void emit(struct diff *d, bool undoes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void emit(struct diff *d, bool undoes, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (undoes && len >= 0 && (size_t)len < sizeof(line))
		snprintf(line + len, sizeof(line) - len,
			 " (undoes a change made since the last load)");
	d->lines++;
	if (d->fn)
		d->fn(d->ctx, line);
}

/* "algo ring vnodes 160 fwd ipip hash 5tuple": the options as `save` writes them */
static void svc_opts(const struct chlb_svc_cfg *s, char *buf, size_t len)
{
	char a[CHLB_ADDRSTR];
	int n = snprintf(buf, len, "algo %s", chlb_algo_name(s->algo));

#define ADD(...)                                                              \
	do {                                                                  \
		if (n >= 0 && (size_t)n < len)                                \
			n += snprintf(buf + n, len - (size_t)n, __VA_ARGS__); \
	} while (0)
	if (s->algo == CHLB_ALGO_RING && s->vnodes_target)
		ADD(" vnodes auto (%u)", s->vnodes);
	else if (s->algo == CHLB_ALGO_RING)
		ADD(" vnodes %u", s->vnodes);
	if (chlb_algo_has_table(s->algo))
		ADD(" table %u", s->table_size);
	ADD(" fwd %s hash %s", chlb_fwd_name(s->fwd), chlb_hash_name(s->hash));
	if (s->mtu)
		ADD(" mtu %u", s->mtu);
	if (s->encap_src.family)
		ADD(" encap-src %s", chlb_fmt_addr(&s->encap_src, a, sizeof(a)));
	if (s->force)
		ADD(" force");
	if (s->nallow) {
		char al[CHLB_ALLOW_TEXT_MAX];

		ADD(" allow %s", chlb_allow_fmt(s->allow, s->nallow, al, sizeof(al)));
	}
	if (s->persist_s) {
		char pe[CHLB_PERSIST_TEXT_MAX];

		ADD("%s", chlb_persist_fmt(s, pe, sizeof(pe)));
	}
	{
		char ck[CHLB_CHECK_TEXT_MAX], h[96];

		ADD("%s%s", chlb_check_fmt(&s->check, true, ck, sizeof(ck)),
		    chlb_health_fmt(&s->health, h, sizeof(h)));
	}
#undef ADD
}

/* The service's own check and policy the same? (its backends' overrides: diff_backends) */
static bool svc_health_same(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *s)
{
	struct chlb_check a, b;

	chlb_check_effective(o, NULL, &a);
	chlb_check_effective(s, NULL, &b);
	return chlb_check_equal(&a, &b) && !memcmp(&o->health, &s->health, sizeof(o->health));
}

/* The same override (the same fields given, the same values)? */
static bool be_check_same(const struct chlb_cfg_be *a, const struct chlb_cfg_be *b)
{
	const struct chlb_check *x = chlb_be_check(a), *y = chlb_be_check(b);

	return x->set == y->set && chlb_check_equal(x, y);
}

/* The options that differ, "algo ring -> maglev, table 65537"; "" if none. */
static void svc_changes(const struct chlb_svc_cfg *o, const struct chlb_svc_cfg *s, char *buf,
			size_t len)
{
	char a[CHLB_ADDRSTR], b[CHLB_ADDRSTR];
	int n = 0;

	buf[0] = '\0';
#define ADD(...)                                                                      \
	do {                                                                          \
		if (n >= 0 && (size_t)n < len)                                        \
			n += snprintf(buf + n, len - (size_t)n, "%s", n ? ", " : ""); \
		if (n >= 0 && (size_t)n < len)                                        \
			n += snprintf(buf + n, len - (size_t)n, __VA_ARGS__);         \
	} while (0)
	if (o->algo != s->algo)
		ADD("algo %s -> %s", chlb_algo_name(o->algo), chlb_algo_name(s->algo));
	if (s->algo == CHLB_ALGO_RING && (o->algo != s->algo || o->vnodes != s->vnodes))
		ADD("vnodes %u%s", s->vnodes, s->vnodes_target ? " (auto)" : "");
	if (chlb_algo_has_table(s->algo) &&
	    (!chlb_algo_has_table(o->algo) || o->table_size != s->table_size))
		ADD("table %u", s->table_size);
	if (o->fwd != s->fwd)
		ADD("fwd %s -> %s", chlb_fwd_name(o->fwd), chlb_fwd_name(s->fwd));
	if (o->hash != s->hash)
		ADD("hash %s -> %s", chlb_hash_name(o->hash), chlb_hash_name(s->hash));
	if (o->mtu != s->mtu)
		ADD("mtu %u -> %u", o->mtu, s->mtu);
	if (!chlb_addr_eq(&o->encap_src, &s->encap_src))
		ADD("encap-src %s -> %s",
		    o->encap_src.family ? chlb_fmt_addr(&o->encap_src, a, sizeof(a)) : "none",
		    s->encap_src.family ? chlb_fmt_addr(&s->encap_src, b, sizeof(b)) : "none");
	if (o->force != s->force)
		ADD("force %s", s->force ? "on" : "off");
	if (!chlb_svc_allow_equal(o, s)) {
		char al[CHLB_ALLOW_TEXT_MAX], bl[CHLB_ALLOW_TEXT_MAX];

		ADD("allow %s -> %s (no table change)",
		    chlb_allow_fmt(o->allow, o->nallow, al, sizeof(al)),
		    chlb_allow_fmt(s->allow, s->nallow, bl, sizeof(bl)));
	}
	if (o->persist_s != s->persist_s || o->persist_plen != s->persist_plen) {
		char pa[CHLB_PERSIST_TEXT_MAX], pb[CHLB_PERSIST_TEXT_MAX];

		/* the leading blank of each: "persist 300 -> persist off" */
		ADD("%s ->%s (no table change)", chlb_persist_fmt(o, pa, sizeof(pa)) + 1,
		    chlb_persist_fmt(s, pb, sizeof(pb)));
	}
	if (!svc_health_same(o, s)) {
		char ck[CHLB_CHECK_TEXT_MAX], h[96];

		/* the whole check as save writes it; " check none" when it went back to defaults */
		chlb_check_fmt(&s->check, true, ck, sizeof(ck));
		chlb_health_fmt(&s->health, h, sizeof(h));
		ADD("health:%s%s (no table change)", *ck || *h ? ck : " check none", h);
	}
#undef ADD
}

static bool svc_opts_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b)
{
	char x[8192]; /* two allow-lists fit */

	svc_changes(a, b, x, sizeof(x));
	return !x[0];
}

/* base had what next has, and cur differs: the change puts back base's */
static bool undoes_svc(const struct chlb_svc_cfg *base, const struct chlb_svc_cfg *next,
		       bool base_known)
{
	if (!base_known)
		return false;
	if (!base || !next)
		return base == next;
	return svc_opts_equal(base, next);
}

static bool undoes_be(const struct chlb_svc_cfg *bsvc, const struct chlb_cfg_be *next,
		      const struct chlb_addr *addr, bool base_known)
{
	const struct chlb_cfg_be *b;

	if (!base_known)
		return false;
	b = bsvc ? chlb_svc_find_be(bsvc, addr) : NULL;
	if (!b || !next)
		return b == next;
	return b->weight == next->weight && be_check_same(b, next);
}

static void diff_backends(struct diff *d, const char *vip, const struct chlb_svc_cfg *o,
			  const struct chlb_svc_cfg *s, const struct chlb_svc_cfg *bsvc,
			  bool base_known)
{
	for (__u32 i = 0; i < s->nbe; i++) {
		const struct chlb_cfg_be *n = &s->be[i],
					 *c = o ? chlb_svc_find_be(o, &n->addr) : NULL;
		bool u = undoes_be(bsvc, n, &n->addr, base_known);

		if (!c) {
			char ck[CHLB_CHECK_TEXT_MAX];

			d->n.be_add++;
			emit(d, u, "backend add %s %s weight %u%s", vip, n->name, n->weight,
			     chlb_check_fmt(chlb_be_check(n), false, ck, sizeof(ck)));
		} else if (c->weight != n->weight) {
			d->n.be_set++;
			emit(d, u, "backend set %s %s weight %u -> %u", vip, n->name, c->weight,
			     n->weight);
		}
		if (c && !be_check_same(c, n)) {
			char ck[CHLB_CHECK_TEXT_MAX];

			d->n.be_set += c->weight == n->weight;
			chlb_check_fmt(chlb_be_check(n), false, ck, sizeof(ck));
			emit(d, u, "backend set %s %s check override:%s (no table change)", vip,
			     n->name, *ck ? ck : " none (the service's check)");
		}
	}
	for (__u32 i = 0; o && i < o->nbe; i++) {
		if (chlb_svc_find_be(s, &o->be[i].addr))
			continue;
		d->n.be_del++;
		emit(d, undoes_be(bsvc, NULL, &o->be[i].addr, base_known), "backend del %s %s", vip,
		     o->be[i].name);
	}
}

__u32 chlb_state_diff(const struct chlb_state *cur, const struct chlb_state *next,
		      const struct chlb_state *base, chlb_diff_fn fn, void *ctx,
		      struct chlb_diff_count *n)
{
	struct diff d = { .fn = fn, .ctx = ctx };
	char vip[CHLB_ADDRSTR], opts[8192]; /* two allow-lists fit */

	for (__u32 i = 0; i < next->nsvc; i++) {
		const struct chlb_svc_cfg *s = &next->svc[i], *o = chlb_state_find(cur, &s->vip);
		const struct chlb_svc_cfg *b = base ? chlb_state_find(base, &s->vip) : NULL;

		chlb_fmt_vip(&s->vip, vip, sizeof(vip));
		if (!o) {
			d.n.svc_add++;
			svc_opts(s, opts, sizeof(opts));
			emit(&d, undoes_svc(b, s, base != NULL), "service add %s %s", vip, opts);
		} else {
			svc_changes(o, s, opts, sizeof(opts));
			if (opts[0]) {
				d.n.svc_set++;
				emit(&d, undoes_svc(b, s, base != NULL), "service set %s %s", vip,
				     opts);
			}
		}
		diff_backends(&d, vip, o, s, b, base != NULL);
	}
	for (__u32 i = 0; i < cur->nsvc; i++) {
		const struct chlb_svc_cfg *o = &cur->svc[i];

		if (chlb_state_find(next, &o->vip))
			continue;
		d.n.svc_del++;
		chlb_fmt_vip(&o->vip, vip, sizeof(vip));
		emit(&d, base && !chlb_state_find(base, &o->vip), "service del %s (%u backends)",
		     vip, o->nbe);
	}
	if (n)
		*n = d.n;
	return d.lines;
}
