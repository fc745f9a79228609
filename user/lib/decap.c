// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Attach/detach the backend decap program as a persistent TC ingress filter. */
#include <errno.h>
#include <bpf/libbpf.h>

#include "decap.h"
#include "chlb_decap.skel.h"

#define DECAP_HOOK(name, ifx) \
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, name, .ifindex = (ifx), .attach_point = BPF_TC_INGRESS)

int chlb_decap_attach(int ifindex)
{
	DECAP_HOOK(hook, ifindex);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = CHLB_DECAP_TC_HANDLE,
			    .priority = CHLB_DECAP_TC_PRIO, .flags = BPF_TC_F_REPLACE);
	struct chlb_decap_bpf *skel;
	int err;

	skel = chlb_decap_bpf__open_and_load();
	if (!skel)
		return errno ? -errno : -EINVAL;
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		goto out;
	opts.prog_fd = bpf_program__fd(skel->progs.chlb_decap);
	err = bpf_tc_attach(&hook, &opts);
out:
	/* The filter holds its own reference to the program. */
	chlb_decap_bpf__destroy(skel);
	return err;
}

int chlb_decap_detach(int ifindex)
{
	DECAP_HOOK(hook, ifindex);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = CHLB_DECAP_TC_HANDLE,
			    .priority = CHLB_DECAP_TC_PRIO);
	int err = chlb_decap_query(ifindex);

	if (err <= 0)
		return err ? err : -ENOENT;
	return bpf_tc_detach(&hook, &opts);
}

int chlb_decap_query(int ifindex)
{
	DECAP_HOOK(hook, ifindex);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = CHLB_DECAP_TC_HANDLE,
			    .priority = CHLB_DECAP_TC_PRIO);
	int err = bpf_tc_query(&hook, &opts);

	if (err == -ENOENT || err == -EINVAL)
		return 0;
	return err ? err : 1;
}
