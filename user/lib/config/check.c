// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Health-check settings: defaults, and the check a backend actually gets
 * (its service's check with the backend's explicitly set fields over it).
 * chlbd's checker and the state's text form both go through here, so a
 * default lives in one place (check.h's constants).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "config/check.h"
#include "config/state.h"

void chlb_check_defaults(struct chlb_check *c)
{
	memset(c, 0, sizeof(*c));
	c->type = CHLB_CHECK_NONE;
	c->via = CHLB_VIA_AUTO;
	c->rise = CHLB_CHECK_RISE;
	c->fall = CHLB_CHECK_FALL;
	c->expect_lo = CHLB_CHECK_EXPECT_LO;
	c->expect_hi = CHLB_CHECK_EXPECT_HI;
	c->interval_ms = CHLB_CHECK_INTERVAL_MS;
	c->timeout_ms = CHLB_CHECK_TIMEOUT_MS;
	strcpy(c->path, "/");
}

void chlb_health_policy_defaults(struct chlb_health_policy *h)
{
	memset(h, 0, sizeof(*h));
	h->on_down = CHLB_ON_DOWN_KEEP;
	h->panic_pct = CHLB_PANIC_PCT;
}

/* dst's fields that src->set names take src's values; dst->set gains them. */
void chlb_check_overlay(struct chlb_check *dst, const struct chlb_check *src)
{
	__u32 s = src->set;

	if (s & CHLB_CK_TYPE)
		dst->type = src->type;
	if (s & CHLB_CK_PATH)
		memcpy(dst->path, src->path, sizeof(dst->path));
	if (s & CHLB_CK_EXPECT) {
		dst->expect_lo = src->expect_lo;
		dst->expect_hi = src->expect_hi;
	}
	if (s & CHLB_CK_HOST)
		memcpy(dst->host, src->host, sizeof(dst->host));
	if (s & CHLB_CK_PORT)
		dst->port = src->port;
	if (s & CHLB_CK_INTERVAL)
		dst->interval_ms = src->interval_ms;
	if (s & CHLB_CK_TIMEOUT)
		dst->timeout_ms = src->timeout_ms;
	if (s & CHLB_CK_RISE)
		dst->rise = src->rise;
	if (s & CHLB_CK_FALL)
		dst->fall = src->fall;
	if (s & CHLB_CK_VIA)
		dst->via = src->via;
	dst->set |= s;
}

void chlb_check_effective(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b,
			  struct chlb_check *out)
{
	/*
	 * Start from the defaults, not from s->check alone: a service whose
	 * memory was zeroed (never through chlb_check_defaults) still yields
	 * usable values. The service's fields are taken whole (its struct
	 * holds defaults for what was not given), then the backend's set ones.
	 */
	chlb_check_defaults(out);
	if (s) {
		*out = s->check;
		if (!out->interval_ms)
			out->interval_ms = CHLB_CHECK_INTERVAL_MS;
		if (!out->timeout_ms)
			out->timeout_ms = CHLB_CHECK_TIMEOUT_MS;
		if (!out->rise)
			out->rise = CHLB_CHECK_RISE;
		if (!out->fall)
			out->fall = CHLB_CHECK_FALL;
		if (!out->expect_lo && !out->expect_hi) {
			out->expect_lo = CHLB_CHECK_EXPECT_LO;
			out->expect_hi = CHLB_CHECK_EXPECT_HI;
		}
		if (!out->path[0])
			strcpy(out->path, "/");
	}
	if (b && b->check)
		chlb_check_overlay(out, b->check);
}

/* The grammar's names (grammar_table.c): "?" for a value without one. */
static const char *const type_names[] = {
	[CHLB_CHECK_NONE] = "none", [CHLB_CHECK_TCP] = "tcp", [CHLB_CHECK_HTTP] = "http"
};
static const char *const via_names[] = {
	[CHLB_VIA_AUTO] = "auto", [CHLB_VIA_VIP] = "vip", [CHLB_VIA_DIRECT] = "direct"
};
static const char *const on_down_names[] = {
	[CHLB_ON_DOWN_KEEP] = "keep", [CHLB_ON_DOWN_RESET] = "reset"
};

static const char *name_of(const char *const *names, unsigned int n, __u8 v)
{
	return v < n && names[v] ? names[v] : "?";
}

static int parse_name(const char *const *names, unsigned int n, const char *s, __u8 *v)
{
	for (unsigned int i = 0; i < n; i++) {
		if (names[i] && !strcmp(names[i], s)) {
			*v = (__u8)i;
			return 0;
		}
	}
	return -EINVAL;
}

#define NAMES(a) a, sizeof(a) / sizeof((a)[0])

const char *chlb_check_type_name(__u8 v)
{
	return name_of(NAMES(type_names), v);
}

int chlb_check_type_parse(const char *s, __u8 *v)
{
	return parse_name(NAMES(type_names), s, v);
}

const char *chlb_check_via_name(__u8 v)
{
	return name_of(NAMES(via_names), v);
}

int chlb_check_via_parse(const char *s, __u8 *v)
{
	return parse_name(NAMES(via_names), s, v);
}

const char *chlb_on_down_name(__u8 v)
{
	return name_of(NAMES(on_down_names), v);
}

int chlb_on_down_parse(const char *s, __u8 *v)
{
	return parse_name(NAMES(on_down_names), s, v);
}

/* Appends to buf (NUL-terminated, len bytes) as snprintf would, never past its end. */
static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add(char *buf, size_t len, const char *fmt, ...)
{
	size_t at = strlen(buf);
	va_list ap;

	if (at + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
}

const char *chlb_check_fmt(const struct chlb_check *c, bool all, char *buf, size_t len)
{
	struct chlb_check d;

	if (len)
		buf[0] = '\0';
	if (!all && !c->set)
		return buf; /* a backend without an override: the common case, per save */
	chlb_check_defaults(&d);
	/* a field is written when given, or (all) when it is not the default */
#define WANT(bit, differs) ((c->set & (bit)) || (all && (differs)))
	if (WANT(CHLB_CK_TYPE, c->type != d.type))
		add(buf, len, " check %s", chlb_check_type_name(c->type));
	if (WANT(CHLB_CK_PATH, strcmp(c->path, d.path)))
		add(buf, len, " path %s", c->path);
	if (WANT(CHLB_CK_EXPECT, c->expect_lo != d.expect_lo || c->expect_hi != d.expect_hi))
		add(buf, len, " expect %u-%u", c->expect_lo, c->expect_hi);
	if (WANT(CHLB_CK_HOST, c->host[0]))
		add(buf, len, " host %s", c->host);
	if (WANT(CHLB_CK_PORT, c->port))
		add(buf, len, " port %u", c->port);
	if (WANT(CHLB_CK_INTERVAL, c->interval_ms != d.interval_ms))
		add(buf, len, " interval %u", c->interval_ms);
	if (WANT(CHLB_CK_TIMEOUT, c->timeout_ms != d.timeout_ms))
		add(buf, len, " timeout %u", c->timeout_ms);
	if (WANT(CHLB_CK_RISE, c->rise != d.rise))
		add(buf, len, " rise %u", c->rise);
	if (WANT(CHLB_CK_FALL, c->fall != d.fall))
		add(buf, len, " fall %u", c->fall);
	if (WANT(CHLB_CK_VIA, c->via != d.via))
		add(buf, len, " via %s", chlb_check_via_name(c->via));
#undef WANT
	return buf;
}

const char *chlb_health_fmt(const struct chlb_health_policy *h, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (h->on_down != CHLB_ON_DOWN_KEEP)
		add(buf, len, " on-down %s", chlb_on_down_name(h->on_down));
	if (h->slow_start_s)
		add(buf, len, " slow-start %u", h->slow_start_s);
	if (h->panic_pct != CHLB_PANIC_PCT)
		add(buf, len, " panic %u", h->panic_pct);
	return buf;
}

bool chlb_check_equal(const struct chlb_check *a, const struct chlb_check *b)
{
	return a->type == b->type && a->via == b->via && a->rise == b->rise && a->fall == b->fall &&
	       a->port == b->port && a->expect_lo == b->expect_lo && a->expect_hi == b->expect_hi &&
	       a->interval_ms == b->interval_ms && a->timeout_ms == b->timeout_ms &&
	       !strcmp(a->path, b->path) && !strcmp(a->host, b->host);
}
