/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Backend-side decapsulation (bpf/chlb_decap.bpf.c) as a classic TC ingress
 * filter. The filter keeps the program alive after the process exits, so a
 * backend needs no daemon: `chlbctl decap attach eth0` once at boot.
 */
#ifndef CHLB_DECAP_H
#define CHLB_DECAP_H

/* The filter's handle and priority on the clsact ingress hook: fixed, so
 * detach finds what attach installed and nothing else is touched. */
#define CHLB_DECAP_TC_HANDLE 0xc1b
#define CHLB_DECAP_TC_PRIO   0xc1b

/*
 * Load the decap program and attach it at TC ingress of @ifindex, replacing
 * an earlier chlb decap filter. Creates the clsact qdisc when missing.
 * Returns 0 or a negative errno.
 */
int chlb_decap_attach(int ifindex);

/* Remove the chlb decap filter from @ifindex; the clsact qdisc and other
 * filters stay. Returns 0, -ENOENT when none was attached, or -errno. */
int chlb_decap_detach(int ifindex);

/* 1 when a chlb decap filter is attached to @ifindex, 0 when not, -errno. */
int chlb_decap_query(int ifindex);

#endif /* CHLB_DECAP_H */
