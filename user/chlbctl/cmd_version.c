// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl version: this build's version and BPF build id (user/chlbd/version.c
 * says what they are) next to the running chlbd's, asked over the socket, so
 * a daemon still running the previous build after an upgrade shows.
 */
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "chlbctl.h"
#include "client.h"
#include "chlb_version.h"

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "?";
}

int do_version(int argc, char **argv)
{
	bool same_bpf, same_version;
	json_object *r, *o;
	int rc;

	if (argc)
		return p_usage("usage: chlbctl version (takes no arguments)");
	if (!ctl.json) {
		printf("chlbctl %-24s bpf build id %s\n", CHLB_VERSION, CHLB_BPF_BUILD_ID);
		fflush(stdout); /* before an error on stderr about the daemon */
	}
	rc = ctl_request("version\n", &r);
	if (rc) {
		if (rc == CHLBCTL_EXIT_FAIL && !ctl.json)
			p_err(
			    "chlbd at '%s' does not know 'version': it is older than this chlbctl",
			    ctl.socket);
		return rc;
	}
	same_version = !strcmp(jstr(r, "version"), CHLB_VERSION);
	same_bpf = !strcmp(jstr(r, "bpf_build_id"), CHLB_BPF_BUILD_ID);
	if (ctl.json) {
		o = json_object_new_object();
		json_object_object_add(o, "version", json_object_new_string(CHLB_VERSION));
		json_object_object_add(o, "bpf_build_id",
				       json_object_new_string(CHLB_BPF_BUILD_ID));
		json_object_object_add(r, "socket", json_object_new_string(ctl.socket));
		json_object_object_add(o, "chlbd", r); /* o owns r now */
		json_object_object_add(o, "match",
				       json_object_new_boolean(same_version && same_bpf));
		ctl_print_json(o);
		json_object_put(o);
		return CHLBCTL_EXIT_OK;
	}
	printf("chlbd   %-24s bpf build id %s (running: pid %s, socket %s)\n", jstr(r, "version"),
	       jstr(r, "bpf_build_id"), jstr(r, "pid"), ctl.socket);
	if (!same_bpf)
		printf("MISMATCH: chlbd runs another BPF program than this build's; restart it to "
		       "run this one\n");
	else if (!same_version)
		printf("note: the versions differ (the BPF program is the same)\n");
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}
