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
#include "config/state.h"
#include "base/err.h"

void chlb_state_init(struct chlb_state *st)
{
	memset(st, 0, sizeof(*st));
}

const struct chlb_check *chlb_be_check(const struct chlb_cfg_be *b)
{
	static const struct chlb_check none;

	return b->check ? b->check : &none;
}

static void be_free(struct chlb_cfg_be *be, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		free(be[i].check);
	free(be);
}

void chlb_svc_cfg_free(struct chlb_svc_cfg *s)
{
	be_free(s->be, s->nbe);
	chlb_jump_order_free(&s->order);
	memset(s, 0, sizeof(*s));
}

void chlb_state_free(struct chlb_state *st)
{
	for (__u32 i = 0; i < st->nsvc; i++)
		chlb_svc_cfg_free(&st->svc[i]);
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
		/* the few overrides: each copy owns its own */
		for (__u32 i = 0; i < s->nbe; i++) {
			if (!s->be[i].check)
				continue;
			d->be[i].check = malloc(sizeof(*d->be[i].check));
			if (!d->be[i].check) {
				be_free(d->be, i); /* the copies made so far */
				return -ENOMEM;
			}
			*d->be[i].check = *s->be[i].check;
		}
	}
	if (order_copy(&d->order, &s->order)) {
		be_free(d->be, d->nbe);
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

void chlb_state_put_svc(struct chlb_state *st, const struct chlb_vip *vip,
			const struct chlb_svc_cfg *from)
{
	struct chlb_svc_cfg *n = chlb_state_find(st, vip);
	struct chlb_state one, tmp = { .nsvc = 1, .cap = 1, .svc = (struct chlb_svc_cfg *)from };
	void *p;

	if (n) {
		chlb_svc_cfg_free(n);
		*n = st->svc[--st->nsvc];
	}
	if (!from || chlb_state_copy(&one, &tmp))
		return;
	p = realloc(st->svc, (st->nsvc + 1) * sizeof(*st->svc));
	if (!p) {
		chlb_state_free(&one);
		return;
	}
	st->svc = p;
	st->cap = st->nsvc + 1;
	st->svc[st->nsvc++] = one.svc[0];
	free(one.svc);
}

struct chlb_svc_cfg *chlb_state_find(const struct chlb_state *st, const struct chlb_vip *vip)
{
	__u32 i = st->find_next < st->nsvc ? st->find_next : 0;

	for (__u32 k = 0; k < st->nsvc; k++, i = i + 1 < st->nsvc ? i + 1 : 0)
		if (chlb_vip_eq(&st->svc[i].vip, vip)) {
			((struct chlb_state *)st)->find_next = i + 1; /* the cache (state.h) */
			return &st->svc[i];
		}
	return NULL;
}

struct chlb_cfg_be *chlb_svc_find_be(const struct chlb_svc_cfg *svc, const struct chlb_addr *a)
{
	for (__u32 i = 0; i < svc->nbe; i++)
		if (chlb_addr_eq(&svc->be[i].addr, a))
			return &svc->be[i];
	return NULL;
}

/*
 * Lookups for chlb_state_exec_text(): a config of 100 services x 1000
 * backends is 100,000 statements, each naming a service and a backend. A
 * chained hash per (VIP) and per (service, backend address), kept in step
 * with every change a statement makes, replaces the scans; so do a running
 * vnode count per ring service (its limit is checked on every statement).
 * Jump bucket orders are brought in line once, by chlb_state_finalize().
 */
struct htab {
	__u32 mask;  /* buckets - 1 */
	__s32 *head; /* bucket -> first index, -1 */
	__s32 *next; /* index -> next index in its bucket */
	__u32 ncap;  /* entries of next */
	__u32 n;     /* indexes linked */
};

struct be_ix {
	struct htab h; /* address -> index in be[] */
	__u64 vnodes;  /* ring: the backends' vnodes, as ring_vnodes() counts them */
};

struct chlb_state_ix {
	struct htab h;	   /* VIP -> index in svc[] */
	struct be_ix *svc; /* parallel to svc[] */
	__u32 scap;
	bool oom;
};

static __u32 hash_addr(const struct chlb_addr *a)
{
	__u8 k[17];

	memcpy(k, a->a, 16);
	k[16] = (__u8)a->family;
	return chlb_crc32c(k, sizeof(k));
}

static __u32 hash_vip(const struct chlb_vip *v)
{
	__u8 k[20];

	memcpy(k, v->addr.a, 16);
	k[16] = (__u8)v->addr.family;
	k[17] = (__u8)v->proto;
	k[18] = (__u8)(v->port >> 8);
	k[19] = (__u8)v->port;
	return chlb_crc32c(k, sizeof(k));
}

static void ht_free(struct htab *h)
{
	free(h->head);
	free(h->next);
	memset(h, 0, sizeof(*h));
}

static int ht_reserve(struct htab *h, __u32 idx)
{
	if (idx >= h->ncap) {
		__u32 cap = h->ncap ? h->ncap * 2 : 64;
		__s32 *p;

		while (cap <= idx)
			cap *= 2;
		p = realloc(h->next, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		h->next = p;
		h->ncap = cap;
	}
	return 0;
}

static void ht_link(struct htab *h, __u32 idx, __u32 hash)
{
	__u32 b = hash & h->mask;

	h->next[idx] = h->head[b];
	h->head[b] = (__s32)idx;
}

static void ht_unlink(struct htab *h, __u32 idx, __u32 hash)
{
	__s32 *p = &h->head[hash & h->mask];

	while (*p >= 0 && *p != (__s32)idx)
		p = &h->next[*p];
	if (*p >= 0)
		*p = h->next[idx];
}

/* A table of at least n buckets with indexes 0..n-1 linked, hash(i) of each. */
static int ht_build(struct htab *h, __u32 n, __u32 (*hash)(const void *, __u32), const void *arr)
{
	__u32 nb = 16;

	while (nb < 2 * n)
		nb *= 2;
	ht_free(h);
	h->head = malloc(nb * sizeof(*h->head));
	if (!h->head || ht_reserve(h, n ? n : 1)) {
		ht_free(h);
		return -ENOMEM;
	}
	h->mask = nb - 1;
	for (__u32 b = 0; b < nb; b++)
		h->head[b] = -1;
	for (__u32 i = 0; i < n; i++)
		ht_link(h, i, hash(arr, i));
	h->n = n;
	return 0;
}

static __u32 svc_hash_at(const void *arr, __u32 i)
{
	return hash_vip(&((const struct chlb_svc_cfg *)arr)[i].vip);
}

static __u32 be_hash_at(const void *arr, __u32 i)
{
	return hash_addr(&((const struct chlb_cfg_be *)arr)[i].addr);
}

/* Index i of arr (n entries) was appended: link it, growing the table past half full. */
static int ht_add(struct htab *h, __u32 i, __u32 (*hash)(const void *, __u32), const void *arr)
{
	if (i + 1 > (h->mask + 1) / 2)
		return ht_build(h, i + 1, hash, arr);
	if (ht_reserve(h, i))
		return -ENOMEM;
	ht_link(h, i, hash(arr, i));
	h->n = i + 1;
	return 0;
}

/* Entry i was removed by moving the last one (index last, now gone) into it. */
static void ht_del_move(struct htab *h, __u32 i, __u32 hash_i, __u32 last, __u32 hash_last)
{
	ht_unlink(h, i, hash_i);
	if (last != i) {
		ht_unlink(h, last, hash_last);
		ht_link(h, i, hash_last);
	}
	h->n = last;
}

/* auto: the vnode limit is checked at the smallest K; the picker never goes past the limit */
static __u64 be_vnodes(const struct chlb_svc_cfg *s, __u32 weight)
{
	__u64 k =
	    ((__u64)(s->vnodes_target ? CHLB_VNODES_AUTO_MIN : s->vnodes) * weight + 50) / 100;

	return weight && !k ? 1 : k;
}

static __u64 ring_vnodes(const struct chlb_svc_cfg *s);

static int be_ix_build(struct be_ix *x, const struct chlb_svc_cfg *s)
{
	memset(x, 0, sizeof(*x));
	x->vnodes = ring_vnodes(s);
	return ht_build(&x->h, s->nbe, be_hash_at, s->be);
}

struct chlb_state_ix *chlb_state_ix_new(const struct chlb_state *st)
{
	struct chlb_state_ix *ix = calloc(1, sizeof(*ix));

	if (!ix)
		return NULL;
	ix->scap = st->nsvc + 16;
	ix->svc = calloc(ix->scap, sizeof(*ix->svc));
	if (!ix->svc || ht_build(&ix->h, st->nsvc, svc_hash_at, st->svc))
		goto bad;
	for (__u32 i = 0; i < st->nsvc; i++)
		if (be_ix_build(&ix->svc[i], &st->svc[i]))
			goto bad;
	return ix;
bad:
	chlb_state_ix_free(ix);
	return NULL;
}

void chlb_state_ix_free(struct chlb_state_ix *ix)
{
	if (!ix)
		return;
	for (__u32 i = 0; i < ix->scap && ix->svc; i++)
		ht_free(&ix->svc[i].h);
	free(ix->svc);
	ht_free(&ix->h);
	free(ix);
}

static struct chlb_svc_cfg *ix_find_svc(const struct chlb_state *st, const struct chlb_state_ix *ix,
					const struct chlb_vip *vip)
{
	if (!ix)
		return chlb_state_find(st, vip);
	for (__s32 i = ix->h.head[hash_vip(vip) & ix->h.mask]; i >= 0; i = ix->h.next[i])
		if (chlb_vip_eq(&st->svc[i].vip, vip))
			return &st->svc[i];
	return NULL;
}

static struct chlb_cfg_be *ix_find_be(const struct chlb_svc_cfg *s, const struct be_ix *x,
				      const struct chlb_addr *a)
{
	if (!x)
		return chlb_svc_find_be(s, a);
	for (__s32 i = x->h.head[hash_addr(a) & x->h.mask]; i >= 0; i = x->h.next[i])
		if (chlb_addr_eq(&s->be[i].addr, a))
			return &s->be[i];
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

	for (__u32 i = 0; i < s->nbe; i++)
		total += be_vnodes(s, s->be[i].weight);
	return total;
}

/* Checks that span a service's options and its backend set (vn: its ring vnodes). */
static int check_svc_vn(const struct chlb_svc_cfg *s, const char *vip, __u64 vn, char *err,
			size_t errlen)
{
	if (chlb_algo_has_table(s->algo)) {
		if (!is_prime(s->table_size))
			return chlb_err(err, errlen, -EINVAL,
					"'%u': maglev table size must be prime (e.g. 65537)",
					s->table_size);
		if (s->table_size <= s->nbe)
			return chlb_err(
			    err, errlen, -EINVAL,
			    "'%u': maglev table size must be larger than the %u backends of %s",
			    s->table_size, s->nbe, vip);
	}
	if (s->algo == CHLB_ALGO_RING && vn > CHLB_RING_MAX_VNODES)
		return chlb_err(err, errlen, -E2BIG,
				"'%s': ring would hold %llu vnodes (at most %u)", vip,
				(unsigned long long)vn, CHLB_RING_MAX_VNODES);
	if (s->encap_src.family && s->fwd != CHLB_FWD_IPIP)
		return chlb_err(err, errlen, -EINVAL, "'%s': encap-src applies to fwd ipip only",
				vip);
	if (s->mtu && s->fwd != CHLB_FWD_IPIP)
		return chlb_err(err, errlen, -EINVAL, "'%s': mtu applies to fwd ipip only", vip);
	return 0;
}

static int check_svc(const struct chlb_svc_cfg *s, const char *vip, char *err, size_t errlen)
{
	return check_svc_vn(s, vip, s->algo == CHLB_ALGO_RING ? ring_vnodes(s) : 0, err, errlen);
}

/* Family rules: l2dsr leaves the packet alone, so the backend must hold the
 * VIP's family; ipip can carry IPv4 in IPv6 but not IPv6 in IPv4. */
/*
 * An address no packet from the wire is for (unspecified, loopback,
 * multicast, broadcast): the kind, or NULL. `backend add VIP 0.0.0.0` and a
 * VIP 255.255.255.255 were accepted and could never serve anything.
 */
static const char *unusable_addr(const struct chlb_addr *a)
{
	static const __u8 zero[16];
	const __u8 *b = a->a;

	if (a->family == CHLB_AF_INET) {
		if (!memcmp(b, zero, 4))
			return "unspecified";
		if (b[0] == 127)
			return "loopback";
		if (b[0] >= 224 && b[0] <= 239)
			return "multicast";
		if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255)
			return "broadcast";
		return NULL;
	}
	if (!memcmp(b, zero, 16))
		return "unspecified";
	if (!memcmp(b, zero, 15) && b[15] == 1)
		return "loopback";
	return b[0] == 0xff ? "multicast" : NULL;
}

static int check_usable(const struct chlb_addr *a, const char *tok, const char *what, char *err,
			size_t errlen)
{
	const char *kind = unusable_addr(a);

	if (!kind)
		return 0;
	return chlb_err(err, errlen, -EINVAL, "'%s': not usable as a %s (%s address)", tok, what,
			kind);
}

static int check_family(const struct chlb_svc_cfg *s, const struct chlb_addr *be, const char *tok,
			char *err, size_t errlen)
{
	int vf = s->vip.addr.family;

	if (s->fwd == CHLB_FWD_L2DSR && be->family != vf)
		return chlb_err(
		    err, errlen, -EINVAL,
		    "'%s': fwd l2dsr needs an IPv%d backend for an IPv%d VIP (use fwd ipip)", tok,
		    vf, vf);
	if (s->fwd == CHLB_FWD_IPIP && vf == CHLB_AF_INET6 && be->family == CHLB_AF_INET)
		return chlb_err(err, errlen, -EINVAL,
				"'%s': IPv6-in-IPv4 is not supported; use an IPv6 backend", tok);
	if (s->encap_src.family && s->encap_src.family != be->family)
		return chlb_err(err, errlen, -EINVAL,
				"'%s': family differs from the service's encap-src", tok);
	return 0;
}

/* persist and netmask (after hash: persistence with `hash src` is refused). */
static int apply_persist(struct chlb_svc_cfg *s, const struct chlb_cmd *c, char *err, size_t errlen)
{
	__u8 bits = s->vip.addr.family == CHLB_AF_INET ? 32 : 128;

	if (c->set & CHLB_OPT_PERSIST) {
		if (c->persist_s && !s->persist_s)
			s->persist_plen = bits; /* one client per address until a netmask says */
		s->persist_s = c->persist_s;
	}
	if (c->set & CHLB_OPT_NETMASK) {
		if (!s->persist_s)
			return chlb_err(err, errlen, -EINVAL,
					"'netmask': applies to services with persist only");
		if (c->netmask > bits)
			return chlb_err(err, errlen, -EINVAL,
					"'/%u': netmask longer than an IPv%d address (/%u)",
					c->netmask, bits == 32 ? 4 : 6, bits);
		s->persist_plen = c->netmask;
	}
	if (s->persist_s && s->hash == CHLB_HASH_SRC)
		return chlb_err(
		    err, errlen, -EINVAL,
		    "'persist': not with hash src (the source hash sends a client to one "
		    "backend only while nothing changes; persist keeps it there across "
		    "changes: use it with hash 5tuple)");
	return 0;
}

static int apply_svc_opts(struct chlb_svc_cfg *s, const struct chlb_cmd *c, char *err,
			  size_t errlen)
{
	if (c->set & CHLB_OPT_ALGO)
		s->algo = c->algo;
	if (c->set & CHLB_OPT_VNODES) {
		if (s->algo != CHLB_ALGO_RING)
			return chlb_err(err, errlen, -EINVAL,
					"'vnodes': applies to algo ring only");
		if (c->vnodes) {
			s->vnodes = c->vnodes;
			s->vnodes_target = 0;
		} else if (!s->vnodes_target) {
			s->vnodes_target = CHLB_VNODES_TARGET_DEFAULT;
		}
		s->vnodes_dirty = true;
	}
	if (c->set & CHLB_OPT_TARGET) {
		if (s->algo != CHLB_ALGO_RING || !s->vnodes_target)
			return chlb_err(err, errlen, -EINVAL,
					"'target': applies to algo ring with vnodes auto only");
		s->vnodes_target = c->vnodes_target;
		s->vnodes_dirty = true;
	}
	if (c->set & CHLB_OPT_TABLE) {
		if (!chlb_algo_has_table(s->algo))
			return chlb_err(err, errlen, -EINVAL,
					"'table': applies to algo maglev, jtable and hrw only");
		s->table_size = c->table_size;
	}
	if (c->set & CHLB_OPT_BUCKETS) {
		if (!chlb_algo_has_order(s->algo))
			return chlb_err(err, errlen, -EINVAL,
					"'buckets': applies to algo jump and jtable only");
		/* restoring a saved order: start with tombstones, backends fill them */
		chlb_jump_order_free(&s->order);
		s->order.name = calloc(c->buckets, sizeof(*s->order.name));
		if (!s->order.name)
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		s->order.n = s->order.cap = c->buckets;
		s->order_explicit = true;
		s->order_pinned = true;
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
			return chlb_err(err, errlen, -EINVAL,
					"'encap-src': must be IPv6 for an IPv6 VIP");
		s->encap_src = c->encap_src;
	}
	if (s->algo != CHLB_ALGO_RING)
		s->vnodes_target = 0;
	if (c->set & CHLB_OPT_ALLOW) {
		char a[64];

		for (__u32 i = 0; i < c->nallow; i++)
			if (c->allow[i].addr.family != s->vip.addr.family)
				return chlb_err(err, errlen, -EINVAL,
						"'%s': allow-list prefix of another family than "
						"the VIP's",
						chlb_fmt_prefix(&c->allow[i], a, sizeof(a)));
		s->nallow = c->nallow;
		memcpy(s->allow, c->allow, c->nallow * sizeof(c->allow[0]));
	}
	if (!chlb_algo_has_order(s->algo) && s->order.n) {
		chlb_jump_order_free(&s->order);
		s->order_explicit = false;
	}
	if (c->set & CHLB_OPT_CHECK_ALL)
		chlb_check_overlay(&s->check, &c->check);
	if (c->set & CHLB_OPT_ON_DOWN)
		s->health.on_down = c->health.on_down;
	if (c->set & CHLB_OPT_SLOW_START)
		s->health.slow_start_s = c->health.slow_start_s;
	if (c->set & CHLB_OPT_PANIC)
		s->health.panic_pct = c->health.panic_pct;
	return apply_persist(s, c, err, errlen);
}

/*
 * The check backend b (NULL: the service itself) would get is one chlbd can
 * run: its timeout within its interval, and a port to probe. tok names the
 * statement's object in the message.
 */
static int check_health(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b, const char *tok,
			char *err, size_t errlen)
{
	struct chlb_check k;
	char vip[CHLB_ADDRSTR];

	chlb_check_effective(s, b, &k);
	if (k.timeout_ms > k.interval_ms)
		return chlb_err(err, errlen, -EINVAL,
				"'timeout %u': longer than 'interval %u' for %s (a probe's timeout "
				"must not exceed the interval)",
				k.timeout_ms, k.interval_ms, tok);
	if (k.type != CHLB_CHECK_NONE && !k.port && !s->vip.port)
		return chlb_err(err, errlen, -EINVAL,
				"'check %s': %s is a VIP of every port: the check of %s needs a "
				"port (port N)",
				chlb_check_type_name(k.type),
				chlb_fmt_vip(&s->vip, vip, sizeof(vip)), tok);
	return 0;
}

/* The service's check and every backend's with it. */
static int check_svc_health(const struct chlb_svc_cfg *s, const char *vip, char *err, size_t errlen)
{
	int rc = check_health(s, NULL, vip, err, errlen);

	/* backends with overrides: the others have the service's check, checked above */
	for (__u32 i = 0; !rc && i < s->nbe; i++)
		if (chlb_be_check(&s->be[i])->set)
			rc = check_health(s, &s->be[i], s->be[i].name, err, errlen);
	return rc;
}

static int service_add(struct chlb_state *st, struct chlb_state_ix *ix, const struct chlb_cmd *c,
		       const char *vip, char *err, size_t errlen)
{
	struct chlb_svc_cfg s = { 0 };
	int rc;

	if (ix_find_svc(st, ix, &c->vip))
		return chlb_err(err, errlen, -EEXIST,
				"'%s': service already exists (use service set)", vip);
	if (st->nsvc >= CHLB_MAX_SERVICES)
		return chlb_err(err, errlen, -E2BIG, "'%s': too many services (at most %u)", vip,
				CHLB_MAX_SERVICES);
	rc = check_usable(&c->vip.addr, vip, "VIP", err, errlen);
	if (rc)
		return rc;
	s.vip = c->vip;
	s.algo = CHLB_ALGO_RING;
	s.fwd = CHLB_FWD_IPIP;
	s.hash = CHLB_HASH_5TUPLE;
	s.vnodes = CHLB_RING_DEFAULT_VNODES;
	s.table_size = CHLB_MAGLEV_DEFAULT_M;
	chlb_check_defaults(&s.check); /* zeroed would mean panic 0, interval 0 */
	chlb_health_policy_defaults(&s.health);
	if (c->set & CHLB_OPT_ALGO)
		s.algo = c->algo;
	rc = apply_svc_opts(&s, c, err, errlen);
	if (!rc)
		rc = check_svc(&s, vip, err, errlen);
	if (!rc)
		rc = check_health(&s, NULL, vip, err, errlen);
	if (rc) {
		chlb_svc_cfg_free(&s);
		return rc;
	}
	if (st->nsvc == st->cap) {
		__u32 cap = st->cap ? st->cap * 2 : 16;
		void *p = realloc(st->svc, cap * sizeof(*st->svc));

		if (!p) {
			chlb_svc_cfg_free(&s);
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		}
		st->svc = p;
		st->cap = cap;
	}
	if (ix && ix->scap <= st->nsvc) {
		__u32 cap = ix->scap * 2 + 16;
		struct be_ix *p = realloc(ix->svc, cap * sizeof(*p));

		if (!p) {
			chlb_svc_cfg_free(&s);
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		}
		memset(p + ix->scap, 0, (cap - ix->scap) * sizeof(*p));
		ix->svc = p;
		ix->scap = cap;
	}
	st->svc[st->nsvc++] = s;
	if (ix) {
		struct be_ix *x = &ix->svc[st->nsvc - 1];

		if (be_ix_build(x, &st->svc[st->nsvc - 1]) ||
		    ht_add(&ix->h, st->nsvc - 1, svc_hash_at, st->svc)) {
			st->nsvc--;
			chlb_svc_cfg_free(&st->svc[st->nsvc]);
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		}
	}
	return 0;
}

static int service_set(struct chlb_svc_cfg *s, struct be_ix *x, const struct chlb_cmd *c,
		       const char *vip, char *err, size_t errlen)
{
	struct chlb_svc_cfg n;
	int rc;

	if (svc_copy(&n, s))
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	rc = apply_svc_opts(&n, c, err, errlen);
	if (!rc)
		rc = check_svc(&n, vip, err, errlen);
	if (!rc && (c->set & CHLB_OPT_CHECK_ALL))
		rc = check_svc_health(&n, vip, err, errlen);
	for (__u32 i = 0; !rc && i < n.nbe; i++) {
		char tok[CHLB_BE_NAME_LEN];

		snprintf(tok, sizeof(tok), "%s", n.be[i].name);
		rc = check_family(&n, &n.be[i].addr, tok, err, errlen);
	}
	if (rc)
		goto bad;
	chlb_svc_cfg_free(s);
	*s = n; /* same backends in the same order: the index still holds */
	if (x)
		x->vnodes = ring_vnodes(s);
	return 0;
bad:
	chlb_svc_cfg_free(&n);
	return rc;
}

/*
 * `bucket N` (or an old state file's `buckets B1,B2,...`: one bucket per 100
 * of weight then, one bucket per backend now, so the first is taken): the
 * backend's jump bucket, placed by chlb_state_finalize() once the whole
 * transaction is known (a bucket freed by a later `backend del` is free).
 */
static int ask_bucket(struct chlb_svc_cfg *s, struct chlb_cfg_be *b, const struct chlb_cmd *c,
		      char *err, size_t errlen)
{
	__u32 k = c->bucket[0];

	if (!chlb_algo_has_order(s->algo))
		return chlb_err(err, errlen, -EINVAL,
				"'bucket': applies to algo jump and jtable only");
	if ((c->set & CHLB_OPT_BUCKET) && (c->set & CHLB_OPT_BUCKET_ONE))
		return chlb_err(err, errlen, -EINVAL,
				"'buckets': give 'bucket N' alone (one bucket per backend)");
	if (!c->nbucket)
		return chlb_err(err, errlen, -EINVAL, "'bucket': no bucket given");
	if (s->order_explicit && k >= s->order.n)
		return chlb_err(err, errlen, -EINVAL,
				"'%u': bucket beyond the service's %u buckets", k, s->order.n);
	b->bucket_req = k + 1;
	s->order_pinned = true;
	return 0;
}

static int backend_add(struct chlb_svc_cfg *s, struct be_ix *x, const struct chlb_cmd *c,
		       const char *tok, char *err, size_t errlen)
{
	struct chlb_check *own = NULL;
	struct chlb_cfg_be *b;
	__u64 vn;
	int rc;

	if (ix_find_be(s, x, &c->backend))
		return chlb_err(err, errlen, -EEXIST,
				"'%s': backend already in the service (use backend set)", tok);
	if (s->nbe >= CHLB_MAX_SVC_BACKENDS)
		return chlb_err(err, errlen, -E2BIG,
				"'%s': too many backends in one service (at most %u)", tok,
				CHLB_MAX_SVC_BACKENDS);
	rc = check_usable(&c->backend, tok, "backend", err, errlen)
		 ?: check_family(s, &c->backend, tok, err, errlen);
	if (rc)
		return rc;
	/* only the fields given: an override, the backend's own */
	if (c->check.set) {
		own = calloc(1, sizeof(*own));
		if (!own)
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		chlb_check_overlay(own, &c->check);
	}
	if (c->set & CHLB_OPT_CHECK_ALL) {
		struct chlb_cfg_be tmp = { .check = own };

		rc = check_health(s, &tmp, tok, err, errlen);
		if (rc)
			goto fail;
	}
	if (s->nbe == s->cap) {
		__u32 cap = s->cap ? s->cap * 2 : 8;
		void *p = realloc(s->be, cap * sizeof(*s->be));

		if (!p) {
			rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		s->be = p;
		s->cap = cap;
	}
	b = &s->be[s->nbe];
	memset(b, 0, sizeof(*b));
	b->addr = c->backend;
	chlb_fmt_addr(&c->backend, b->name, sizeof(b->name));
	b->weight = (c->set & CHLB_OPT_WEIGHT) ? c->weight : CHLB_WEIGHT_DEFAULT;
	if (c->set & (CHLB_OPT_BUCKET | CHLB_OPT_BUCKET_ONE)) {
		rc = ask_bucket(s, b, c, err, errlen);
		if (rc)
			goto fail;
	}
	s->nbe++;
	/* said for the backend: check_svc_vn's "larger than the N backends of ADDR" read as nonsense */
	if (chlb_algo_has_table(s->algo) && s->table_size <= s->nbe) {
		s->nbe--;
		rc = chlb_err(err, errlen, -EINVAL,
			      "'%s': one backend too many for the service's table (table %u): it "
			      "must be larger than the backend count (%u with this one); raise it "
			      "first (service set VIP table N, a prime)",
			      tok, s->table_size, s->nbe + 1);
		goto fail;
	}
	vn = x ? x->vnodes + be_vnodes(s, b->weight) : ring_vnodes(s);
	rc = check_svc_vn(s, tok, s->algo == CHLB_ALGO_RING ? vn : 0, err, errlen);
	if (rc) {
		s->nbe--;
		goto fail;
	}
	if (x) {
		if (ht_add(&x->h, s->nbe - 1, be_hash_at, s->be)) {
			s->nbe--;
			rc = chlb_err(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		x->vnodes = vn;
	}
	b->check = own;
	return 0;
fail:
	free(own);
	return rc;
}

/* A refused `backend set`: b's overrides back to what they were (none: had false). */
static void put_check(struct chlb_cfg_be *b, bool had, const struct chlb_check *old)
{
	if (had) {
		*b->check = *old;
	} else {
		free(b->check);
		b->check = NULL;
	}
}

static int backend_set(struct chlb_svc_cfg *s, struct be_ix *x, const struct chlb_cmd *c,
		       const char *tok, char *err, size_t errlen)
{
	struct chlb_cfg_be *b = ix_find_be(s, x, &c->backend);
	struct chlb_check old_check;
	bool had_check;
	__u32 old;
	__u64 vn;
	int rc;

	if (!b)
		return chlb_err(err, errlen, -ENOENT, "'%s': no such backend in the service", tok);
	old_check = *chlb_be_check(b); /* every failure below puts it back */
	had_check = b->check != NULL;
	if (c->set & CHLB_OPT_CHECK_ALL) {
		if (!b->check && !(b->check = calloc(1, sizeof(*b->check))))
			return chlb_err(err, errlen, -ENOMEM, "out of memory");
		chlb_check_overlay(b->check, &c->check);
		rc = check_health(s, b, tok, err, errlen);
		if (rc) {
			put_check(b, had_check, &old_check);
			return rc;
		}
	}
	if (c->set & (CHLB_OPT_BUCKET | CHLB_OPT_BUCKET_ONE)) {
		__u32 old_req = b->bucket_req;
		bool old_pinned = s->order_pinned;

		rc = ask_bucket(s, b, c, err, errlen);
		if (rc) {
			b->bucket_req = old_req;
			s->order_pinned = old_pinned;
			if (c->set & CHLB_OPT_CHECK_ALL)
				put_check(b, had_check, &old_check);
			return rc;
		}
	}
	if (!(c->set & CHLB_OPT_WEIGHT))
		return 0; /* a check override or a bucket alone: weights stay */
	old = b->weight;
	b->weight = c->weight;
	vn = x ? x->vnodes - be_vnodes(s, old) + be_vnodes(s, b->weight) : ring_vnodes(s);
	rc = check_svc_vn(s, tok, s->algo == CHLB_ALGO_RING ? vn : 0, err, errlen);
	if (rc) {
		b->weight = old;
		if (c->set & CHLB_OPT_CHECK_ALL) /* a refused statement changes nothing */
			put_check(b, had_check, &old_check);
		return rc;
	}
	if (x)
		x->vnodes = vn;
	return 0;
}

static int backend_del(struct chlb_svc_cfg *s, struct be_ix *x, const struct chlb_cmd *c,
		       const char *tok, char *err, size_t errlen)
{
	struct chlb_cfg_be *b = ix_find_be(s, x, &c->backend);
	__u32 i, last;

	if (!b)
		return chlb_err(err, errlen, -ENOENT, "'%s': no such backend in the service", tok);
	i = (__u32)(b - s->be);
	last = s->nbe - 1;
	if (x) {
		x->vnodes -= be_vnodes(s, b->weight);
		ht_del_move(&x->h, i, hash_addr(&b->addr), last, hash_addr(&s->be[last].addr));
	}
	free(b->check);
	*b = s->be[last];
	s->nbe--;
	return 0;
}

/*
 * Brings s's jump order in line with its backends: the buckets asked for
 * (`bucket N`) placed, the others' new buckets handed out in canonical
 * order (chlb_jump_order_sync_want()), never in statement order.
 */
static int sync_order(struct chlb_svc_cfg *s, char *err, size_t errlen)
{
	struct chlb_table_be *be;
	__u32 *want;
	int r;

	if (!chlb_algo_has_order(s->algo))
		return 0;
	be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	want = calloc(s->nbe ? s->nbe : 1, sizeof(*want));
	if (!be || !want) {
		free(be);
		free(want);
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	}
	for (__u32 i = 0; i < s->nbe; i++) {
		be[i].weight = s->be[i].weight;
		memcpy(be[i].name, s->be[i].name, sizeof(be[i].name));
		want[i] = s->be[i].bucket_req ? s->be[i].bucket_req - 1 : CHLB_TOMBSTONE;
	}
	r = chlb_jump_order_sync_want(&s->order, be, s->nbe, want, err, errlen);
	free(want);
	free(be);
	if (r >= 0)
		for (__u32 i = 0; i < s->nbe; i++)
			s->be[i].bucket_req = 0;
	return r < 0 ? r : 0;
}

int chlb_state_exec_ix(struct chlb_state *st, struct chlb_state_ix *ix, const struct chlb_cmd *c,
		       char *err, size_t errlen)
{
	char vip[CHLB_ADDRSTR], tok[CHLB_ADDRSTR];
	struct chlb_svc_cfg *s;
	struct be_ix *x;
	int r;

	chlb_fmt_vip(&c->vip, vip, sizeof(vip));
	chlb_fmt_addr(&c->backend, tok, sizeof(tok));
	if (!chlb_cmd_is_change(c->kind))
		return chlb_err(err, errlen, -EINVAL, "not a change statement");
	if (c->kind == CHLB_CMD_SERVICE_ADD) {
		r = service_add(st, ix, c, vip, err, errlen);
		if (!r)
			st->svc[st->nsvc - 1].order_dirty = st->svc[st->nsvc - 1].vnodes_dirty =
			    true;
		return r;
	}
	s = ix_find_svc(st, ix, &c->vip);
	if (!s)
		return chlb_err(err, errlen, -ENOENT, "'%s': no such service", vip);
	x = ix ? &ix->svc[s - st->svc] : NULL;
	switch (c->kind) {
	case CHLB_CMD_SERVICE_SET:
		r = service_set(s, x, c, vip, err, errlen);
		break;
	case CHLB_CMD_SERVICE_DEL: {
		__u32 i = (__u32)(s - st->svc), last = st->nsvc - 1;

		if (ix) {
			ht_del_move(&ix->h, i, hash_vip(&s->vip), last,
				    hash_vip(&st->svc[last].vip));
			ht_free(&ix->svc[i].h);
			ix->svc[i] = ix->svc[last];
			memset(&ix->svc[last], 0, sizeof(ix->svc[last]));
		}
		chlb_svc_cfg_free(s);
		*s = st->svc[last];
		st->nsvc--;
		return 0;
	}
	case CHLB_CMD_BACKEND_ADD:
		r = backend_add(s, x, c, tok, err, errlen);
		break;
	case CHLB_CMD_BACKEND_SET:
		r = backend_set(s, x, c, tok, err, errlen);
		break;
	case CHLB_CMD_BACKEND_DEL:
		r = backend_del(s, x, c, tok, err, errlen);
		break;
	default:
		return chlb_err(err, errlen, -EINVAL, "not a change statement");
	}
	/*
	 * Jump bucket orders are placed once per transaction, by
	 * chlb_state_finalize(), for the services a statement may have changed
	 * the order of (weights never do): one sort per changed service, not
	 * one per jump service of the state.
	 */
	if (!r &&
	    (c->kind != CHLB_CMD_BACKEND_SET || (c->set & (CHLB_OPT_BUCKET | CHLB_OPT_BUCKET_ONE))))
		s->order_dirty = true;
	if (!r && c->kind != CHLB_CMD_SERVICE_SET) /* a weight counts for vnodes auto */
		s->vnodes_dirty = true;
	return r;
}

int chlb_state_exec(struct chlb_state *st, const struct chlb_cmd *c, char *err, size_t errlen)
{
	return chlb_state_exec_ix(st, NULL, c, err, errlen);
}

/* `vnodes auto`: K for s's backends and weights (table/vnodes_auto.h) */
static int pick_vnodes(struct chlb_svc_cfg *s, char *err, size_t errlen)
{
	struct chlb_table_be *be = calloc(s->nbe ? s->nbe : 1, sizeof(*be));
	struct chlb_vnodes_pick p;
	int rc;

	if (!be)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	for (__u32 i = 0; i < s->nbe; i++) {
		be[i].weight = s->be[i].weight;
		memcpy(be[i].name, s->be[i].name, sizeof(be[i].name));
	}
	rc = chlb_vnodes_pick(be, s->nbe, s->vnodes_target, &p, err, errlen);
	free(be);
	if (rc)
		return rc;
	s->vnodes = p.vnodes;
	s->vnodes_balance = p.balance;
	s->vnodes_met = p.met;
	return 0;
}

int chlb_state_finalize(struct chlb_state *st, char *err, size_t errlen)
{
	__u32 nbe = 0;

	/* a backend slot per (service, backend): an address in two services takes two */
	for (__u32 i = 0; i < st->nsvc; i++)
		nbe += st->svc[i].nbe;
	if (nbe > CHLB_MAX_BACKENDS)
		return chlb_err(err, errlen, -E2BIG,
				"too many backends: %u over all services (at most %u: a backend "
				"slot per service and backend)",
				nbe, CHLB_MAX_BACKENDS);
	for (__u32 i = 0; i < st->nsvc; i++) {
		struct chlb_svc_cfg *s = &st->svc[i];
		char vip[CHLB_ADDRSTR], msg[CHLB_ERR_MAX];
		int rc;

		s->weight_norm = 0;
		for (__u32 j = 0; j < s->nbe; j++)
			if (s->be[j].weight > s->weight_norm)
				s->weight_norm = s->be[j].weight;
		if (s->vnodes_dirty && s->algo == CHLB_ALGO_RING && s->vnodes_target) {
			rc = pick_vnodes(s, msg, sizeof(msg));
			if (rc)
				return chlb_err(err, errlen, rc, "%s: %s",
						chlb_fmt_vip(&s->vip, vip, sizeof(vip)), msg);
		}
		s->vnodes_dirty = false;
		if (!s->order_dirty && !s->order_explicit)
			continue;
		rc = sync_order(s, msg, sizeof(msg));
		if (rc)
			return chlb_err(err, errlen, rc, "%s: %s",
					chlb_fmt_vip(&s->vip, vip, sizeof(vip)), msg);
		s->order_explicit = false;
		s->order_dirty = false;
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

		/* buckets the text gave are the desired state: a saved state from another host */
		if (n->order_pinned) {
			n->order_pinned = false;
			continue;
		}
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

bool chlb_svc_allow_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b)
{
	if (a->nallow != b->nallow)
		return false;
	for (__u32 i = 0; i < a->nallow; i++)
		if (a->allow[i].plen != b->allow[i].plen ||
		    !chlb_addr_eq(&a->allow[i].addr, &b->allow[i].addr))
			return false;
	return true;
}

bool chlb_svc_view_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b)
{
	return a->fwd == b->fwd && a->hash == b->hash && a->mtu == b->mtu &&
	       chlb_addr_eq(&a->encap_src, &b->encap_src) && chlb_svc_allow_equal(a, b) &&
	       a->persist_s == b->persist_s && a->persist_plen == b->persist_plen;
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
		const struct chlb_cfg_be *o = &b->be[i];

		if (!chlb_addr_eq(&o->addr, &a->be[i].addr))
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

bool chlb_svc_health_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b)
{
	struct chlb_check x, y;

	if (a->health.on_down != b->health.on_down ||
	    a->health.slow_start_s != b->health.slow_start_s ||
	    a->health.panic_pct != b->health.panic_pct || a->nbe != b->nbe)
		return false;
	chlb_check_effective(a, NULL, &x);
	chlb_check_effective(b, NULL, &y);
	if (!chlb_check_equal(&x, &y))
		return false;
	/* each backend's effective check: an override that gives the service's value is no change */
	for (__u32 i = 0; i < a->nbe; i++) {
		const struct chlb_cfg_be *o = &b->be[i];

		if (!chlb_addr_eq(&o->addr, &a->be[i].addr))
			o = chlb_svc_find_be(b, &a->be[i].addr);
		if (!o)
			return false;
		if (!chlb_be_check(&a->be[i])->set && !chlb_be_check(o)->set)
			continue; /* both the service's check, compared above */
		chlb_check_effective(a, &a->be[i], &x);
		chlb_check_effective(b, o, &y);
		if (!chlb_check_equal(&x, &y))
			return false;
	}
	return true;
}

int chlb_svc_build(const struct chlb_svc_cfg *s, struct chlb_table_be *be, struct chlb_table *t,
		   char *err, size_t errlen)
{
	return chlb_svc_build_from(s, be, NULL, t, err, errlen);
}

int chlb_svc_build_from(const struct chlb_svc_cfg *s, struct chlb_table_be *be,
			const struct chlb_table_prev *prev, struct chlb_table *t, char *err,
			size_t errlen)
{
	struct chlb_table_spec spec = { .algo = s->algo,
					.vnodes = s->vnodes,
					.table_size = s->table_size,
					.jump_norm = s->weight_norm,
					.prev = prev };
	__u32 *idx = NULL;
	int r;

	for (__u32 i = 0; i < s->nbe; i++) {
		be[i].weight = s->be[i].weight;
		memcpy(be[i].name, s->be[i].name, sizeof(be[i].name));
	}
	if (chlb_algo_has_order(s->algo) && s->order.n) {
		idx = calloc(s->order.n, sizeof(*idx));
		r = idx ? chlb_jump_order_map(&s->order, be, s->nbe, idx, err, errlen)
			: chlb_err(err, errlen, -ENOMEM, "out of memory");
		if (r)
			goto out;
		spec.jump_order = idx;
		spec.jump_nbuckets = s->order.n;
	}
	r = chlb_table_build(&spec, be, s->nbe, t, err, errlen);
out:
	free(idx);
	return r;
}

struct name_ix {
	const char *name;
	__u32 ix;
};

static int cmp_name_ix(const void *a, const void *b)
{
	return strcmp(((const struct name_ix *)a)->name, ((const struct name_ix *)b)->name);
}

int chlb_svc_buckets(const struct chlb_svc_cfg *s, __u32 *bucket)
{
	struct name_ix *be = NULL, *ord = NULL;
	__u32 no = 0;

	for (__u32 i = 0; i < s->nbe; i++)
		bucket[i] = CHLB_TOMBSTONE;
	if (!chlb_algo_has_order(s->algo) || !s->nbe || !s->order.n)
		return 0;
	be = malloc(s->nbe * sizeof(*be));
	ord = malloc(s->order.n * sizeof(*ord));
	if (!be || !ord) {
		free(be);
		free(ord);
		return -ENOMEM;
	}
	for (__u32 i = 0; i < s->nbe; i++)
		be[i] = (struct name_ix){ s->be[i].name, i };
	for (__u32 k = 0; k < s->order.n; k++)
		if (s->order.name[k][0])
			ord[no++] = (struct name_ix){ s->order.name[k], k };
	qsort(be, s->nbe, sizeof(*be), cmp_name_ix);
	qsort(ord, no, sizeof(*ord), cmp_name_ix);
	/* both sorted by name: one merge (a finalized order holds each backend once) */
	for (__u32 i = 0, k = 0; i < s->nbe && k < no;) {
		int c = strcmp(be[i].name, ord[k].name);

		if (!c)
			bucket[be[i++].ix] = ord[k++].ix;
		else if (c < 0)
			i++;
		else
			k++;
	}
	free(be);
	free(ord);
	return 0;
}
