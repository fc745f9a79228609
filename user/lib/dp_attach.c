// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Attach / detach the data plane. XDP goes through a bpf_link, pinned as
 * <pin_dir>/link_<ifindex> so the program keeps forwarding after chlbd
 * exits and a restarted chlbd swaps in its program with one
 * bpf_link_update() (no gap). TC is a classic cls_bpf filter on clsact
 * ingress, which persists by itself (libbpf 1.1 has no tcx helpers).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp_int.h"

static int link_path(struct chlb_dp *dp, int ifindex, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/link_%d", dp->pin_dir, ifindex) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static const char *ifname(int ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

static int attach_xdp(struct chlb_dp *dp, int ifindex, bool generic, char *err, size_t errlen)
{
	struct bpf_link_create_opts lopts = { .sz = sizeof(struct bpf_link_create_opts),
					      .flags = generic ? XDP_FLAGS_SKB_MODE
							       : XDP_FLAGS_DRV_MODE };
	int prog_fd = chlb_dp_prog_fd(dp, CHLB_PROG_XDP), fd, i;
	char path[PATH_MAX], name[IF_NAMESIZE];

	if (dp->pin_dir[0]) {
		if (link_path(dp, ifindex, path, sizeof(path)))
			return -ENAMETOOLONG;
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			/* our pinned link: swap the program in place */
			int rc = bpf_link_update(fd, prog_fd, NULL);

			close(fd);
			if (rc)
				return dp_err(err, errlen, -errno,
					      "couldn't update XDP link on '%s'",
					      ifname(ifindex, name));
			return 0;
		}
	}
	fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lopts);
	if (fd < 0)
		return dp_err(err, errlen, -errno, "couldn't attach XDP%s program on '%s'",
			      generic ? " (generic)" : "", ifname(ifindex, name));
	if (dp->pin_dir[0]) {
		if (bpf_obj_pin(fd, path)) {
			int rc = -errno;

			close(fd);
			return dp_err(err, errlen, rc, "couldn't pin XDP link '%s'", path);
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
	close(fd);
	return dp_err(err, errlen, -ENOSPC, "too many unpinned XDP links");
}

static int detach_xdp(struct chlb_dp *dp, int ifindex, char *err, size_t errlen)
{
	char path[PATH_MAX], name[IF_NAMESIZE];
	int fd, i, rc = -ENOENT;

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
			/* detach even if someone else still holds a reference to the link */
			rc = bpf_link_detach(fd) ? -errno : 0;
			close(fd);
			unlink(path);
		}
	}
	if (rc)
		return dp_err(err, errlen, rc, "couldn't detach XDP from '%s'",
			      ifname(ifindex, name));
	return 0;
}

/* Our filter on ifindex's clsact ingress: the hook, and the handle/priority that name it. */
static void tc_target(int ifindex, struct bpf_tc_hook *hook, struct bpf_tc_opts *opts)
{
	*hook = (struct bpf_tc_hook){ .sz = sizeof(*hook),
				      .ifindex = ifindex,
				      .attach_point = BPF_TC_INGRESS };
	*opts = (struct bpf_tc_opts){ .sz = sizeof(*opts),
				      .handle = CHLB_DP_TC_HANDLE,
				      .priority = CHLB_DP_TC_PRIO };
}

int chlb_dp_attach(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		   size_t errlen)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts topts;
	char name[IF_NAMESIZE];
	int rc;

	tc_target(ifindex, &hook, &topts);

	switch (mode) {
	case CHLB_ATTACH_XDP:
	case CHLB_ATTACH_XDP_GENERIC:
		return attach_xdp(dp, ifindex, mode == CHLB_ATTACH_XDP_GENERIC, err, errlen);
	case CHLB_ATTACH_TC:
		rc = bpf_tc_hook_create(&hook);
		if (rc && rc != -EEXIST)
			return dp_err(err, errlen, rc, "couldn't create clsact on '%s'",
				      ifname(ifindex, name));
		topts.flags = BPF_TC_F_REPLACE;
		topts.prog_fd = chlb_dp_prog_fd(dp, CHLB_PROG_TC);
		rc = bpf_tc_attach(&hook, &topts);
		if (rc)
			return dp_err(err, errlen, rc, "couldn't attach TC program on '%s'",
				      ifname(ifindex, name));
		return 0;
	default:
		return dp_err(err, errlen, -EINVAL, "unknown attach mode %d", mode);
	}
}

int chlb_dp_detach(struct chlb_dp *dp, int ifindex, enum chlb_attach_mode mode, char *err,
		   size_t errlen)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts topts;
	char name[IF_NAMESIZE];
	int rc;

	tc_target(ifindex, &hook, &topts);

	switch (mode) {
	case CHLB_ATTACH_XDP:
	case CHLB_ATTACH_XDP_GENERIC:
		return detach_xdp(dp, ifindex, err, errlen);
	case CHLB_ATTACH_TC:
		rc = bpf_tc_detach(&hook, &topts);
		if (rc)
			return dp_err(err, errlen, rc, "couldn't detach TC program from '%s'",
				      ifname(ifindex, name));
		return 0;
	default:
		return dp_err(err, errlen, -EINVAL, "unknown attach mode %d", mode);
	}
}
