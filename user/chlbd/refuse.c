// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Changes chlbd refuses without `force`:
 *
 * - A new service whose VIP is one of the host's own addresses (getifaddrs()
 *   in chlbd's network namespace, loopback included): it would take the
 *   host's own traffic to that address, SSH to the LB included. The service
 *   statement's `force` word allows it and stays in the state (`save`
 *   writes it), so a saved state applies again. Only services the change
 *   adds are checked: one that became an own address later keeps working.
 * - An `apply` that would delete every service (an empty file, or one that
 *   keeps none of the current VIPs), as ipvsadm-restore needs -C to clear:
 *   `apply force` allows it.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "chlbd.h"

/* Is a an address of one of this netns's interfaces? *dev names it. */
static bool own_address(const struct chlb_addr *a, char *dev, size_t len)
{
	struct ifaddrs *ifa, *i;
	bool own = false;

	if (getifaddrs(&ifa)) {
		pr_warn("getifaddrs: %s: the host's own addresses are not checked",
			strerror(errno));
		return false;
	}
	for (i = ifa; i && !own; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa)
			continue;
		if (sa->sa_family == AF_INET && a->family == CHLB_AF_INET)
			own = !memcmp(&((const struct sockaddr_in *)sa)->sin_addr, a->a, 4);
		else if (sa->sa_family == AF_INET6 && a->family == CHLB_AF_INET6)
			own = !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, a->a, 16);
		if (own)
			snprintf(dev, len, "%s", i->ifa_name);
	}
	freeifaddrs(ifa);
	return own;
}

int chlbd_refuse(const struct chlb_state *cur, const struct chlb_state *next, bool apply,
		 bool force, char *why, size_t len)
{
	char vip[CHLB_ADDRSTR], addr[CHLB_ADDRSTR], dev[64];
	bool kept = false;

	for (__u32 i = 0; i < next->nsvc; i++) {
		const struct chlb_svc_cfg *s = &next->svc[i];

		if (s->force || chlb_state_find(cur, &s->vip) ||
		    !own_address(&s->vip.addr, dev, sizeof(dev)))
			continue;
		snprintf(why, len,
			 "'%s': %s is an address of this host (%s): the service would take the "
			 "host's own traffic to it, SSH included; add 'force' to the service "
			 "statement to mean it (chlbctl service add ... --force)",
			 chlb_fmt_vip(&s->vip, vip, sizeof(vip)),
			 chlb_fmt_addr(&s->vip.addr, addr, sizeof(addr)), dev);
		return -EPERM;
	}
	if (!apply || force || !cur->nsvc)
		return 0;
	for (__u32 i = 0; i < cur->nsvc && !kept; i++)
		kept = chlb_state_find(next, &cur->svc[i].vip);
	if (kept)
		return 0;
	snprintf(why, len,
		 "the file would delete every service (all %u of them%s); apply it with "
		 "--force (chlbctl apply -f FILE --force) if that is what you mean",
		 cur->nsvc, next->nsvc ? ", adding only others" : ": it has none");
	return -EPERM;
}
