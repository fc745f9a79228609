// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Attach/detach the backend decap program as a persistent TC ingress filter. */
#include <errno.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "dp/decap.h"
#include "chlb_decap.skel.h"

/*
 * Plain memset + assignments rather than LIBBPF_OPTS (cppcheck can read
 * them); libbpf rejects opts whose bytes past the known fields, padding
 * included, are not zero, hence the memset.
 */
static struct bpf_tc_hook *decap_hook(struct bpf_tc_hook *h, int ifindex)
{
	memset(h, 0, sizeof(*h));
	h->sz = sizeof(*h);
	h->ifindex = ifindex;
	h->attach_point = BPF_TC_INGRESS;
	return h;
}

static struct bpf_tc_opts *decap_opts(struct bpf_tc_opts *o, int prog_fd, __u32 flags)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->handle = CHLB_DECAP_TC_HANDLE;
	o->priority = CHLB_DECAP_TC_PRIO;
	o->prog_fd = prog_fd;
	o->flags = flags;
	return o;
}

int chlb_decap_attach(int ifindex)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	struct chlb_decap_bpf *skel;
	int err;

	skel = chlb_decap_bpf__open_and_load();
	if (!skel)
		return errno ? -errno : -EINVAL;
	err = bpf_tc_hook_create(decap_hook(&hook, ifindex));
	if (err && err != -EEXIST)
		goto out;
	decap_opts(&opts, bpf_program__fd(skel->progs.chlb_decap), BPF_TC_F_REPLACE);
	err = bpf_tc_attach(&hook, &opts);
out:
	/* The filter holds its own reference to the program. */
	chlb_decap_bpf__destroy(skel);
	return err;
}

int chlb_decap_detach(int ifindex)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	int err = chlb_decap_query(ifindex);

	if (err <= 0)
		return err ? err : -ENOENT;
	return bpf_tc_detach(decap_hook(&hook, ifindex), decap_opts(&opts, 0, 0));
}

int chlb_decap_query(int ifindex)
{
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	int err = bpf_tc_query(decap_hook(&hook, ifindex), decap_opts(&opts, 0, 0));

	if (err == -ENOENT || err == -EINVAL)
		return 0;
	return err ? err : 1;
}
