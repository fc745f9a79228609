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
 * uses the vips map pinned there (every program a chlbd of this pin
 * directory loaded does, the one from before a restart too), or is the one
 * a link or record here names. Any other chlb program (chlb_xdp, chlb_tc by
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

#define LINK_PREFIX   "link_"
#define TC_PREFIX     "tc_"
#define MAX_PROG_MAPS 64

static int rec_path(const char *pin_dir, const char *prefix, int ifindex, const char *suffix,
		    char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s%d%s", pin_dir, prefix, ifindex, suffix) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int link_path(struct chlb_dp *dp, int ifindex, char *buf, size_t len)
{
	return rec_path(dp->pin_dir, LINK_PREFIX, ifindex, "", buf, len);
}

static const char *ifname(int ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

static __u32 obj_id(int fd, bool prog)
{
	struct bpf_prog_info pi = { 0 };
	struct bpf_map_info mi = { 0 };
	__u32 len = prog ? sizeof(pi) : sizeof(mi);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, prog ? (void *)&pi : (void *)&mi, &len))
		return 0;
	return prog ? pi.id : mi.id;
}

/* The id of the object pinned at path (0: none). */
static __u32 pinned_id(const char *path, bool prog)
{
	int fd = bpf_obj_get(path);
	__u32 id = obj_id(fd, prog);

	if (fd >= 0)
		close(fd);
	return id;
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

/* Our cls_bpf filter's place on ifindex's clsact ingress. */
static void tc_target(int ifindex, struct bpf_tc_hook *hook, struct bpf_tc_opts *opts)
{
	*hook = (struct bpf_tc_hook){ .sz = sizeof(*hook),
				      .ifindex = ifindex,
				      .attach_point = BPF_TC_INGRESS };
	*opts = (struct bpf_tc_opts){ .sz = sizeof(*opts),
				      .handle = CHLB_DP_TC_HANDLE,
				      .priority = CHLB_DP_TC_PRIO };
}

/*
 * The program of the filter at chlb's handle and priority on ifindex (0:
 * none). Quietly: libbpf logs the kernel's "Parent Qdisc doesn't exists"
 * for every interface without a clsact.
 */
static __u32 tc_prog_id(int ifindex)
{
	libbpf_print_fn_t print = libbpf_set_print(NULL);
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	int rc;

	tc_target(ifindex, &hook, &o);
	rc = bpf_tc_query(&hook, &o);
	libbpf_set_print(print);
	return rc ? 0 : o.prog_id;
}

/* Whose programs count as ours: see the top comment. */
struct owner {
	const char *pin_dir; /* "" when none */
	__u32 vips_id;	     /* our vips map; 0 when there is none yet */
};

/* prog_id's name (into name), and whether it uses the map vips_id. */
static bool prog_uses(__u32 prog_id, __u32 vips_id, char name[BPF_OBJ_NAME_LEN])
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
			uses |= vips_id && ids[i] == vips_id;
	}
	close(fd);
	return uses;
}

static bool prog_ours(const struct owner *ow, int ifindex, __u32 prog_id,
		      char name[BPF_OBJ_NAME_LEN])
{
	char path[PATH_MAX];
	__u32 lprog;
	int fd, lif;

	if (prog_uses(prog_id, ow->vips_id, name))
		return true;
	if (!ow->pin_dir[0])
		return false;
	/* named by a link or record here (a pin dir whose maps were removed by hand) */
	if (!rec_path(ow->pin_dir, TC_PREFIX, ifindex, "", path, sizeof(path)) &&
	    pinned_id(path, true) == prog_id)
		return true;
	if (rec_path(ow->pin_dir, LINK_PREFIX, ifindex, "", path, sizeof(path)))
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

	ifname(ifindex, ifn);
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
		if (snprintf(path, sizeof(path), "%s/vips", ow.pin_dir) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		ow.vips_id = pinned_id(path, false);
	}
	return check_iface(&ow, ifindex, mode, err, errlen);
}

static void dp_owner(struct chlb_dp *dp, struct owner *ow)
{
	ow->pin_dir = dp->pin_dir;
	ow->vips_id = obj_id(chlb_dp_map_fd(dp, CHLB_MAP_VIPS), false);
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
				   ifname(ifindex, name));
	return 0;
}

/* Our filter on ifindex (if it is ours), and its record. */
static int detach_tc(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts topts;
	char path[PATH_MAX], name[IF_NAMESIZE], pname[BPF_OBJ_NAME_LEN];
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
		    ifname(ifindex, name), id, pname);
	else if (!id)
		rc = chlb_syserr(err, errlen, -ENOENT, "couldn't detach TC program from '%s'",
				 ifname(ifindex, name));
	else {
		tc_target(ifindex, &hook, &topts);
		rc = bpf_tc_detach(&hook, &topts);
		if (rc)
			chlb_syserr(err, errlen, rc, "couldn't detach TC program from '%s'",
				    ifname(ifindex, name));
	}
	if (dp->pin_dir[0] && !rec_path(dp->pin_dir, TC_PREFIX, ifindex, "", path, sizeof(path)))
		unlink(path);
	return rc;
}

/*
 * The TC program's record: pinned beside ("_new": bpffs names take no
 * dot), then renamed over the old one, so it is never absent.
 */
static int record_tc(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc;

	if (!dp->pin_dir[0])
		return 0;
	if (rec_path(dp->pin_dir, TC_PREFIX, ifindex, "", path, sizeof(path)) ||
	    rec_path(dp->pin_dir, TC_PREFIX, ifindex, "_new", tmp, sizeof(tmp)))
		return -ENAMETOOLONG;
	unlink(tmp);
	if (bpf_obj_pin(chlb_dp_prog_fd(dp, CHLB_PROG_TC), tmp) || rename(tmp, path)) {
		rc = -errno;
		unlink(tmp);
		return chlb_syserr(err, errlen, rc, "couldn't record the TC attachment as '%s'",
				   path);
	}
	return 0;
}

static int attach_tc(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts topts;
	char name[IF_NAMESIZE];
	int rc;

	tc_target(ifindex, &hook, &topts);
	rc = bpf_tc_hook_create(&hook);
	if (rc && rc != -EEXIST)
		return chlb_syserr(err, errlen, rc, "couldn't create clsact on '%s'",
				   ifname(ifindex, name));
	topts.flags = BPF_TC_F_REPLACE;
	topts.prog_fd = chlb_dp_prog_fd(dp, CHLB_PROG_TC);
	rc = bpf_tc_attach(&hook, &topts);
	if (rc)
		return chlb_syserr(err, errlen, rc, "couldn't attach TC program on '%s'",
				   ifname(ifindex, name));
	return record_tc(dp, ifindex, err, errlen);
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
	if (fd < 0)
		return chlb_syserr(err, errlen, -errno, "couldn't attach XDP%s program on '%s'",
				   generic ? " (generic)" : "", ifname(ifindex, name));
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
							   ifname(ifindex, name));
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
				 "; '%s' keeps chlb's TC program meanwhile", ifname(ifindex, name));
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

/* "<prefix><ifindex>" exactly: the ifindex, or 0. */
static int rec_ifindex(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	char *end;
	long v;

	if (strncmp(name, prefix, n) || !name[n])
		return 0;
	v = strtol(name + n, &end, 10);
	return *end || v <= 0 || v > 0x7fffffff ? 0 : (int)v;
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
		ifx = rec_ifindex(e->d_name, LINK_PREFIX);
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
		ifx = rec_ifindex(e->d_name, TC_PREFIX);
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
