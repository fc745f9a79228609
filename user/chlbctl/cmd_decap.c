// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl decap attach|detach|show DEV: chlb's backend-side decapsulation
 * (user/lib/dp/decap.c) on a backend's interface. Needs no chlbd: the TC filter
 * keeps the program attached after chlbctl exits.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "chlbctl.h"
#include "client.h"
#include "dp/decap.h"

static int dev_index(const char *dev)
{
	int ifindex = if_nametoindex(dev);

	if (!ifindex)
		p_err("no interface '%s': %s", dev, chlb_strerror(-errno));
	return ifindex;
}

static void p_done(const char *dev, const char *state)
{
	json_object *o;

	if (!ctl.json) {
		printf("decap %s on %s\n", state, dev);
		return;
	}
	/* json-c, not printf: an interface may be named q"x (or not be UTF-8) */
	o = json_object_new_object();
	json_object_object_add(o, "dev", json_object_new_string(dev));
	json_object_object_add(o, "decap", json_object_new_string(state));
	ctl_print_json(o);
	json_object_put(o);
}

static int decap_attach(int argc, char **argv)
{
	int ifindex, err;

	if (argc != 1)
		return p_usage("usage: chlbctl decap attach DEV");
	ifindex = dev_index(argv[0]);
	if (!ifindex)
		return CHLBCTL_EXIT_FAIL;
	err = chlb_decap_attach(ifindex);
	if (err) {
		p_err("couldn't attach the decap program on '%s': %s", argv[0], chlb_strerror(err));
		return CHLBCTL_EXIT_FAIL;
	}
	p_done(argv[0], "attached");
	return CHLBCTL_EXIT_OK;
}

static int decap_detach(int argc, char **argv)
{
	int ifindex, err;

	if (argc != 1)
		return p_usage("usage: chlbctl decap detach DEV");
	ifindex = dev_index(argv[0]);
	if (!ifindex)
		return CHLBCTL_EXIT_FAIL;
	err = chlb_decap_detach(ifindex);
	if (err) {
		p_err("couldn't detach the decap program from '%s': %s", argv[0],
		      err == -ENOENT ? "none attached" : chlb_strerror(err));
		return CHLBCTL_EXIT_FAIL;
	}
	p_done(argv[0], "detached");
	return CHLBCTL_EXIT_OK;
}

static int decap_show(int argc, char **argv)
{
	int ifindex, on;

	if (argc != 1)
		return p_usage("usage: chlbctl decap show DEV");
	ifindex = dev_index(argv[0]);
	if (!ifindex)
		return CHLBCTL_EXIT_FAIL;
	on = chlb_decap_query(ifindex);
	if (on < 0) {
		p_err("couldn't query TC filters on '%s': %s", argv[0], chlb_strerror(on));
		return CHLBCTL_EXIT_FAIL;
	}
	p_done(argv[0], on ? "attached" : "detached");
	return CHLBCTL_EXIT_OK;
}

int do_decap(int argc, char **argv)
{
	static const struct chlbctl_cmd cmds[] = {
		{ "attach", decap_attach, "attach on DEV" },
		{ "detach", decap_detach, "detach from DEV" },
		{ "show", decap_show, "is it attached on DEV" },
		{ NULL, NULL, NULL },
	};

	/* Probing for the clsact qdisc and our filter makes the kernel complain
	 * in ways that are expected here; our own errors name the cause. */
	libbpf_set_print(NULL);
	return chlbctl_cmd_select(cmds, argc, argv, "decap command");
}
