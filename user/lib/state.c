// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Desired-state model and its validation. Every rule an operator can break
 * is checked here, before any table is built, with a message that names the
 * offending token: duplicates, unknown service, ranges that depend on other
 * options (Maglev M prime and larger than the backend count), family mixing,
 * and the data plane's limits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "state.h"
#include "util.h"

void chlb_state_init(struct chlb_state *st)
{
	memset(st, 0, sizeof(*st));
}

static void svc_free(struct chlb_svc_cfg *s)
{
	free(s->be);
	chlb_jump_order_free(&s->order);
	memset(s, 0, sizeof(*s));
}

void chlb_state_free(struct chlb_state *st)
{
	for (__u32 i = 0; i < st->nsvc; i++)
		svc_free(&st->svc[i]);
	free(st->svc);
	memset(st, 0, sizeof(*st));
}

static int order_copy(struct chlb_jump_order *dst, const struct chlb_jump_order *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src->n)
		return 0;
	dst->name = calloc(src->n, sizeof(*dst->name));
	if (!dst->name)
		return -ENOMEM;
	memcpy(dst->name, src->name, src->n * sizeof(*dst->name));
	dst->n = dst->cap = src->n;
	return 0;
}

static int svc_copy(struct chlb_svc_cfg *d, const struct chlb_svc_cfg *s)
{
	*d = *s;
	d->be = NULL;
	d->cap = s->nbe;
	if (s->nbe) {
		d->be = malloc(s->nbe * sizeof(*d->be));
		if (!d->be)
			return -ENOMEM;
		memcpy(d->be, s->be, s->nbe * sizeof(*d->be));
	}
	if (order_copy(&d->order, &s->order)) {
		free(d->be);
		return -ENOMEM;
	}
	return 0;
}

int chlb_state_copy(struct chlb_state *dst, const struct chlb_state *src)
{
	chlb_state_init(dst);
	if (!src->nsvc)
		return 0;
	dst->svc = calloc(src->nsvc, sizeof(*dst->svc));
	if (!dst->svc)
		return -ENOMEM;
	dst->cap = src->nsvc;
	for (__u32 i = 0; i < src->nsvc; i++) {
		if (svc_copy(&dst->svc[i], &src->svc[i])) {
			chlb_state_free(dst);
			return -ENOMEM;
		}
		dst->nsvc++;
	}
	return 0;
}

struct chlb_svc_cfg *chlb_state_find(const struct chlb_state *st, const struct chlb_vip *vip)
{
	for (__u32 i = 0; i < st->nsvc; i++)
		if (!chlb_vip_cmp(&st->svc[i].vip, vip))
			return &st->svc[i];
	return NULL;
}

struct chlb_be_cfg *chlb_svc_find_be(const struct chlb_svc_cfg *svc, const struct chlb_addr *a)
{
	for (__u32 i = 0; i < svc->nbe; i++)
		if (!chlb_addr_cmp(&svc->be[i].addr, a))
			return &svc->be[i];
	return NULL;
}

static bool is_prime(__u32 n)
{
	if (n < 2)
		return false;
	for (__u32 d = 2; (__u64)d * d <= n; d++)
		if (n % d == 0)
			return false;
	return true;
}

static __u64 ring_vnodes(const struct chlb_svc_cfg *s)
{
	__u64 total = 0;

	for (__u32 i = 0; i < s->nbe; i++) {
		__u64 k = ((__u64)s->vnodes * s->be[i].weight + 50) / 100;

		if (s->be[i].weight && !k)
			k = 1;
		total += k;
	}
	return total;
}

/* Checks that span a service's options and its backend set. */
static int check_svc(const struct chlb_svc_cfg *s, const char *vip, char *err, size_t errlen)
{
	if (chlb_algo_has_table(s->algo)) {
		if (!is_prime(s->table_size))
			return chlb_fail(err, errlen,
					 "'%u': maglev table size must be prime (e.g. 65537)",
					 s->table_size);
		if (s->table_size <= s->nbe)
			return chlb_fail(
			    err, errlen,
			    "'%u': maglev table size must be larger than the %u backends of %s",
			    s->table_size, s->nbe, vip);
	}
	if (s->algo == CHLB_ALGO_RING && ring_vnodes(s) > CHLB_RING_MAX_VNODES)
		return chlb_fail(err, errlen, "'%s': ring would hold %llu vnodes (at most %u)", vip,
				 (unsigned long long)ring_vnodes(s), CHLB_RING_MAX_VNODES);
	if (s->encap_src.family && s->fwd != CHLB_FWD_IPIP)
		return chlb_fail(err, errlen, "'%s': encap-src applies to fwd ipip only", vip);
	if (s->mtu && s->fwd != CHLB_FWD_IPIP)
		return chlb_fail(err, errlen, "'%s': mtu applies to fwd ipip only", vip);
	return 0;
}

/* Family rules: l2dsr leaves the packet alone, so the backend must hold the
 * VIP's family; ipip can carry IPv4 in IPv6 but not IPv6 in IPv4. */
static int check_family(const struct chlb_svc_cfg *s, const struct chlb_addr *be, const char *tok,
			char *err, size_t errlen)
{
	int vf = s->vip.addr.family;

	if (s->fwd == CHLB_FWD_L2DSR && be->family != vf)
		return chlb_fail(
		    err, errlen,
		    "'%s': fwd l2dsr needs an IPv%d backend for an IPv%d VIP (use fwd ipip)", tok,
		    vf, vf);
	if (s->fwd == CHLB_FWD_IPIP && vf == CHLB_AF_INET6 && be->family == CHLB_AF_INET)
		return chlb_fail(err, errlen,
				 "'%s': IPv6-in-IPv4 is not supported; use an IPv6 backend", tok);
	if (s->encap_src.family && s->encap_src.family != be->family)
		return chlb_fail(err, errlen, "'%s': family differs from the service's encap-src",
				 tok);
	return 0;
}

static int apply_svc_opts(struct chlb_svc_cfg *s, const struct chlb_cmd *c, char *err,
			  size_t errlen)
{
	if (c->set & CHLB_OPT_ALGO)
		s->algo = c->algo;
	if (c->set & CHLB_OPT_VNODES) {
		if (s->algo != CHLB_ALGO_RING)
			return chlb_fail(err, errlen, "'vnodes': applies to algo ring only");
		s->vnodes = c->vnodes;
	}
	if (c->set & CHLB_OPT_TABLE) {
		if (!chlb_algo_has_table(s->algo))
			return chlb_fail(err, errlen,
					 "'table': applies to algo maglev and jtable only");
		s->table_size = c->table_size;
	}
	if (c->set & CHLB_OPT_BUCKETS) {
		if (!chlb_algo_has_order(s->algo))
			return chlb_fail(err, errlen,
					 "'buckets': applies to algo jump and jtable only");
		/* restoring a saved order: start with tombstones, backends fill them */
		chlb_jump_order_free(&s->order);
		s->order.name = calloc(c->buckets, sizeof(*s->order.name));
		if (!s->order.name)
			return chlb_fail(err, errlen, "out of memory");
		s->order.n = s->order.cap = c->buckets;
		s->order_explicit = true;
	}
	if (c->set & CHLB_OPT_FORCE)
		s->force = true;
	if (c->set & CHLB_OPT_FWD)
		s->fwd = c->fwd;
	if (c->set & CHLB_OPT_HASH)
		s->hash = c->hash;
	if (c->set & CHLB_OPT_MTU)
		s->mtu = c->mtu;
	if (c->set & CHLB_OPT_ENCAP_SRC) {
		if (c->encap_src.family != s->vip.addr.family &&
		    s->vip.addr.family == CHLB_AF_INET6)
			return chlb_fail(err, errlen, "'encap-src': must be IPv6 for an IPv6 VIP");
		s->encap_src = c->encap_src;
	}
	if (!chlb_algo_has_order(s->algo) && s->order.n) {
		chlb_jump_order_free(&s->order);
		s->order_explicit = false;
	}
	return 0;
}

static int service_add(struct chlb_state *st, const struct chlb_cmd *c, const char *vip, char *err,
		       size_t errlen)
{
	struct chlb_svc_cfg s = { 0 };

	if (chlb_state_find(st, &c->vip))
		return chlb_err(err, errlen, -EEXIST,
				"'%s': service already exists (use service set)", vip);
	if (st->nsvc >= CHLB_MAX_SERVICES)
		return chlb_fail(err, errlen, "'%s': too many services (at most %u)", vip,
				 CHLB_MAX_SERVICES);
	s.vip = c->vip;
	s.algo = CHLB_ALGO_RING;
	s.fwd = CHLB_FWD_IPIP;
	s.hash = CHLB_HASH_5TUPLE;
	s.vnodes = CHLB_RING_DEFAULT_VNODES;
	s.table_size = CHLB_MAGLEV_DEFAULT_M;
	if (c->set & CHLB_OPT_ALGO)
		s.algo = c->algo;
	if (apply_svc_opts(&s, c, err, errlen) || check_svc(&s, vip, err, errlen)) {
		svc_free(&s);
		return -1;
	}
	if (st->nsvc == st->cap) {
		__u32 cap = st->cap ? st->cap * 2 : 16;
		void *p = realloc(st->svc, cap * sizeof(*st->svc));

		if (!p) {
			svc_free(&s);
			return chlb_fail(err, errlen, "out of memory");
		}
		st->svc = p;
		st->cap = cap;
	}
	st->svc[st->nsvc++] = s;
	return 0;
}

static int service_set(struct chlb_svc_cfg *s, const struct chlb_cmd *c, const char *vip, char *err,
		       size_t errlen)
{
	struct chlb_svc_cfg n;

	if (svc_copy(&n, s))
		return chlb_fail(err, errlen, "out of memory");
	if (apply_svc_opts(&n, c, err, errlen) || check_svc(&n, vip, err, errlen))
		goto bad;
	for (__u32 i = 0; i < n.nbe; i++) {
		char tok[CHLB_BE_NAME_LEN];

		snprintf(tok, sizeof(tok), "%s", n.be[i].name);
		if (check_family(&n, &n.be[i].addr, tok, err, errlen))
			goto bad;
	}
	svc_free(s);
	*s = n;
	return 0;
bad:
	svc_free(&n);
	return -1;
}

static int fill_buckets(struct chlb_svc_cfg *s, const struct chlb_cmd *c, const char *name,
			char *err, size_t errlen)
{
	if (!chlb_algo_has_order(s->algo))
		return chlb_fail(err, errlen, "'buckets': applies to algo jump and jtable only");
	if (!s->order_explicit)
		return chlb_fail(err, errlen,
				 "'buckets': the service must declare 'buckets N' first");
	for (__u32 i = 0; i < c->nbucket; i++) {
		__u32 b = c->bucket[i];

		if (b >= s->order.n)
			return chlb_fail(err, errlen,
					 "'%u': bucket beyond the service's %u buckets", b,
					 s->order.n);
		if (s->order.name[b][0])
			return chlb_fail(err, errlen, "'%u': bucket already held by %s", b,
					 s->order.name[b]);
		snprintf(s->order.name[b], CHLB_BE_NAME_LEN, "%s", name);
	}
	return 0;
}

static int backend_add(struct chlb_svc_cfg *s, const struct chlb_cmd *c, const char *tok, char *err,
		       size_t errlen)
{
	struct chlb_be_cfg *b;

	if (chlb_svc_find_be(s, &c->backend))
		return chlb_err(err, errlen, -EEXIST,
				"'%s': backend already in the service (use backend set)", tok);
	if (s->nbe >= CHLB_MAX_SVC_BACKENDS)
		return chlb_fail(err, errlen, "'%s': too many backends in one service (at most %u)",
				 tok, CHLB_MAX_SVC_BACKENDS);
	if (check_family(s, &c->backend, tok, err, errlen))
		return -1;
	if (s->nbe == s->cap) {
		__u32 cap = s->cap ? s->cap * 2 : 8;
		void *p = realloc(s->be, cap * sizeof(*s->be));

		if (!p)
			return chlb_fail(err, errlen, "out of memory");
		s->be = p;
		s->cap = cap;
	}
	b = &s->be[s->nbe];
	memset(b, 0, sizeof(*b));
	b->addr = c->backend;
	chlb_fmt_addr(&c->backend, b->name, sizeof(b->name));
	b->weight = (c->set & CHLB_OPT_WEIGHT) ? c->weight : CHLB_WEIGHT_DEFAULT;
	if ((c->set & CHLB_OPT_BUCKET) && fill_buckets(s, c, b->name, err, errlen))
		return -1;
	s->nbe++;
	if (check_svc(s, tok, err, errlen)) {
		s->nbe--;
		return -1;
	}
	return 0;
}

static int backend_set(struct chlb_svc_cfg *s, const struct chlb_cmd *c, const char *tok, char *err,
		       size_t errlen)
{
	struct chlb_be_cfg *b = chlb_svc_find_be(s, &c->backend);
	__u32 old;

	if (!b)
		return chlb_err(err, errlen, -ENOENT, "'%s': no such backend in the service", tok);
	old = b->weight;
	b->weight = c->weight;
	if (check_svc(s, tok, err, errlen)) {
		b->weight = old;
		return -1;
	}
	return 0;
}

static int backend_del(struct chlb_svc_cfg *s, const struct chlb_cmd *c, const char *tok, char *err,
		       size_t errlen)
{
	struct chlb_be_cfg *b = chlb_svc_find_be(s, &c->backend);

	if (!b)
		return chlb_err(err, errlen, -ENOENT, "'%s': no such backend in the service", tok);
	*b = s->be[--s->nbe];
	return 0;
}

/* Jump orders follow every backend change unless being restored verbatim. */
static int sync_order(struct chlb_svc_cfg *s, char *err, size_t errlen)
{
	struct chlb_be *be;
	int r;

	if (!chlb_algo_has_order(s->algo))
		return 0;
	be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	if (!be)
		return chlb_fail(err, errlen, "out of memory");
	for (__u32 i = 0; i < s->nbe; i++) {
		be[i].weight = s->be[i].weight;
		memcpy(be[i].name, s->be[i].name, sizeof(be[i].name));
	}
	r = chlb_jump_order_sync(&s->order, be, s->nbe, err, errlen);
	free(be);
	return r < 0 ? -1 : 0;
}

int chlb_state_exec(struct chlb_state *st, const struct chlb_cmd *c, char *err, size_t errlen)
{
	char vip[CHLB_ADDRSTR], tok[CHLB_ADDRSTR];
	struct chlb_svc_cfg *s;
	int r;

	chlb_fmt_vip(&c->vip, vip, sizeof(vip));
	chlb_fmt_addr(&c->backend, tok, sizeof(tok));
	if (!chlb_cmd_is_change(c->kind))
		return chlb_fail(err, errlen, "not a change statement");
	if (c->kind == CHLB_CMD_SERVICE_ADD)
		return service_add(st, c, vip, err, errlen);
	s = chlb_state_find(st, &c->vip);
	if (!s)
		return chlb_err(err, errlen, -ENOENT, "'%s': no such service", vip);
	switch (c->kind) {
	case CHLB_CMD_SERVICE_SET:
		r = service_set(s, c, vip, err, errlen);
		break;
	case CHLB_CMD_SERVICE_DEL:
		svc_free(s);
		*s = st->svc[--st->nsvc];
		return 0;
	case CHLB_CMD_BACKEND_ADD:
		r = backend_add(s, c, tok, err, errlen);
		break;
	case CHLB_CMD_BACKEND_SET:
		r = backend_set(s, c, tok, err, errlen);
		break;
	case CHLB_CMD_BACKEND_DEL:
		r = backend_del(s, c, tok, err, errlen);
		break;
	default:
		return chlb_fail(err, errlen, "not a change statement");
	}
	if (r || s->order_explicit)
		return r;
	return sync_order(s, err, errlen);
}

int chlb_state_finalize(struct chlb_state *st, char *err, size_t errlen)
{
	__u32 nbe = 0;

	/* a backend slot per (service, backend): an address in two services takes two */
	for (__u32 i = 0; i < st->nsvc; i++)
		nbe += st->svc[i].nbe;
	if (nbe > CHLB_MAX_BACKENDS)
		return chlb_fail(err, errlen,
				 "too many backends: %u over all services (at most %u: a backend "
				 "slot per service and backend)",
				 nbe, CHLB_MAX_BACKENDS);
	for (__u32 i = 0; i < st->nsvc; i++) {
		struct chlb_svc_cfg *s = &st->svc[i];

		if (s->order_explicit) {
			s->order_explicit = false;
			if (sync_order(s, err, errlen))
				return -1;
		}
	}
	return 0;
}

void chlb_state_inherit(struct chlb_state *next, const struct chlb_state *cur)
{
	for (__u32 i = 0; i < next->nsvc; i++) {
		struct chlb_svc_cfg *n = &next->svc[i];
		const struct chlb_svc_cfg *o = chlb_state_find(cur, &n->vip);
		struct chlb_jump_order keep;
		char err[CHLB_ERR_MAX];

		if (!o || !chlb_algo_has_order(n->algo) || !chlb_algo_has_order(o->algo))
			continue;
		if (order_copy(&keep, &o->order))
			continue;
		chlb_jump_order_free(&n->order);
		n->order = keep;
		if (sync_order(n, err, sizeof(err))) {
			/* cannot fail for a set that validated; keep the fresh order if it does */
			continue;
		}
	}
}

bool chlb_svc_view_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b)
{
	return a->fwd == b->fwd && a->hash == b->hash && a->mtu == b->mtu &&
	       !chlb_addr_cmp(&a->encap_src, &b->encap_src);
}

bool chlb_svc_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b)
{
	if (a->algo != b->algo || a->nbe != b->nbe || !chlb_svc_view_equal(a, b))
		return false;
	if (a->algo == CHLB_ALGO_RING && a->vnodes != b->vnodes)
		return false;
	if (chlb_algo_has_table(a->algo) && a->table_size != b->table_size)
		return false;
	for (__u32 i = 0; i < a->nbe; i++) {
		/* copies keep the order: compare in place first, search only on a mismatch */
		const struct chlb_be_cfg *o = &b->be[i];

		if (chlb_addr_cmp(&o->addr, &a->be[i].addr))
			o = chlb_svc_find_be(b, &a->be[i].addr);
		if (!o || o->weight != a->be[i].weight)
			return false;
	}
	if (chlb_algo_has_order(a->algo)) {
		if (a->order.n != b->order.n)
			return false;
		for (__u32 k = 0; k < a->order.n; k++)
			if (strcmp(a->order.name[k], b->order.name[k]))
				return false;
	}
	return true;
}

int chlb_svc_build(const struct chlb_svc_cfg *s, struct chlb_be *be, struct chlb_table *t,
		   char *err, size_t errlen)
{
	struct chlb_table_spec spec = { .algo = s->algo,
					.vnodes = s->vnodes,
					.table_size = s->table_size };
	__u32 *idx = NULL;
	int r = -1;

	for (__u32 i = 0; i < s->nbe; i++) {
		be[i].weight = s->be[i].weight;
		memcpy(be[i].name, s->be[i].name, sizeof(be[i].name));
	}
	if (chlb_algo_has_order(s->algo) && s->order.n) {
		idx = calloc(s->order.n, sizeof(*idx));
		if (!idx || chlb_jump_order_map(&s->order, be, s->nbe, idx, err, errlen))
			goto out;
		spec.jump_order = idx;
		spec.jump_nbuckets = s->order.n;
	}
	r = chlb_table_build(&spec, be, s->nbe, t, err, errlen) < 0 ? -1 : 0;
out:
	free(idx);
	return r;
}
