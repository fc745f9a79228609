/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Health checks (health/, every file and function named health_): a checker per (service, backend) with a probe
 * on a non-blocking socket in chlbd's epoll loop, the up/down state it
 * decides, and the effective state that serves: the desired state with
 * every backend's effective weight (0 when down, a fraction during slow
 * start, the configured one otherwise or in panic). Health is runtime
 * state: it changes the data plane through a normal table swap and is
 * never written to the state file.
 *
 *   health.c         the checker: sync with the desired state, scheduling,
 *                    rise/fall, transitions, slow-start steps (calls down:)
 *   health_apply.c   the effective state (weights, panic) and its apply (no fsync)
 *   health_probe.c   one probe: tcp connect, http GET status line
 *   health_reg.c     the registry of checkers (struct hc) and per-service records
 *   health_report.c  what health shows: the backend list's fields (JSON) and the
 *                    metrics families (text); reads the registry
 * The control socket's replies and /metrics call health_report.c; nothing
 * here includes ctl/ (scripts/check_layers.sh).
 */
#ifndef CHLBD_HEALTH_H
#define CHLBD_HEALTH_H

#include <stdio.h>
#include <time.h>
#include <json-c/json.h>
#include "chlbd.h"
#include "loop_ev.h"

enum hc_state {
	HC_UNKNOWN = 0, /* no decision yet: counts as up (a restart must not drain everything) */
	HC_UP,
	HC_DOWN,
};

enum hc_phase {
	HC_IDLE = 0,
	HC_CONNECTING,
	HC_EXCHANGING, /* http: request being sent, status line awaited */
};

#define HC_TEXT_MAX   128
#define HC_RAMP_STEPS 5 /* slow start: 1/5, 2/5 ... of the weight, then all of it */

struct hc {
	struct loop_ev ev; /* first: the probe socket's epoll data.ptr points here */
	struct chlb_vip vip;
	struct chlb_addr addr;
	char name[CHLB_BE_NAME_LEN];
	struct chlb_check ck; /* the effective check (chlb_check_effective) */
	__u8 state;	      /* enum hc_state */
	__u8 ok_run, fail_run;
	bool seen;    /* sync: still in the desired state */
	bool via_vip; /* the last probe went to the VIP with a mark */
	/* via vip/auto: the route to the VIP for this backend's mark, looked up now and then */
	/* via vip/auto: what its service's route lookup said (struct hc_svc's) */
	__u64 path_ns;		       /* when (0: never) */
	int path_rc;		       /* 0: a route out of an interface with steering */
	char path_err[HC_TEXT_MAX];    /* why not */
	__u64 since_ns;		       /* monotonic: last transition (or creation) */
	time_t since_wall;	       /* the same, wall clock, for people */
	char reason[HC_TEXT_MAX + 64]; /* why the last transition happened: a count, then last */
	char last[HC_TEXT_MAX]; /* last result: "ok 0.41 ms", "timeout after 1000 ms (connect)" */
	__u64 sent, failed;
	__u64 ramp_start_ns; /* slow start from here; 0: none */
	__u32 eff_weight;    /* as last applied */
	bool reset_pending;  /* on-down reset: bump its generation once the swap is done */
	/* the probe in flight */
	int fd;
	__u8 phase; /* enum hc_phase */
	__u64 t0, deadline, next_ns;
	__u32 req_off, req_len, blen;
	char buf[64];	   /* the response's first bytes: the status line */
	bool done, res_ok; /* a finished probe's result, for the checker */
	char res[HC_TEXT_MAX];
	struct hc *hnext; /* hash chain */
};

/* health_reg.c: the registry (below the checker and the effective state) */
struct hc *health_find(const struct chlb_vip *vip, const struct chlb_addr *a);
/* Every checker: list[0..*n); valid until one is added or removed. */
struct hc **health_list(__u32 *n);
void health_list_free(void);
/* A new checker of (vip, b), unknown since now; NULL without memory. */
struct hc *health_checker_new(const struct chlb_vip *vip, const struct chlb_cfg_be *b, __u64 now);
/* Unlists list[i] (its probe cancelled by the caller); freed by health_checker_bury(). */
void health_checker_del(__u32 i);
/* Frees the unlisted: after the batch of events that may still name them. */
void health_checker_bury(void);
/* Per service: is health ignored (panic)? counters */
struct hc_svc {
	struct chlb_vip vip;
	bool used, panic, all_down;
	bool synced;		 /* in the desired state at a sync already: not new */
	__u64 panics, all_downs; /* times it entered panic / had every backend down (panic 0) */
	__u32 up, total;
	/* via vip/auto: the route to the VIP, looked up for the whole service now and then */
	__u64 path_ns;
	int path_rc;
	char path_err[HC_TEXT_MAX];
};
/* The service's record (made on first use), or NULL when all are taken. */
struct hc_svc *health_svc(const struct chlb_vip *vip);
/* Forgets the records of services st does not have. */
void health_svc_keep(const struct chlb_state *st);
const char *health_state_name(__u8 st);
/*
 * Does backend b of s need a checker (a check, or slow start)? Does any of
 * s's? Without one, nothing of the health machinery touches it: a state
 * without checks costs commits nothing.
 */
bool health_be_wanted(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b);
bool health_svc_wanted(const struct chlb_svc_cfg *s);
/* The weight h serves with now (0 down, a slow-start step, or cfg_weight); panic aside. */
__u32 health_weight(const struct hc *h, __u32 cfg_weight, __u32 slow_start_s, __u64 now);

/* health_probe.c: a finished probe sets h->done, h->res_ok and h->res */
void health_probe_start(struct hc *h, __u64 now);
void health_probe_event(struct hc *h, unsigned int events, __u64 now);
void health_probe_cancel(struct hc *h);

/* health_apply.c: the effective state (below the checker) */
/*
 * Converge the data plane to desired `next` with the health overlay: as
 * chlb_rt_apply, next then describes what serves, a failed service put
 * back to cur's form. The checkers must be in step with next (health_sync).
 */
int health_apply_effective(const struct chlb_state *cur, struct chlb_state *next, char *err,
			   size_t errlen);
/*
 * The health overlay changed: swap the services whose effective form
 * changed (no fsync). One whose swap would wait for a table slot keeps its
 * form: *retry (ns, else 0) says when to call again.
 */
int health_apply_overlay(__u64 *retry, char *err, size_t errlen);
/* What serves, effective weights and all (what the engine was last given). */
const struct chlb_state *health_applied(void);
void health_applied_free(void);

/* health.c: the checker (what the rest of chlbd calls) */
/* (Re)creates checkers from st: new ones probe soon, changed checks restart, gone ones stop. */
void health_sync(const struct chlb_state *st);
/*
 * What chlbd_commit() calls instead of chlb_rt_apply(): the checkers in
 * step with next, then health_apply_effective().
 */
int health_apply_desired(const struct chlb_state *cur, struct chlb_state *next, char *err,
			 size_t errlen);
/* Due probes, timeouts, slow-start steps, pending swaps; the next deadline (ns, 0: none). */
__u64 health_tick(__u64 now);
/* A probe socket is ready. */
void health_event(struct loop_ev *e, unsigned int events);
/* Close every probe (at exit). */
void health_close_all(void);

/* health_report.c */
void health_be_json(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b, json_object *e);
void health_metrics(FILE *f);

#endif /* CHLBD_HEALTH_H */
