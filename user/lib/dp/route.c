// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * VIP host routes in a routing table of their own, over rtnetlink
 * (dp/route.h says which routes and why). One NETLINK_ROUTE socket per call:
 * calls come once per commit, with a handful of VIPs.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "base/err.h"
#include "dp/route.h"
#include "dp/rtnl.h"

/* The table a dumped route is in: RTA_TABLE when present (tables > 255). */
static __u32 route_table(const struct rtmsg *rt, int len)
{
	const struct rtattr *a = RTM_RTA(rt);

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == RTA_TABLE && RTA_PAYLOAD(a) >= sizeof(__u32))
			return *(const __u32 *)RTA_DATA(a);
	return rt->rtm_table;
}

/* A dumped route's destination, if it is a host route of table and proto. */
static bool take_route(const struct nlmsghdr *nh, __u32 table, __u8 proto, struct chlb_addr *out)
{
	const struct rtmsg *rt = NLMSG_DATA(nh);
	int len = (int)nh->nlmsg_len - NLMSG_LENGTH(sizeof(*rt));
	const struct rtattr *a = RTM_RTA(rt);
	int alen = rt->rtm_family == AF_INET ? 4 : 16;

	if (nh->nlmsg_type != RTM_NEWROUTE || len < 0 || rt->rtm_protocol != proto ||
	    (rt->rtm_family != AF_INET && rt->rtm_family != AF_INET6) ||
	    rt->rtm_dst_len != alen * 8 || route_table(rt, len) != table)
		return false;
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type != RTA_DST || (int)RTA_PAYLOAD(a) != alen)
			continue;
		memset(out, 0, sizeof(*out));
		out->family = rt->rtm_family == AF_INET ? CHLB_AF_INET : CHLB_AF_INET6;
		memcpy(out->a, RTA_DATA(a), alen);
		return true;
	}
	return false;
}

int chlb_route_dump(__u32 table, __u8 proto, struct chlb_addr *out, int max, char *err,
		    size_t errlen)
{
	struct dp_rtnl_req r = { 0 };
	char buf[32768];
	int fd, n = 0, len, rc = 0, one = 1;
	bool done = false;

	fd = dp_rtnl_open();
	if (fd < 0)
		return chlb_syserr(err, errlen, fd, "route table %u: couldn't open rtnetlink",
				   table);
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(r.rt));
	r.nh.nlmsg_type = RTM_GETROUTE;
	r.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	r.rt.rtm_family = AF_UNSPEC; /* IPv4 and IPv6 */
	/*
	 * With strict checking the kernel dumps only this table and protocol (a
	 * host with a full BGP table in main must not send it all at every
	 * commit); without it (before 4.20) everything comes, and the filter
	 * below is the only one.
	 */
	if (!setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one))) {
		r.rt.rtm_table = table < 256 ? (unsigned char)table : RT_TABLE_UNSPEC;
		r.rt.rtm_protocol = proto;
		dp_rtnl_addattr(&r, RTA_TABLE, &table, sizeof(table));
	}
	rc = dp_rtnl_send(fd, &r);
	while (!rc && !done) {
		len = (int)recv(fd, buf, sizeof(buf), 0);
		if (len < 0) {
			rc = -errno;
			break;
		}
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned)len);
		     nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				rc = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
				rc = rc ? rc : -EIO;
				break;
			}
			if (take_route(nh, table, proto, n < max ? &out[n] : &(struct chlb_addr){}))
				n++;
		}
	}
	close(fd);
	if (rc)
		return chlb_syserr(err, errlen, rc, "route table %u: couldn't list its routes",
				   table);
	return n;
}

int chlb_route_host(bool add, __u32 table, __u8 proto, const struct chlb_addr *a, char *err,
		    size_t errlen)
{
	struct dp_rtnl_req r = { 0 };
	int alen = a->family == CHLB_AF_INET ? 4 : 16, rc;
	char buf[1024], text[64];
	struct nlmsghdr *nh;

	if (a->family != CHLB_AF_INET && a->family != CHLB_AF_INET6)
		return chlb_err(err, errlen, -EINVAL, "route table %u: not an address", table);
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(r.rt));
	r.nh.nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
	/* EXCL: never take over a route someone else put at this address */
	r.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	r.rt.rtm_family = a->family == CHLB_AF_INET ? AF_INET : AF_INET6;
	r.rt.rtm_dst_len = (unsigned char)(alen * 8);
	r.rt.rtm_table = table < 256 ? (unsigned char)table : RT_TABLE_UNSPEC;
	r.rt.rtm_protocol = proto; /* a delete matches it too: only our routes go */
	/* a delete with scope NOWHERE and type UNSPEC matches any scope and type, as `ip` does */
	r.rt.rtm_scope = add ? RT_SCOPE_UNIVERSE : RT_SCOPE_NOWHERE;
	r.rt.rtm_type = add ? RTN_BLACKHOLE : RTN_UNSPEC;
	dp_rtnl_addattr(&r, RTA_TABLE, &table, sizeof(table));
	dp_rtnl_addattr(&r, RTA_DST, a->a, alen);
	chlb_fmt_addr(a, text, sizeof(text));
	rc = dp_rtnl_talk(&r, buf, sizeof(buf));
	nh = (struct nlmsghdr *)buf;
	if (rc >= 0 &&
	    (rc < (int)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || nh->nlmsg_type != NLMSG_ERROR))
		rc = -EIO;
	else if (rc >= 0)
		rc = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
	if (rc)
		return chlb_syserr(err, errlen, rc, "route table %u: couldn't %s the route to %s",
				   table, add ? "add" : "remove", text);
	return 0;
}
