// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Health-check settings: defaults, and the check a backend actually gets
 * (its service's check with the backend's explicitly set fields over it).
 * chlbd's checker and the state's text form both go through here, so a
 * default lives in one place (check.h's constants).
 */
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
	if (b)
		chlb_check_overlay(out, &b->check);
}
