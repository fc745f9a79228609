// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* chlb's cls_bpf filters on clsact, ingress and egress alike (dp/dp_tc.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "dp/dp_int.h"
#include "dp/dp_tc.h"

#define MAX_PROG_MAPS 64

const char *dp_ifname(int ifindex, char buf[IF_NAMESIZE])
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

__u32 dp_obj_id(int fd, bool prog)
{
	struct bpf_prog_info pi = { 0 };
	struct bpf_map_info mi = { 0 };
	__u32 len = prog ? sizeof(pi) : sizeof(mi);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, prog ? (void *)&pi : (void *)&mi, &len))
		return 0;
	return prog ? pi.id : mi.id;
}

__u32 dp_pinned_id(const char *path, bool prog)
{
	int fd = bpf_obj_get(path);
	__u32 id = dp_obj_id(fd, prog);

	if (fd >= 0)
		close(fd);
	return id;
}

bool dp_prog_uses_map(__u32 prog_id, __u32 map_id, char name[BPF_OBJ_NAME_LEN])
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

int dp_rec_path(const char *pin_dir, const char *prefix, int ifindex, const char *suffix, char *buf,
		size_t len)
{
	if (snprintf(buf, len, "%s/%s%d%s", pin_dir, prefix, ifindex, suffix) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int dp_rec_ifindex(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	char *end;
	long v;

	if (strncmp(name, prefix, n) || !name[n])
		return 0;
	v = strtol(name + n, &end, 10);
	/* not "<prefix>N_new": a replacement cut short */
	return *end || v <= 0 || v > 0x7fffffff ? 0 : (int)v;
}

int dp_pin_replace(int fd, const char *path, const char *tmp)
{
	int rc;

	unlink(tmp);
	if (!bpf_obj_pin(fd, tmp) && !rename(tmp, path))
		return 0;
	rc = -errno;
	unlink(tmp);
	return rc;
}

/* Our filter's place on ifindex's clsact in direction dir. */
static void tc_target(int ifindex, enum bpf_tc_attach_point dir, struct bpf_tc_hook *hook,
		      struct bpf_tc_opts *opts)
{
	*hook =
	    (struct bpf_tc_hook){ .sz = sizeof(*hook), .ifindex = ifindex, .attach_point = dir };
	*opts = (struct bpf_tc_opts){ .sz = sizeof(*opts),
				      .handle = CHLB_DP_TC_HANDLE,
				      .priority = CHLB_DP_TC_PRIO };
}

__u32 dp_tc_prog_id(int ifindex, enum bpf_tc_attach_point dir)
{
	libbpf_print_fn_t print = libbpf_set_print(NULL);
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	int rc;

	tc_target(ifindex, dir, &hook, &o);
	rc = bpf_tc_query(&hook, &o);
	libbpf_set_print(print);
	return rc ? 0 : o.prog_id;
}

bool dp_tc_recorded(const char *pin_dir, const struct dp_tc_filter *f, int ifindex, __u32 prog_id)
{
	char path[PATH_MAX];

	return pin_dir[0] &&
	       !dp_rec_path(pin_dir, f->rec_prefix, ifindex, "", path, sizeof(path)) && prog_id &&
	       dp_pinned_id(path, true) == prog_id;
}

/* The record: the program pinned beside ("_new": bpffs names take no dot), renamed over. */
static int tc_record(struct chlb_dp *dp, const struct dp_tc_filter *f, int ifindex, char *err,
		     size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc;

	if (!dp->pin_dir[0])
		return 0;
	if (dp_rec_path(dp->pin_dir, f->rec_prefix, ifindex, "", path, sizeof(path)) ||
	    dp_rec_path(dp->pin_dir, f->rec_prefix, ifindex, "_new", tmp, sizeof(tmp)))
		return -ENAMETOOLONG;
	rc = dp_pin_replace(chlb_dp_prog_fd(dp, f->prog), path, tmp);
	if (rc)
		return chlb_syserr(err, errlen, rc, "couldn't record the %s attachment as '%s'",
				   f->rec_what, path);
	return 0;
}

int dp_tc_attach(struct chlb_dp *dp, const struct dp_tc_filter *f, int ifindex, char *err,
		 size_t errlen)
{
	libbpf_print_fn_t print;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	char name[IF_NAMESIZE];
	int rc;

	tc_target(ifindex, f->dir, &hook, &o);
	/* quietly: libbpf logs the kernel's complaint about an existing clsact */
	print = libbpf_set_print(NULL);
	rc = bpf_tc_hook_create(&hook);
	libbpf_set_print(print);
	if (rc && rc != -EEXIST)
		return chlb_syserr(err, errlen, rc, "couldn't create clsact on '%s'",
				   dp_ifname(ifindex, name));
	/* the same handle and priority: a restarted chlbd swaps its program in */
	o.flags = BPF_TC_F_REPLACE;
	o.prog_fd = chlb_dp_prog_fd(dp, f->prog);
	rc = bpf_tc_attach(&hook, &o);
	if (rc)
		return chlb_syserr(err, errlen, rc, "couldn't attach %s on '%s'%s", f->what,
				   dp_ifname(ifindex, name),
				   f->dir == BPF_TC_EGRESS ? " egress" : "");
	return tc_record(dp, f, ifindex, err, errlen);
}

int dp_tc_detach(const struct dp_tc_filter *f, int ifindex, char *err, size_t errlen)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts o;
	char name[IF_NAMESIZE];
	int rc;

	tc_target(ifindex, f->dir, &hook, &o);
	rc = bpf_tc_detach(&hook, &o);
	if (rc)
		chlb_syserr(err, errlen, rc, "couldn't detach %s from '%s'", f->what,
			    dp_ifname(ifindex, name));
	return rc;
}

void dp_tc_unrecord(struct chlb_dp *dp, const struct dp_tc_filter *f, int ifindex)
{
	char path[PATH_MAX];

	if (dp->pin_dir[0] &&
	    !dp_rec_path(dp->pin_dir, f->rec_prefix, ifindex, "", path, sizeof(path)))
		unlink(path);
}
