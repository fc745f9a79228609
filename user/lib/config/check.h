/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Health-check settings: a service's check, a backend's override of some of
 * its fields, and the service's health policy (slow start, panic). Desired
 * state, written in the one grammar:
 *
 *   service set VIP check http path /healthz expect 200-399 interval 2000 \
 *       timeout 1000 rise 2 fall 3 via vip on-down keep slow-start 30 panic 50
 *   backend set VIP ADDR check tcp port 8080
 *
 * chlbd probes (user/chlbd/health/); the probe result is runtime state,
 * never written to the state file.
 */
#ifndef CHLB_CONFIG_CHECK_H
#define CHLB_CONFIG_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

enum chlb_check_type {
	CHLB_CHECK_NONE = 0, /* no checks: every backend serves (the behaviour before checks) */
	CHLB_CHECK_TCP,	     /* a TCP connect that completes */
	CHLB_CHECK_HTTP,     /* an HTTP/1.0 GET whose status is in [expect_lo, expect_hi] */
};

enum chlb_check_via {
	CHLB_VIA_AUTO = 0, /* vip when this host has a route to the VIP, else direct */
	CHLB_VIA_VIP,	   /* to the VIP, steered to the backend as client traffic is */
	CHLB_VIA_DIRECT,   /* to the backend's own address */
};

enum chlb_on_down {
	CHLB_ON_DOWN_KEEP = 0, /* a down backend drains: its connections keep their entries */
	CHLB_ON_DOWN_RESET,    /* generation bump: its connections are decided again */
};

/* struct chlb_check.set: the fields a statement (a backend's override) gave */
enum {
	CHLB_CK_TYPE = 1u << 0,
	CHLB_CK_PATH = 1u << 1,
	CHLB_CK_EXPECT = 1u << 2,
	CHLB_CK_HOST = 1u << 3,
	CHLB_CK_PORT = 1u << 4,
	CHLB_CK_INTERVAL = 1u << 5,
	CHLB_CK_TIMEOUT = 1u << 6,
	CHLB_CK_RISE = 1u << 7,
	CHLB_CK_FALL = 1u << 8,
	CHLB_CK_VIA = 1u << 9,
};

#define CHLB_CHECK_PATH_MAX 128 /* with the NUL */
#define CHLB_CHECK_HOST_MAX 128 /* with the NUL */
#define CHLB_CHECK_TEXT_MAX 512 /* chlb_check_fmt()'s longest text, with the NUL */

/* Defaults (documented in chlb.5 through the grammar table). */
#define CHLB_CHECK_INTERVAL_MS 2000
#define CHLB_CHECK_TIMEOUT_MS  1000
#define CHLB_CHECK_RISE	       2
#define CHLB_CHECK_FALL	       3
#define CHLB_CHECK_EXPECT_LO   200
#define CHLB_CHECK_EXPECT_HI   399
#define CHLB_PANIC_PCT	       50 /* health is ignored when fewer than this % are up */

struct chlb_check {
	__u32 set; /* CHLB_CK_*: given explicitly (a backend override carries only these) */
	__u8 type; /* enum chlb_check_type */
	__u8 via;  /* enum chlb_check_via */
	__u8 rise, fall;
	__u16 port; /* 0: the VIP's port (via vip) / the same port on the backend (direct) */
	__u16 expect_lo, expect_hi;
	__u32 interval_ms, timeout_ms;
	char path[CHLB_CHECK_PATH_MAX]; /* http: "/" unless given */
	char host[CHLB_CHECK_HOST_MAX]; /* http: Host header; "" = the address probed */
};

/* A service's health policy besides its check. */
struct chlb_health_policy {
	__u8 on_down;	    /* enum chlb_on_down */
	__u8 panic_pct;	    /* 0-100; default CHLB_PANIC_PCT */
	__u32 slow_start_s; /* 0: none; a backend coming up (or added) ramps over this */
};

struct chlb_svc_cfg;
struct chlb_cfg_be;

/* Type NONE, via auto, the default interval/timeout/rise/fall/expect, path "/", set 0. */
void chlb_check_defaults(struct chlb_check *c);
/* on-down keep, panic CHLB_PANIC_PCT, no slow start. */
void chlb_health_policy_defaults(struct chlb_health_policy *h);
/* dst's fields that src->set names take src's values (dst->set gains those bits). */
void chlb_check_overlay(struct chlb_check *dst, const struct chlb_check *src);
/*
 * The check backend b of service s gets: s's check, b->check's set fields
 * over it, defaults where s has none. b may be NULL (the service's own).
 */
void chlb_check_effective(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b,
			  struct chlb_check *out);

/* The grammar's names for the enums above; "?" / -EINVAL for none. */
const char *chlb_check_type_name(__u8 v);
int chlb_check_type_parse(const char *s, __u8 *v);
const char *chlb_check_via_name(__u8 v);
int chlb_check_via_parse(const char *s, __u8 *v);
const char *chlb_on_down_name(__u8 v);
int chlb_on_down_parse(const char *s, __u8 *v);

/*
 * The check as the grammar writes it, " check http path /h interval 500"
 * (a leading space; "" for nothing): the fields c->set names, and with all
 * (a service's) also those that are not the default. Returns buf.
 */
const char *chlb_check_fmt(const struct chlb_check *c, bool all, char *buf, size_t len);
/* " on-down reset slow-start 30 panic 0": what is not the default; "" for nothing. */
const char *chlb_health_fmt(const struct chlb_health_policy *h, char *buf, size_t len);
/* Same values (set bits aside)? */
bool chlb_check_equal(const struct chlb_check *a, const struct chlb_check *b);

#endif /* CHLB_CONFIG_CHECK_H */
