// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The interfaces: -i names resolved (in --netns), checked for another
 * chlbd's program, attached as -m asks (moving a previous chlbd's
 * attachment of another mode), and detached again: what this start newly
 * attached when it fails, everything with the pins on `shutdown --detach`.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include "chlbd.h"

/* Every interface exists (in --netns): checked before anything is mounted or pinned. */
int chlbd_ifaces_resolve(void)
{
	for (int i = 0; i < D.niface; i++) {
		D.ifindex[i] = (int)if_nametoindex(D.iface[i]);
		if (!D.ifindex[i]) {
			pr_err("no interface '%s'%s%s", D.iface[i], D.netns ? " in netns " : "",
			       D.netns ? D.netns : "");
			return -ENODEV;
		}
	}
	return 0;
}

#define MAX_ATTACHMENTS 256

static const char *mode_name(enum chlb_attach_mode m)
{
	return m == CHLB_ATTACH_XDP	      ? "xdp"
	       : m == CHLB_ATTACH_XDP_GENERIC ? "xdp-generic"
	       : m == CHLB_ATTACH_TC	      ? "tc"
					      : "none";
}

static const char *ifname_of(int ifindex, char *buf)
{
	if (!if_indextoname((unsigned int)ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

static bool asked_for(int ifindex)
{
	for (int i = 0; i < D.niface; i++)
		if (D.ifindex[i] == ifindex)
			return true;
	return false;
}

/* Interfaces this start attached that carried nothing of ours: undone if it fails. */
static int fresh_ifindex[CHLBD_MAX_IFACES], nfresh;

/*
 * Before anything is pinned: an interface that carries another chlbd's
 * program (XDP, or TC at chlb's handle) is refused, never taken over.
 */
int chlbd_ifaces_check(void)
{
	char err[768];

	for (int i = 0; i < D.niface; i++) {
		int rc = chlb_dp_check_iface(D.pin_dir, D.ifindex[i], D.mode, err, sizeof(err));

		if (rc) {
			pr_err("%s", err);
			return rc;
		}
	}
	return 0;
}

/*
 * Attach as asked (-i, -m), moving what a previous chlbd of this pin
 * directory attached in another mode (chlb_dp_attach() moves it without a
 * gap), then detach what it attached where this one is not asked to be.
 */
int chlbd_attach_all(void)
{
	struct chlb_dp_attachment att[MAX_ATTACHMENTS];
	char err[768], name[IF_NAMESIZE];
	int n, rc;

	n = chlb_dp_attachments(D.dp, att, MAX_ATTACHMENTS);
	for (int i = 0; i < D.niface; i++) {
		enum chlb_attach_mode was = CHLB_ATTACH_NONE;

		for (int j = 0; j < n && j < MAX_ATTACHMENTS; j++)
			if (att[j].ifindex == D.ifindex[i] && att[j].live && was != D.mode)
				was = att[j].mode;
		rc = chlb_dp_attach(D.dp, D.ifindex[i], D.mode, err, sizeof(err));
		if (rc) {
			pr_err("%s", err);
			return rc;
		}
		D.nattached = i + 1;
		if (!was)
			fresh_ifindex[nfresh++] = D.ifindex[i];
		if (was && was != D.mode)
			pr_info("moved %s (ifindex %d) from %s to %s", D.iface[i], D.ifindex[i],
				mode_name(was), mode_name(D.mode));
		else
			pr_info("attached to %s (ifindex %d, %s)", D.iface[i], D.ifindex[i],
				mode_name(D.mode));
	}
	n = chlb_dp_attachments(D.dp, att, MAX_ATTACHMENTS);
	for (int j = 0; j < n && j < MAX_ATTACHMENTS; j++) {
		if (asked_for(att[j].ifindex) && att[j].mode == D.mode)
			continue;
		if (chlb_dp_detach(D.dp, att[j].ifindex, att[j].mode, err, sizeof(err)))
			pr_warn("%s", err);
		else
			pr_info(
			    "detached from %s (ifindex %d, %s): not asked for by -i/-m any more",
			    att[j].live ? ifname_of(att[j].ifindex, name) : "a removed interface",
			    att[j].ifindex, mode_name(att[j].mode));
	}
	/*
	 * Health probes `via vip` leave by the route to the VIP, usually an -i
	 * interface: steer them there (docs/design.md, "Probes through the data
	 * path"). Not fatal: without it such probes fail, the traffic does not.
	 */
	for (int i = 0; i < D.niface; i++)
		if (chlb_dp_probe_attach(D.dp, D.ifindex[i], err, sizeof(err)))
			pr_warn("%s: health probes via vip leaving by it are not steered", err);
	return 0;
}

/* Every attachment of this data plane (links, TC records, our TC filters), then the pins. */
void chlbd_detach_unpin(void)
{
	struct chlb_dp_attachment att[MAX_ATTACHMENTS];
	char err[768], name[IF_NAMESIZE];
	int n = chlb_dp_attachments(D.dp, att, MAX_ATTACHMENTS), probe_if[MAX_ATTACHMENTS];
	int np = chlb_dp_probe_attachments(D.dp, probe_if, MAX_ATTACHMENTS);

	for (int j = 0; j < np && j < MAX_ATTACHMENTS; j++)
		if (chlb_dp_probe_detach(D.dp, probe_if[j], err, sizeof(err)))
			pr_warn("%s", err);
	for (int j = 0; j < n && j < MAX_ATTACHMENTS; j++) {
		if (chlb_dp_detach(D.dp, att[j].ifindex, att[j].mode, err, sizeof(err)))
			pr_warn("%s", err);
		else
			pr_info("detached from %s (ifindex %d, %s)",
				att[j].live ? ifname_of(att[j].ifindex, name)
					    : "a removed interface",
				att[j].ifindex, mode_name(att[j].mode));
	}
	if (chlb_dp_unpin(D.dp, err, sizeof(err)))
		pr_warn("%s", err);
}

void chlbd_attach_undo(void)
{
	char err[768];

	for (int i = 0; i < nfresh; i++)
		if (chlb_dp_detach(D.dp, fresh_ifindex[i], D.mode, err, sizeof(err)))
			pr_warn("%s", err);
	if (nfresh)
		pr_info("start failed: detached from the %d interfaces it attached", nfresh);
}
