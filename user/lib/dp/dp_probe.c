// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Attach / detach the probe steering program (bpf/chlb_probe.h) on an
 * interface's TC egress: a cls_bpf filter on clsact egress at chlb's
 * handle and priority, as the TC data plane is on ingress (dp_attach.c).
 * It persists by itself, so probes keep working across a chlbd restart;
 * its program is pinned as <pin_dir>/probe_<ifindex>, the record by which
 * a later chlbd finds (and replaces, or detaches) it.
 *
 * Ownership as in dp_attach.c: the filter at our egress handle is ours
 * when its program uses our vips map (every program a chlbd of this pin
 * directory loaded does) or is the one our record names; anything else
 * there is someone else's, and is neither replaced nor removed.
 */
#include <dirent.h>
#include <errno.h>

#include "dp/dp_int.h"
#include "dp/dp_tc.h"

static const struct dp_tc_filter probe_filter = {
	.dir = BPF_TC_EGRESS,
	.prog = CHLB_PROG_PROBE,
	.rec_prefix = "probe_",
	.what = "the probe steering program",
	.rec_what = "probe steering",
};

/* The program at our egress handle (0: none). */
static __u32 egress_prog_id(int ifindex)
{
	return dp_tc_prog_id(ifindex, BPF_TC_EGRESS);
}

static bool egress_ours(struct chlb_dp *dp, int ifindex, __u32 prog_id, char name[BPF_OBJ_NAME_LEN])
{
	return dp_prog_uses_map(prog_id, dp_obj_id(chlb_dp_map_fd(dp, CHLB_MAP_VIEWS), false),
				name) ||
	       dp_tc_recorded(dp->pin_dir, &probe_filter, ifindex, prog_id);
}

int chlb_dp_probe_attach(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char name[IF_NAMESIZE], pname[BPF_OBJ_NAME_LEN];
	__u32 id;

	id = egress_prog_id(ifindex);
	if (id && !egress_ours(dp, ifindex, id, pname))
		return chlb_err(err, errlen, -EBUSY,
				"'%s': a TC filter that is not this data plane's (prog id %u, "
				"'%s') holds chlb's handle and priority 0x%x on clsact egress: "
				"remove it first (tc filter show dev %s egress)",
				dp_ifname(ifindex, name), id, pname, CHLB_DP_TC_HANDLE,
				dp_ifname(ifindex, name));
	return dp_tc_attach(dp, &probe_filter, ifindex, err, errlen);
}

int chlb_dp_probe_detach(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char name[IF_NAMESIZE], pname[BPF_OBJ_NAME_LEN];
	__u32 id = egress_prog_id(ifindex);
	int rc = 0;

	if (id && !egress_ours(dp, ifindex, id, pname))
		rc = chlb_err(err, errlen, -EBUSY,
			      "the TC filter at chlb's handle on '%s' egress runs prog id %u "
			      "('%s'), not this data plane's: left alone",
			      dp_ifname(ifindex, name), id, pname);
	else if (id)
		rc = dp_tc_detach(&probe_filter, ifindex, err, errlen);
	/* no filter: detached already (or the interface went away); the record goes */
	dp_tc_unrecord(dp, &probe_filter, ifindex);
	return rc;
}

bool chlb_dp_probe_attached(struct chlb_dp *dp, int ifindex)
{
	char pname[BPF_OBJ_NAME_LEN];
	__u32 id = egress_prog_id(ifindex);

	return id && egress_ours(dp, ifindex, id, pname);
}

int chlb_dp_probe_attachments(struct chlb_dp *dp, int *ifindex, int max)
{
	struct dirent *e;
	int n = 0, v;
	DIR *d;

	d = dp->pin_dir[0] ? opendir(dp->pin_dir) : NULL;
	while (d && (e = readdir(d))) {
		v = dp_rec_ifindex(e->d_name, probe_filter.rec_prefix);
		if (!v)
			continue;
		if (n < max)
			ifindex[n] = v;
		n++;
	}
	if (d)
		closedir(d);
	return n;
}
