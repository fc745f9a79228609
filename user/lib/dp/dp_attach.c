// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Attach / detach the data plane, and find every attachment chlb made.
 *
 * XDP goes through a bpf_link, pinned as <pin_dir>/link_<ifindex> so the
 * program keeps forwarding after chlbd exits and a restarted chlbd swaps in
 * its program with one bpf_link_update() (no gap). TC is a classic cls_bpf
 * filter on clsact ingress at chlb's handle and priority, which persists by
 * itself (libbpf 1.1 has no tcx helpers); the program it runs is pinned as
 * <pin_dir>/tc_<ifindex>: the record by which a later chlbd (restarted with
 * another -i or -m, or told to `shutdown --detach`) finds the filter.
 *
 * Moves: an interface asked for in another mode than it carries gets the
 * new attachment first and loses the old one after, so chlb's program
 * handles its packets throughout (XDP runs before TC: while both are
 * attached, XDP decides). Native and generic XDP cannot be attached at once,
 * so a move between them goes through TC: TC attached, old XDP link
 * detached, new one attached, TC detached.
 *
 * Ownership: a chlb program on an interface is this pin directory's when it
 * uses the views map pinned there (every program a chlbd of this pin
 * directory loaded does, the one from before a restart or an upgrade too:
 * not the vips map, userspace's registry, which no program has referenced
 * since the VIP index, so a TC filter of a chlbd from before the TC record
 * was taken for another chlbd's and an upgrade refused to start), or is the
 * one a link or record here names. Any other chlb program (chlb_xdp, chlb_tc by
 * name), or our TC handle and priority taken by another program, belongs to
 * someone else: attach refuses rather than take over its traffic, and
 * detach leaves it alone.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp/dp_int.h"
#include "dp/dp_tc.h"

#define LINK_PREFIX "link_"

static const struct dp_tc_filter tc_filter = {
	.dir = BPF_TC_INGRESS,
	.prog = CHLB_PROG_TC,
	.rec_prefix = "tc_",
	.what = "TC program",
	.rec_what = "TC",
};

static int link_path(struct chlb_dp *dp, int ifindex, char *buf, size_t len)
{
	return dp_rec_path(dp->pin_dir, LINK_PREFIX, ifindex, "", buf, len);
}

/* A pinned XDP link: its program and interface (0: the interface went away). */
static int link_info(int fd, __u32 *prog_id, int *ifindex)
{
	struct bpf_link_info li = { 0 };
	__u32 len = sizeof(li);

	if (bpf_obj_get_info_by_fd(fd, &li, &len))
		return -errno;
	*prog_id = li.prog_id;
	*ifindex = li.type == BPF_LINK_TYPE_XDP ? (int)li.xdp.ifindex : 0;
	return 0;
}

/* Which XDP mode runs prog_id on ifindex (NONE: neither). */
static enum chlb_attach_mode xdp_mode_of(int ifindex, __u32 prog_id)
{
	struct bpf_xdp_query_opts q = { .sz = sizeof(q) };

	if (!prog_id || bpf_xdp_query(ifindex, 0, &q))
		return CHLB_ATTACH_NONE;
	if (q.drv_prog_id == prog_id)
		return CHLB_ATTACH_XDP;
	if (q.skb_prog_id == prog_id)
		return CHLB_ATTACH_XDP_GENERIC;
	return CHLB_ATTACH_NONE;
}

/* The program of the filter at chlb's handle and priority on ifindex's ingress (0: none). */
static __u32 tc_prog_id(int ifindex)
{
	return dp_tc_prog_id(ifindex, BPF_TC_INGRESS);
}

/* Whose programs count as ours: see the top comment. */
struct owner {
	const char *pin_dir; /* "" when none */
	__u32 views_id;	     /* our views map; 0 when there is none yet */
};

static bool prog_ours(const struct owner *ow, int ifindex, __u32 prog_id,
		      char name[BPF_OBJ_NAME_LEN])
{
	char path[PATH_MAX];
	__u32 lprog;
	int fd, lif;

	if (dp_prog_uses_map(prog_id, ow->views_id, name))
		return true;
	if (!ow->pin_dir[0])
		return false;
	/* named by a link or record here (a pin dir whose maps were removed by hand) */
	if (dp_tc_recorded(ow->pin_dir, &tc_filter, ifindex, prog_id))
		return true;
	if (dp_rec_path(ow->pin_dir, LINK_PREFIX, ifindex, "", path, sizeof(path)))
		return false;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	if (link_info(fd, &lprog, &lif))
		lprog = 0;
	close(fd);
	return lprog == prog_id;
}

static bool chlb_prog_name(const char *name)
{
	return !strcmp(name, "chlb_xdp") || !strcmp(name, "chlb_tc");
}

/*
 * What ifindex carries that is not ours: another chlbd's program (XDP, or
 * TC at chlb's handle), a program at chlb's TC handle, and, when we attach
 * XDP, any XDP program (the kernel takes one per interface).
 */
static int check_iface(const struct owner *ow, int ifindex, enum chlb_attach_mode mode, char *err,
		       size_t errlen)
{
	struct bpf_xdp_query_opts q = { .sz = sizeof(q) };
	char name[BPF_OBJ_NAME_LEN], ifn[IF_NAMESIZE];
	const char *where = ow->pin_dir[0] ? ow->pin_dir : "this process";
	__u32 id;

	dp_ifname(ifindex, ifn);
	if (!bpf_xdp_query(ifindex, 0, &q)) {
		__u32 ids[3] = { q.drv_prog_id, q.skb_prog_id, q.hw_prog_id };

		for (int i = 0; i < 3; i++) {
			if (!ids[i] || prog_ours(ow, ifindex, ids[i], name))
				continue;
			if (chlb_prog_name(name))
				return chlb_err(
				    err, errlen, -EBUSY,
				    "'%s' carries chlb's XDP program (prog id %u) of another "
				    "chlbd, whose maps are not those pinned in %s: stop that "
				    "chlbd (`chlbctl -s ITS_SOCKET shutdown --detach`) or start "
				    "this one with its --pin-dir (bpftool net show dev %s)",
				    ifn, ids[i], where, ifn);
			if (mode != CHLB_ATTACH_TC)
				return chlb_err(
				    err, errlen, -EBUSY,
				    "'%s' already has an XDP program that is not chlb's (prog "
				    "id %u, '%s'): remove it first, or use -m tc",
				    ifn, ids[i], name);
		}
	}
	id = tc_prog_id(ifindex);
	if (id && !prog_ours(ow, ifindex, id, name)) {
		if (chlb_prog_name(name))
			return chlb_err(
			    err, errlen, -EBUSY,
			    "'%s' carries chlb's TC filter (clsact ingress, handle 0x%x, prog id "
			    "%u) of another chlbd, whose maps are not those pinned in %s: stop "
			    "that chlbd (`chlbctl -s ITS_SOCKET shutdown --detach`) or start "
			    "this one with its --pin-dir (tc filter show dev %s ingress)",
			    ifn, CHLB_DP_TC_HANDLE, id, where, ifn);
		return chlb_err(
		    err, errlen, -EBUSY,
		    "'%s': a TC filter that is not chlb's (prog id %u, '%s') holds chlb's "
		    "handle and priority 0x%x on clsact ingress: remove it first",
		    ifn, id, name, CHLB_DP_TC_HANDLE);
	}
	return 0;
}

int chlb_dp_check_iface(const char *pin_dir, int ifindex, enum chlb_attach_mode mode, char *err,
			size_t errlen)
{
	struct owner ow = { .pin_dir = pin_dir ? pin_dir : "" };
	char path[PATH_MAX];

	if (ow.pin_dir[0]) {
		if (snprintf(path, sizeof(path), "%s/%s", ow.pin_dir,
			     chlb_dp_map_name(CHLB_MAP_VIEWS)) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		ow.views_id = dp_pinned_id(path, false);
	}
	return check_iface(&ow, ifindex, mode, err, errlen);
}

bool chlb_dp_xdp_bridges(const char *pin_dir, int ifindex, enum chlb_attach_mode mode)
{
	char path[PATH_MAX];
	bool bridges = false;
	__u32 prog;
	int fd, lif;

	if (mode == CHLB_ATTACH_TC || !pin_dir || !pin_dir[0] ||
	    dp_rec_path(pin_dir, LINK_PREFIX, ifindex, "", path, sizeof(path)))
		return false;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	/* attach_xdp()'s test: a link that attach_xdp() would not update in place */
	if (!link_info(fd, &prog, &lif))
		bridges = lif && !(lif == ifindex && xdp_mode_of(ifindex, prog) == mode);
	close(fd);
	return bridges;
}

static void dp_owner(struct chlb_dp *dp, struct owner *ow)
{
	ow->pin_dir = dp->pin_dir;
	ow->views_id = dp_obj_id(chlb_dp_map_fd(dp, CHLB_MAP_VIEWS), false);
}

static int detach_xdp(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char path[PATH_MAX], name[IF_NAMESIZE];
	int fd, i, rc = -ENOENT, lif;
	__u32 prog;

	for (i = 0; i < 16; i++) {
		if (dp->link_fd[i] >= 0 && dp->link_ifindex[i] == ifindex) {
			bpf_link_detach(dp->link_fd[i]);
			close(dp->link_fd[i]);
			dp->link_fd[i] = -1;
			rc = 0;
		}
	}
	if (dp->pin_dir[0] && !link_path(dp, ifindex, path, sizeof(path))) {
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			/* a link whose interface went away is detached already */
			if (!link_info(fd, &prog, &lif) && !lif)
				rc = 0;
			else /* detach even if someone else still holds a reference to the link */
				rc = bpf_link_detach(fd) ? -errno : 0;
			close(fd);
			unlink(path);
		}
	}
	if (rc)
		return chlb_syserr(err, errlen, rc, "couldn't detach XDP from '%s'",
				   dp_ifname(ifindex, name));
	return 0;
}

/* Our filter on ifindex (if it is ours), and its record. */
static int detach_tc(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char name[IF_NAMESIZE], pname[BPF_OBJ_NAME_LEN];
	struct owner ow;
	__u32 id;
	int rc;

	dp_owner(dp, &ow);
	id = tc_prog_id(ifindex);
	if (id && !prog_ours(&ow, ifindex, id, pname))
		rc = chlb_err(
		    err, errlen, -EBUSY,
		    "the TC filter at chlb's handle on '%s' runs prog id %u ('%s'), not this "
		    "data plane's: left alone",
		    dp_ifname(ifindex, name), id, pname);
	else if (!id)
		rc = chlb_syserr(err, errlen, -ENOENT, "couldn't detach TC program from '%s'",
				 dp_ifname(ifindex, name));
	else
		rc = dp_tc_detach(&tc_filter, ifindex, err, errlen);
	dp_tc_unrecord(dp, &tc_filter, ifindex);
	return rc;
}

static int attach_tc(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	return dp_tc_attach(dp, &tc_filter, ifindex, err, errlen);
}

static int create_xdp(struct chlb_dp *dp, int ifindex, bool generic, const char *path, char *err,
		      size_t errlen)
{
	struct bpf_link_create_opts lopts = { .sz = sizeof(struct bpf_link_create_opts),
					      .flags = generic ? XDP_FLAGS_SKB_MODE
							       : XDP_FLAGS_DRV_MODE };
	int prog_fd = chlb_dp_prog_fd(dp, CHLB_PROG_XDP), fd, i;
	char name[IF_NAMESIZE];

	fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lopts);
	/* the usual first-start failure on a NIC (or lo, a bridge) whose driver has no XDP */
	if (fd < 0 && errno == EOPNOTSUPP && !generic)
		return chlb_err(err, errlen, -EOPNOTSUPP,
				"couldn't attach XDP program on '%s': %s: its driver has no native "
				"XDP; use -m xdp-generic or -m tc",
				dp_ifname(ifindex, name), chlb_strerror(-EOPNOTSUPP));
	if (fd < 0)
		return chlb_syserr(err, errlen, -errno, "couldn't attach XDP%s program on '%s'",
				   generic ? " (generic)" : "", dp_ifname(ifindex, name));
	if (dp->pin_dir[0]) {
		if (bpf_obj_pin(fd, path)) {
			int rc = -errno;

			bpf_link_detach(fd);
			close(fd);
			return chlb_syserr(err, errlen, rc, "couldn't pin XDP link '%s'", path);
		}
		close(fd); /* the pin holds the link */
		return 0;
	}
	for (i = 0; i < 16; i++) {
		if (dp->link_fd[i] < 0) {
			dp->link_fd[i] = fd;
			dp->link_ifindex[i] = ifindex;
			return 0;
		}
	}
	bpf_link_detach(fd);
	close(fd);
	return chlb_syserr(err, errlen, -ENOSPC, "too many unpinned XDP links");
}

static int attach_xdp(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		      size_t errlen)
{
	bool generic = mode == CHLB_ATTACH_XDP_GENERIC, bridged = false;
	char path[PATH_MAX] = "", name[IF_NAMESIZE];
	int fd, rc, lif;
	__u32 prog;

	if (dp->pin_dir[0]) {
		if (link_path(dp, ifindex, path, sizeof(path)))
			return -ENAMETOOLONG;
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			if (link_info(fd, &prog, &lif))
				lif = 0;
			if (lif == ifindex && xdp_mode_of(ifindex, prog) == mode) {
				/* our pinned link, same mode: swap the program in place */
				rc = bpf_link_update(fd, chlb_dp_prog_fd(dp, CHLB_PROG_XDP), NULL);
				close(fd);
				if (rc)
					return chlb_syserr(err, errlen, -errno,
							   "couldn't update XDP link on '%s'",
							   dp_ifname(ifindex, name));
				goto drop_tc;
			}
			/* the other XDP mode: TC handles the packets while the link is replaced */
			if (lif) {
				rc = attach_tc(dp, ifindex, err, errlen);
				if (rc) {
					close(fd);
					return rc;
				}
				bridged = true;
				bpf_link_detach(fd);
			}
			close(fd);
			unlink(path);
		}
	}
	rc = create_xdp(dp, ifindex, generic, path, err, errlen);
	if (rc) {
		if (bridged && err && errlen) /* TC stays: the interface keeps chlb's program */
			snprintf(err + strlen(err), errlen - strlen(err),
				 "; '%s' keeps chlb's TC program meanwhile",
				 dp_ifname(ifindex, name));
		return rc;
	}
drop_tc:
	/* XDP decides first: a TC filter of ours there (a move from -m tc) goes */
	prog = tc_prog_id(ifindex);
	if (prog) {
		char e2[256], pname[BPF_OBJ_NAME_LEN];
		struct owner ow;

		dp_owner(dp, &ow);
		if (prog_ours(&ow, ifindex, prog, pname))
			detach_tc(dp, ifindex, e2, sizeof(e2));
	}
	return 0;
}

int chlb_dp_attach(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		   size_t errlen)
{
	char path[PATH_MAX], e2[256];
	struct owner ow;
	int rc, fd;

	if (mode != CHLB_ATTACH_XDP && mode != CHLB_ATTACH_XDP_GENERIC && mode != CHLB_ATTACH_TC)
		return chlb_syserr(err, errlen, -EINVAL, "unknown attach mode %d", mode);
	dp_owner(dp, &ow);
	rc = check_iface(&ow, ifindex, mode, err, errlen);
	if (rc)
		return rc;
	if (mode != CHLB_ATTACH_TC)
		return attach_xdp(dp, ifindex, mode, err, errlen);
	rc = attach_tc(dp, ifindex, err, errlen);
	if (rc)
		return rc;
	/* TC attached: an XDP link of ours there (a move from -m xdp) goes */
	if (dp->pin_dir[0] && !link_path(dp, ifindex, path, sizeof(path))) {
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			close(fd);
			detach_xdp(dp, ifindex, e2, sizeof(e2));
		}
	}
	return 0;
}

int chlb_dp_detach(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		   size_t errlen)
{
	switch (mode) {
	case CHLB_ATTACH_XDP:
	case CHLB_ATTACH_XDP_GENERIC:
		return detach_xdp(dp, ifindex, err, errlen);
	case CHLB_ATTACH_TC:
		return detach_tc(dp, ifindex, err, errlen);
	default:
		return chlb_syserr(err, errlen, -EINVAL, "unknown attach mode %d", mode);
	}
}

static int add_att(struct chlb_dp_attachment *out, int max, int n, int ifindex,
		   enum chlb_attach_mode mode, bool live)
{
	for (int i = 0; i < n && i < max; i++)
		if (out[i].ifindex == ifindex && out[i].mode == mode)
			return n;
	if (n < max)
		out[n] =
		    (struct chlb_dp_attachment){ .ifindex = ifindex, .mode = mode, .live = live };
	return n + 1;
}

int chlb_dp_attachments(struct chlb_dp *dp, struct chlb_dp_attachment *out, int max)
{
	struct if_nameindex *ifs, *i;
	char path[PATH_MAX], pname[BPF_OBJ_NAME_LEN];
	struct dirent *e;
	struct owner ow;
	int n = 0, ifx, fd, lif;
	__u32 prog;
	DIR *d;

	dp_owner(dp, &ow);
	for (int k = 0; k < 16; k++) {
		if (dp->link_fd[k] < 0)
			continue;
		if (link_info(dp->link_fd[k], &prog, &lif))
			prog = 0;
		n = add_att(out, max, n, dp->link_ifindex[k],
			    xdp_mode_of(dp->link_ifindex[k], prog) ?: CHLB_ATTACH_XDP, true);
	}
	d = dp->pin_dir[0] ? opendir(dp->pin_dir) : NULL;
	while (d && (e = readdir(d))) {
		ifx = dp_rec_ifindex(e->d_name, LINK_PREFIX);
		if (ifx && !link_path(dp, ifx, path, sizeof(path))) {
			enum chlb_attach_mode m = CHLB_ATTACH_NONE;

			fd = bpf_obj_get(path);
			if (fd >= 0 && !link_info(fd, &prog, &lif) && lif)
				m = xdp_mode_of(lif, prog);
			else
				lif = 0;
			if (fd >= 0)
				close(fd);
			/* mode unknown (the interface went away): any XDP mode detaches it */
			n = add_att(out, max, n, ifx, m ?: CHLB_ATTACH_XDP, lif != 0);
		}
		ifx = dp_rec_ifindex(e->d_name, tc_filter.rec_prefix);
		if (ifx)
			n = add_att(out, max, n, ifx, CHLB_ATTACH_TC, tc_prog_id(ifx) != 0);
	}
	if (d)
		closedir(d);
	/* TC filters of ours that no record names (chlbds before the records) */
	ifs = if_nameindex();
	for (i = ifs; i && i->if_index; i++) {
		prog = tc_prog_id((int)i->if_index);
		if (prog && prog_ours(&ow, (int)i->if_index, prog, pname))
			n = add_att(out, max, n, (int)i->if_index, CHLB_ATTACH_TC, true);
	}
	if (ifs)
		if_freenameindex(ifs);
	return n;
}
