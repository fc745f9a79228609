/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One rtnetlink request, as route.c (VIP host routes) and nexthop.c (FIB
 * and neighbour lookups) build and send them: a header, a route or
 * neighbour message, a few attributes. A request with one reply (an ACK
 * or one answer) goes through dp_rtnl_talk; a dump reads its own.
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

/* r to the kernel on a socket of its own, one reply read into buf: its length, or -errno. */
int dp_rtnl_talk(const struct dp_rtnl_req *r, char *buf, size_t len);

#endif /* CHLB_DP_RTNL_H */
