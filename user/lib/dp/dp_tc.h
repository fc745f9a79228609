/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chlb's cls_bpf filters on clsact, as the TC data plane (ingress,
 * dp_attach.c) and the probe steering program (egress, dp_probe.c) both
 * keep one: a filter at chlb's handle and priority in one direction, the
 * program it runs pinned in the pin directory as its record, and the ids
 * and names by which a filter found there is told to be ours or not.
 * The two differ in which program, which record and who counts as owner;
 * the attaching, detaching and recording is the same.
 */
#ifndef CHLB_DP_TC_H
#define CHLB_DP_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <bpf/libbpf.h>

#include "dp/dp.h"

/* One kind of chlb filter. */
struct dp_tc_filter {
	enum bpf_tc_attach_point dir; /* BPF_TC_INGRESS or BPF_TC_EGRESS */
	enum chlb_dp_prog prog;	      /* the program it runs */
	const char *rec_prefix;	      /* its record: <pin_dir>/<rec_prefix><ifindex> */
	const char *what;	      /* in messages: "TC program" */
	const char *rec_what;	      /* in messages: "the <rec_what> attachment" */
};

/* ifindex's name into buf, or "#<ifindex>" when it has none (any more). */
const char *dp_ifname(int ifindex, char buf[IF_NAMESIZE]);

/* The id of the program (prog) or map behind fd (0: none, fd < 0). */
__u32 dp_obj_id(int fd, bool prog);

/* The id of the program (prog) or map pinned at path (0: none). */
__u32 dp_pinned_id(const char *path, bool prog);

/* prog_id's name (into name), and whether it uses the map map_id (0: never). */
bool dp_prog_uses_map(__u32 prog_id, __u32 map_id, char name[BPF_OBJ_NAME_LEN]);

/* "<pin_dir>/<prefix><ifindex><suffix>" into buf, or -ENAMETOOLONG. */
int dp_rec_path(const char *pin_dir, const char *prefix, int ifindex, const char *suffix, char *buf,
		size_t len);

/* The ifindex of a record named "<prefix><ifindex>" exactly, else 0. */
int dp_rec_ifindex(const char *name, const char *prefix);

/*
 * fd pinned at path, through tmp: pinned beside, then renamed over the old
 * pin, so path is never absent. 0 or -errno.
 */
int dp_pin_replace(int fd, const char *path, const char *tmp);

/*
 * The program of the filter at chlb's handle and priority on ifindex's
 * clsact in direction dir (0: none). Quietly: libbpf logs the kernel's
 * "Parent Qdisc doesn't exists" for every interface without a clsact.
 */
__u32 dp_tc_prog_id(int ifindex, enum bpf_tc_attach_point dir);

/* Does f's record for ifindex in pin_dir ("": none) name prog_id? */
bool dp_tc_recorded(const char *pin_dir, const struct dp_tc_filter *f, int ifindex, __u32 prog_id);

/*
 * f's program at chlb's handle and priority on ifindex (clsact created if
 * missing, a filter there replaced: a restarted chlbd swaps its program
 * in), then its record. The caller decided the filter there is ours.
 */
int dp_tc_attach(struct chlb_dp *dp, const struct dp_tc_filter *f, int ifindex, char *err,
		 size_t errlen);

/* The filter at chlb's handle and priority (the caller decided it is ours). */
int dp_tc_detach(const struct dp_tc_filter *f, int ifindex, char *err, size_t errlen);

/* f's record for ifindex goes (no pin directory: none). */
void dp_tc_unrecord(struct chlb_dp *dp, const struct dp_tc_filter *f, int ifindex);

#endif /* CHLB_DP_TC_H */
