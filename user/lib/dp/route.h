/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Host routes for VIPs in a kernel routing table of their own, over
 * rtnetlink (RTM_GETROUTE dump, RTM_NEWROUTE, RTM_DELROUTE), for a routing
 * daemon (BIRD's kernel protocol with `learn`, FRR's `ip import-table`) to
 * announce: chlbd's route export (user/chlbd/routes.c, docs/operations.md,
 * "Several LB hosts behind ECMP (BGP)").
 *
 * Every route is a `blackhole` /32 or /128 with protocol CHLB_RTPROT: no
 * interface is needed (a dummy interface or lo would tie the route to a
 * device that can go down or be renamed), BIRD's kernel protocol imports a
 * blackhole route with `learn` like any alien route (krt_source = its
 * protocol), and eBGP announces it with the LB's own address as next hop.
 * The table is a table of record only: no `ip rule` looks it up, so the
 * blackhole drops nothing (and VIP packets never reach the kernel's FIB
 * anyway: chlb's program takes them first).
 */
#ifndef CHLB_DP_ROUTE_H
#define CHLB_DP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "base/addr.h"

/*
 * rtm_protocol of chlb's routes: 'chlb' in /etc/iproute2/rt_protos terms.
 * Unused by the protocols iproute2 names (0-18, 42, 99, 186-198 for FRR's
 * daemons); BIRD filters on it as krt_source = 250, FRR with a route-map.
 */
#define CHLB_RTPROT 250

/*
 * The host routes with protocol proto in table: their destinations into
 * out[0..max) (IPv4 and IPv6). Returns how many there are (may be > max:
 * only max were stored), or -errno with err.
 */
int chlb_route_dump(__u32 table, __u8 proto, struct chlb_addr *out, int max, char *err,
		    size_t errlen);

/*
 * Adds (add: true) or removes one blackhole host route to a in table with
 * protocol proto. Adding never replaces a route someone else put there:
 * -EEXIST then. Removing takes only a route with protocol proto: -ESRCH
 * when there is none. 0, or -errno with err.
 */
int chlb_route_host(bool add, __u32 table, __u8 proto, const struct chlb_addr *a, char *err,
		    size_t errlen);

#endif /* CHLB_DP_ROUTE_H */
