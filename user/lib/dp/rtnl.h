/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One rtnetlink request, as route.c (VIP host routes) and nexthop.c (FIB
 * and neighbour lookups) build and send them: a header, a route or
 * neighbour message, a few attributes. Each caller reads its own replies
 * (a dump, an ACK, or one answer).
 */
#ifndef CHLB_DP_RTNL_H
#define CHLB_DP_RTNL_H

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

struct dp_rtnl_req {
	struct nlmsghdr nh;
	union {
		struct rtmsg rt;
		struct ndmsg nd;
	};
	char attrs[64];
};

/* Attribute type with len bytes of data appended to r (attrs has room for a few). */
void dp_rtnl_addattr(struct dp_rtnl_req *r, int type, const void *data, int len);

/* A NETLINK_ROUTE socket (close-on-exec), or -errno. */
int dp_rtnl_open(void);

/* r to the kernel on fd: 0 or -errno. */
int dp_rtnl_send(int fd, const struct dp_rtnl_req *r);

#endif /* CHLB_DP_RTNL_H */
