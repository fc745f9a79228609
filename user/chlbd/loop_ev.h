/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What an epoll event's data.ptr points at: a tagged source. */
#ifndef CHLBD_LOOP_EV_H
#define CHLBD_LOOP_EV_H

enum loop_ev_type {
	LOOP_EV_LISTEN,
	LOOP_EV_CLIENT,
	LOOP_EV_SIGNAL,
	LOOP_EV_TIMER,
	LOOP_EV_METRICS_LISTEN, /* metrics/metrics.c */
	LOOP_EV_METRICS_CLIENT,
	LOOP_EV_HEALTH, /* a health probe's socket (health/health_probe.c) */
	LOOP_EV_SYNC,	/* entry sync: listener, peers, the ring buffer (sync/sync.c) */
};

struct loop_ev {
	enum loop_ev_type type;
};

#endif /* CHLBD_LOOP_EV_H */
