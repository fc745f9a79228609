/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Next-hop resolution from the kernel's own FIB and neighbour tables, so the
 * control plane can fill struct chlb_backend's dmac/smac/ifindex (and set
 * CHLB_BE_F_NH_VALID) instead of the data plane calling bpf_fib_lookup per
 * packet. No operator ever types a MAC.
 */
#ifndef CHLB_NEXTHOP_H
#define CHLB_NEXTHOP_H

#include <stddef.h>
#include <linux/types.h>

struct chlb_nh {
	__u8 dmac[6];	/* neighbour (gateway or the address itself) MAC */
	__u8 smac[6];	/* our MAC on ifindex */
	__u32 ifindex;	/* egress interface */
	__u8 via[16];	/* the neighbour's address (gateway, or addr when on-link) */
	int via_family; /* AF_INET / AF_INET6 */
};

/*
 * Resolve the next hop towards addr (family AF_INET: 4 bytes, AF_INET6: 16)
 * in the caller's network namespace: RTM_GETROUTE for the egress interface
 * and gateway, then the neighbour entry for the gateway (or addr on-link).
 *
 * Returns 0 and *out; -EAGAIN when the neighbour is not (yet) resolved — a
 * UDP datagram to it was sent to make the kernel resolve it, retry shortly;
 * -ENETUNREACH without a route; other negative errnos on failure.
 */
int chlb_nh_resolve(int family, const void *addr, struct chlb_nh *out);

struct chlb_addr;

/*
 * The interface a probe marked `mark` to vip leaves by (RTM_GETROUTE with
 * RTA_MARK, so policy routing on the mark counts): where chlbd attaches
 * the probe steering program (chlb_dp_probe_attach()). 0 and *ifindex;
 * -ENETUNREACH, with a message, when there is no route (or an unreachable,
 * blackhole or prohibit one), or when the VIP is a local address of this
 * host (the probe would never leave it): `via vip` cannot work, `via auto`
 * falls back to direct; other negative errnos on failure.
 */
int chlb_nh_probe_route(const struct chlb_addr *vip, __u32 mark, int *ifindex, char *err,
			size_t errlen);

#endif /* CHLB_NEXTHOP_H */
