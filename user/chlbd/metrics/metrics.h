/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Prometheus metrics over HTTP (`--metrics ADDR:PORT`, off by default),
 * served from chlbd's event loop: metrics.c.
 */
#ifndef CHLBD_METRICS_H
#define CHLBD_METRICS_H

#include <stddef.h>
#include <linux/types.h>

#define METRICS_MAX_CLIENTS 8	 /* connections at once; more get 503 */
#define METRICS_REQ_MAX	    8192 /* request line + headers; more gets 431 */
#define METRICS_CLIENT_MS   5000 /* a client's whole life: request, reply, close */

/* --metrics ADDR:PORT ([ADDR]:PORT for IPv6): 0, or -1 with a message on stderr. */
int metrics_parse(const char *arg);
/* Listen when --metrics was given (no-op otherwise): 0, or -1 (logged). */
int metrics_open(void);
/* Put the listening socket into the event loop (D.epfd): 0, or -1 (logged). */
int metrics_watch(void);

/* loop.c: events and deadlines */
void metrics_accept(void);
void metrics_client_event(void *client, unsigned int events);
void metrics_expire(__u64 now);

/* The exposition text (Prometheus text format 0.0.4), malloc'd; NULL: no memory. */
char *metrics_render(size_t *len);

#endif /* CHLBD_METRICS_H */
