// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One rtnetlink request: built, and sent on a socket of its own (dp/rtnl.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dp/rtnl.h"

void dp_rtnl_addattr(struct dp_rtnl_req *r, int type, const void *data, int len)
{
	struct rtattr *rta = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

int dp_rtnl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	return fd < 0 ? -errno : fd;
}

int dp_rtnl_send(int fd, const struct dp_rtnl_req *r)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	return sendto(fd, r, r->nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno
											 : 0;
}

int dp_rtnl_talk(const struct dp_rtnl_req *r, char *buf, size_t len)
{
	int fd = dp_rtnl_open(), rc;

	if (fd < 0)
		return fd;
	rc = dp_rtnl_send(fd, r);
	if (!rc) {
		ssize_t n = recv(fd, buf, len, 0);

		rc = n < 0 ? -errno : (int)n;
	}
	close(fd);
	return rc;
}
