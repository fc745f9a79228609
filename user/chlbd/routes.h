/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Route export (--route-table N): one host route per VIP address chlbd can
 * serve, in kernel routing table N of its network namespace, protocol
 * CHLB_RTPROT (dp/route.h), for BIRD (or FRR) to announce to the ECMP
 * router. docs/operations.md, "Several LB hosts behind ECMP (BGP)".
 */
#ifndef CHLBD_ROUTES_H
#define CHLBD_ROUTES_H

#include <stdbool.h>
#include <json-c/json.h>
#include "config/state.h"

/*
 * Can this service take new flows, so its VIP may be announced? The one
 * place that decides: a service with at least one backend whose effective
 * weight is > 0 (configured > 0, and not down by its health check; a
 * service in panic serves every backend, so it is servable).
 */
bool chlbd_vip_servable(const struct chlb_svc_cfg *svc);

/*
 * Table N holds exactly the routes of the VIP addresses of D.state that
 * have a servable service (a VIP address with several services is routed
 * if any of them is servable), among the routes with chlb's protocol; other
 * routes in the table are left alone. Called at start (adopting what a
 * previous chlbd left), after every commit and when health changes. Failures
 * are logged, never fatal: the data plane serves whatever the routes say.
 * Returns the number of routes added or removed, or -errno. No-op without
 * --route-table. While withdrawn the table is kept empty; while not ready
 * (ready.h) nothing is added: it keeps only the routes a previous chlbd
 * left when chlbd_ready_keeps_adopted(), while their VIPs stay servable,
 * and is empty otherwise.
 */
int chlbd_routes_sync(void);

/*
 * chlbd_routes_sync() if the engine applied anything since the last one (a
 * health swap, not a commit: commits sync themselves). From the event loop:
 * cheap when nothing changed.
 */
void chlbd_routes_follow(void);

/*
 * From the event loop, every iteration: readiness re-evaluated
 * (chlbd_ready_tick()), and the routes synced when it became ready. The
 * next deadline (ns) or 0.
 */
__u64 chlbd_routes_tick(__u64 now);

/*
 * Removes every route of chlb's protocol from table N (SIGTERM, `chlbctl
 * shutdown`: BIRD withdraws, the router moves the flows to the other LBs;
 * SIGKILL leaves them, as the data plane keeps serving).
 */
void chlbd_routes_withdraw_all(void);

/*
 * `route withdraw` / `route announce` (withdraw: true/false): the table is
 * emptied and kept empty, or filled again; announce also makes a chlbd that
 * is not ready yet ready (chlbd_ready_force()). Not persisted (a restart
 * announces once ready). The reply, or an error reply without --route-table.
 */
json_object *chlbd_routes_set_withdrawn(bool withdraw);

/*
 * `route list`: the table, whether withdrawn, whether ready (and when not,
 * "withheld": why), the routes in it, the servable VIPs.
 */
json_object *reply_routes(const struct chlb_cmd *c);

#endif /* CHLBD_ROUTES_H */
