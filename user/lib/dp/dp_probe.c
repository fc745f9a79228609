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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp/dp_int.h"

#define PROBE_PREFIX  "probe_"
#define MAX_PROG_MAPS 64

static int probe_rec(const struct chlb_dp *dp, int ifindex, const char *suffix, char *buf,
		     size_t len)
{
	if (snprintf(buf, len, "%s/%s%d%s", dp->pin_dir, PROBE_PREFIX, ifindex, suffix) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static const char *ifname(int ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

static void egress_target(int ifindex, struct bpf_tc_hook *hook, struct bpf_tc_opts *opts)
{
	*hook = (struct bpf_tc_hook){ .sz = sizeof(*hook),
				      .ifindex = ifindex,
				      .attach_point = BPF_TC_EGRESS };
	*opts = (struct bpf_tc_opts){ .sz = sizeof(*opts),
				      .handle = CHLB_DP_TC_HANDLE,
				      .priority = CHLB_DP_TC_PRIO };
}

/* The program at our egress handle (0: none), quietly (no clsact is no error here). */
static __u32 egress_prog_id(int ifindex)
{
	libbpf_print_fn_t print = libbpf_set_print(NULL);
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	int rc;

	egress_target(ifindex, &hook, &o);
	rc = bpf_tc_query(&hook, &o);
	libbpf_set_print(print);
	return rc ? 0 : o.prog_id;
}

static __u32 fd_id(int fd, bool prog)
{
	struct bpf_prog_info pi = { 0 };
	struct bpf_map_info mi = { 0 };
	__u32 len = prog ? sizeof(pi) : sizeof(mi);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, prog ? (void *)&pi : (void *)&mi, &len))
		return 0;
	return prog ? pi.id : mi.id;
}

/* Does prog_id use map map_id? Its name into name. */
static bool prog_uses_map(__u32 prog_id, __u32 map_id, char name[BPF_OBJ_NAME_LEN])
{
	__u32 ids[MAX_PROG_MAPS] = { 0 }, len;
	struct bpf_prog_info pi;
	bool uses = false;
	int fd;

	name[0] = '\0';
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return false;
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = MAX_PROG_MAPS;
	pi.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(pi);
	if (!bpf_obj_get_info_by_fd(fd, &pi, &len)) {
		snprintf(name, BPF_OBJ_NAME_LEN, "%s", pi.name);
		for (__u32 i = 0; i < pi.nr_map_ids && i < MAX_PROG_MAPS; i++)
			uses |= map_id && ids[i] == map_id;
	}
	close(fd);
	return uses;
}

static bool egress_ours(struct chlb_dp *dp, int ifindex, __u32 prog_id, char name[BPF_OBJ_NAME_LEN])
{
	char path[PATH_MAX];
	__u32 rec = 0;
	int fd;

	if (prog_uses_map(prog_id, fd_id(chlb_dp_map_fd(dp, CHLB_MAP_VIPS), false), name))
		return true;
	if (!dp->pin_dir[0] || probe_rec(dp, ifindex, "", path, sizeof(path)))
		return false;
	fd = bpf_obj_get(path);
	rec = fd_id(fd, true);
	if (fd >= 0)
		close(fd);
	return rec && rec == prog_id;
}

/* The record: pinned beside ("_new"), renamed over the old one, never absent. */
static int probe_record(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc;

	if (!dp->pin_dir[0])
		return 0;
	if (probe_rec(dp, ifindex, "", path, sizeof(path)) ||
	    probe_rec(dp, ifindex, "_new", tmp, sizeof(tmp)))
		return -ENAMETOOLONG;
	unlink(tmp);
	if (bpf_obj_pin(chlb_dp_prog_fd(dp, CHLB_PROG_PROBE), tmp) || rename(tmp, path)) {
		rc = -errno;
		unlink(tmp);
		return chlb_syserr(err, errlen, rc,
				   "couldn't record the probe steering attachment as '%s'", path);
	}
	return 0;
}

int chlb_dp_probe_attach(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char name[IF_NAMESIZE], pname[BPF_OBJ_NAME_LEN];
	libbpf_print_fn_t print;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	__u32 id;
	int rc;

	id = egress_prog_id(ifindex);
	if (id && !egress_ours(dp, ifindex, id, pname))
		return chlb_err(err, errlen, -EBUSY,
				"'%s': a TC filter that is not this data plane's (prog id %u, "
				"'%s') holds chlb's handle and priority 0x%x on clsact egress: "
				"remove it first (tc filter show dev %s egress)",
				ifname(ifindex, name), id, pname, CHLB_DP_TC_HANDLE,
				ifname(ifindex, name));
	egress_target(ifindex, &hook, &o);
	/* quietly: libbpf logs the kernel's complaint about an existing clsact */
	print = libbpf_set_print(NULL);
	rc = bpf_tc_hook_create(&hook);
	libbpf_set_print(print);
	if (rc && rc != -EEXIST)
		return chlb_syserr(err, errlen, rc, "couldn't create clsact on '%s'",
				   ifname(ifindex, name));
	/* the same handle and priority: a restarted chlbd swaps its program in */
	o.flags = BPF_TC_F_REPLACE;
	o.prog_fd = chlb_dp_prog_fd(dp, CHLB_PROG_PROBE);
	rc = bpf_tc_attach(&hook, &o);
	if (rc)
		return chlb_syserr(err, errlen, rc,
				   "couldn't attach the probe steering program on '%s' egress",
				   ifname(ifindex, name));
	return probe_record(dp, ifindex, err, errlen);
}

int chlb_dp_probe_detach(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char name[IF_NAMESIZE], pname[BPF_OBJ_NAME_LEN], path[PATH_MAX];
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	__u32 id = egress_prog_id(ifindex);
	int rc = 0;

	if (id && !egress_ours(dp, ifindex, id, pname))
		rc = chlb_err(err, errlen, -EBUSY,
			      "the TC filter at chlb's handle on '%s' egress runs prog id %u "
			      "('%s'), not this data plane's: left alone",
			      ifname(ifindex, name), id, pname);
	else if (id) {
		egress_target(ifindex, &hook, &o);
		rc = bpf_tc_detach(&hook, &o);
		if (rc)
			chlb_syserr(err, errlen, rc,
				    "couldn't detach the probe steering program from '%s'",
				    ifname(ifindex, name));
	}
	/* no filter: detached already (or the interface went away); the record goes */
	if (dp->pin_dir[0] && !probe_rec(dp, ifindex, "", path, sizeof(path)))
		unlink(path);
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
	const size_t plen = strlen(PROBE_PREFIX);
	struct dirent *e;
	int n = 0;
	DIR *d;

	d = dp->pin_dir[0] ? opendir(dp->pin_dir) : NULL;
	while (d && (e = readdir(d))) {
		char *end;
		long v;

		if (strncmp(e->d_name, PROBE_PREFIX, plen) || !e->d_name[plen])
			continue;
		v = strtol(e->d_name + plen, &end, 10);
		if (*end || v <= 0 || v > 0x7fffffff)
			continue; /* probe_N_new, a rename cut short */
		if (n < max)
			ifindex[n] = (int)v;
		n++;
	}
	if (d)
		closedir(d);
	return n;
}
