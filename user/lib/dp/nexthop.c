// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Next hop from the kernel's FIB and neighbour tables over rtnetlink:
 * RTM_GETROUTE (which interface, which gateway), then RTM_GETNEIGH for the
 * gateway (or the address itself when on-link). An unresolved neighbour is
 * poked with a UDP datagram so the kernel resolves it; the caller retries.
 * Also the route a marked health probe to a VIP takes (chlb_nh_probe_route).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "base/addr.h"
#include "base/err.h"
#include "dp/nexthop.h"
#include "dp/rtnl.h"

/* dp_rtnl_talk, with an error reply (or a bare ACK: no answer) as -errno. */
static int nl_talk(struct dp_rtnl_req *r, char *buf, size_t len)
{
	struct nlmsghdr *nh;
	int rc = dp_rtnl_talk(r, buf, len);

	if (rc < (int)sizeof(*nh))
		return rc < 0 ? rc : -EIO;
	nh = (struct nlmsghdr *)buf;
	if (nh->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(nh);

		return e->error ? e->error : -ENOENT;
	}
	return rc;
}

static int addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static int route_get(int family, const void *addr, struct chlb_nh *out)
{
	struct dp_rtnl_req r = { 0 };
	char buf[4096];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct rtattr *rta;
	int n, alen = addr_len(family), got_gw = 0;

	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	r.nh.nlmsg_type = RTM_GETROUTE;
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.rt.rtm_family = family;
	r.rt.rtm_dst_len = alen * 8;
	dp_rtnl_addattr(&r, RTA_DST, addr, alen);
	n = nl_talk(&r, buf, sizeof(buf));
	if (n < 0)
		return n == -ENETUNREACH || n == -EHOSTUNREACH ? -ENETUNREACH : n;
	if (nh->nlmsg_type != RTM_NEWROUTE)
		return -EIO;
	n = RTM_PAYLOAD(nh);
	out->ifindex = 0;
	for (rta = RTM_RTA(NLMSG_DATA(nh)); RTA_OK(rta, n); rta = RTA_NEXT(rta, n)) {
		if (rta->rta_type == RTA_OIF)
			memcpy(&out->ifindex, RTA_DATA(rta), 4);
		else if (rta->rta_type == RTA_GATEWAY && RTA_PAYLOAD(rta) == (unsigned)alen) {
			memcpy(out->via, RTA_DATA(rta), alen);
			got_gw = 1;
		}
	}
	if (!out->ifindex)
		return -ENETUNREACH;
	if (!got_gw)
		memcpy(out->via, addr, alen);
	out->via_family = family;
	return 0;
}

static int neigh_get(struct chlb_nh *nh)
{
	struct dp_rtnl_req r = { 0 };
	char buf[4096];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct ndmsg *nd;
	struct rtattr *rta;
	int n, have_mac = 0;

	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	r.nh.nlmsg_type = RTM_GETNEIGH;
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.nd.ndm_family = nh->via_family;
	r.nd.ndm_ifindex = nh->ifindex;
	dp_rtnl_addattr(&r, NDA_DST, nh->via, addr_len(nh->via_family));
	n = nl_talk(&r, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -EAGAIN : n;
	if (h->nlmsg_type != RTM_NEWNEIGH)
		return -EIO;
	nd = NLMSG_DATA(h);
	if (!(nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT)))
		return -EAGAIN;
	n = h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
	for (rta = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd))); RTA_OK(rta, n);
	     rta = RTA_NEXT(rta, n)) {
		if (rta->rta_type == NDA_LLADDR && RTA_PAYLOAD(rta) == 6) {
			memcpy(nh->dmac, RTA_DATA(rta), 6);
			have_mac = 1;
		}
	}
	return have_mac ? 0 : -EAGAIN;
}

/* Make the kernel resolve the neighbour: any datagram towards it will. */
static void neigh_poke(const struct chlb_nh *nh)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(9) };
	int fd = socket(nh->via_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	if (nh->via_family == AF_INET) {
		memcpy(&s4.sin_addr, nh->via, 4);
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&s4, sizeof(s4));
	} else {
		memcpy(&s6.sin6_addr, nh->via, 16);
		s6.sin6_scope_id = nh->ifindex;
		sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&s6, sizeof(s6));
	}
	close(fd);
}

static int our_mac(__u32 ifindex, __u8 *mac)
{
	struct ifreq ifr = { 0 };
	int fd, rc = 0;

	if (!if_indextoname(ifindex, ifr.ifr_name))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		rc = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return rc;
}

int chlb_nh_resolve(int family, const void *addr, struct chlb_nh *out)
{
	int rc;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(out, 0, sizeof(*out));
	rc = route_get(family, addr, out);
	if (rc)
		return rc;
	rc = our_mac(out->ifindex, out->smac);
	if (rc)
		return rc;
	rc = neigh_get(out);
	if (rc == -EAGAIN)
		neigh_poke(out);
	return rc;
}

int chlb_nh_probe_route(const struct chlb_addr *vip, __u32 mark, int *ifindex, char *err,
			size_t errlen)
{
	int family = vip->family == CHLB_AF_INET6 ? AF_INET6 : AF_INET, alen = addr_len(family);
	struct dp_rtnl_req r = { 0 };
	char buf[4096], txt[64];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct rtmsg *rt;
	struct rtattr *rta;
	__u32 oif = 0;
	int n;

	chlb_fmt_addr(vip, txt, sizeof(txt));
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	r.nh.nlmsg_type = RTM_GETROUTE;
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.rt.rtm_family = family;
	r.rt.rtm_dst_len = alen * 8;
	dp_rtnl_addattr(&r, RTA_DST, vip->a, alen);
	dp_rtnl_addattr(&r, RTA_MARK, &mark, sizeof(mark));
	n = nl_talk(&r, buf, sizeof(buf));
	/* unreachable, blackhole and prohibit routes answer with an error too */
	if (n == -ENETUNREACH || n == -EHOSTUNREACH || n == -EACCES || n == -EINVAL || n == -EPERM)
		return chlb_err(err, errlen, -ENETUNREACH,
				"VIP %s: no usable route for a probe (mark 0x%x): %s", txt, mark,
				strerror(-n));
	if (n < 0)
		return chlb_syserr(err, errlen, n, "VIP %s: couldn't look up its route", txt);
	if (nh->nlmsg_type != RTM_NEWROUTE)
		return chlb_syserr(err, errlen, -EIO, "VIP %s: unexpected reply to RTM_GETROUTE",
				   txt);
	rt = NLMSG_DATA(nh);
	if (rt->rtm_type == RTN_LOCAL)
		return chlb_err(err, errlen, -ENETUNREACH,
				"VIP %s is a local address of this host: a probe to it never "
				"leaves the host, so it cannot be steered to a backend",
				txt);
	if (rt->rtm_type != RTN_UNICAST)
		return chlb_err(err, errlen, -ENETUNREACH,
				"VIP %s: the route a probe takes is not a unicast route (type %u)",
				txt, rt->rtm_type);
	n = RTM_PAYLOAD(nh);
	for (rta = RTM_RTA(rt); RTA_OK(rta, n); rta = RTA_NEXT(rta, n))
		if (rta->rta_type == RTA_OIF && RTA_PAYLOAD(rta) == 4)
			memcpy(&oif, RTA_DATA(rta), 4);
	if (!oif)
		return chlb_err(err, errlen, -ENETUNREACH,
				"VIP %s: its route names no outgoing interface", txt);
	*ifindex = (int)oif;
	return 0;
}
