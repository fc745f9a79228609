// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl version (and chlbctl --version): this build's version, the git
 * commit it was built from (none from a release tarball) and its BPF build
 * id (user/chlbd/version.c says what they are), compared with the running
 * chlbd's, asked over the socket, so a daemon still running the previous
 * build after an upgrade shows.
 */
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "chlbctl.h"
#include "client.h"
#include "base/json_out.h"
#include "chlb_version.h"

/* The reply's commit: "" when chlbd was built outside git (null or absent) */
static const char *jcommit(json_object *o)
{
	json_object *v;

	return json_object_object_get_ex(o, "commit", &v) && v ? json_object_get_string(v) : "";
}

void chlbctl_print_version(void)
{
	printf("chlbctl %s, bpf build id %s\n", CHLB_VERSION_LONG, CHLB_BPF_BUILD_ID);
}

/* The verdict line: the first of version, BPF program and commit that differs. */
static void print_verdict(const char *version, const char *commit, bool same_bpf)
{
	if (strcmp(version, CHLB_VERSION))
		printf(
		    "MISMATCH: chlbd runs version %s, this chlbctl is %s%s; restart chlbd to run "
		    "the installed one\n",
		    version, CHLB_VERSION, same_bpf ? "" : " (and another BPF program)");
	else if (!same_bpf)
		printf("MISMATCH: chlbd runs another BPF program than this build's; restart it to "
		       "run this one\n");
	else if (strcmp(commit, CHLB_COMMIT))
		printf("note: the same version and BPF program, built from other sources (git %s "
		       "here, %s in chlbd)\n",
		       CHLB_COMMIT[0] ? CHLB_COMMIT : "none", commit[0] ? commit : "none");
	else
		printf("match: chlbd runs this build (%s)\n", CHLB_VERSION_LONG);
}

int do_version(int argc, char **argv)
{
	bool same_bpf, same_version, same_commit;
	const char *version, *commit;
	json_object *r, *o;
	int rc;

	if (argc)
		return p_usage("usage: chlbctl version (takes no arguments)");
	if (!ctl.json) {
		chlbctl_print_version();
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
	version = chlb_json_str(r, "version", "?");
	commit = jcommit(r);
	same_version = !strcmp(version, CHLB_VERSION);
	same_commit = !strcmp(commit, CHLB_COMMIT);
	same_bpf = !strcmp(chlb_json_str(r, "bpf_build_id", "?"), CHLB_BPF_BUILD_ID);
	if (ctl.json) {
		o = json_object_new_object();
		json_object_object_add(o, "version", json_object_new_string(CHLB_VERSION));
		json_object_object_add(o, "commit",
				       CHLB_COMMIT[0] ? json_object_new_string(CHLB_COMMIT) : NULL);
		json_object_object_add(o, "bpf_build_id",
				       json_object_new_string(CHLB_BPF_BUILD_ID));
		json_object_object_add(r, "socket", json_object_new_string(ctl.socket));
		json_object_object_add(o, "chlbd", r); /* o owns r now */
		json_object_object_add(o, "same_version", json_object_new_boolean(same_version));
		json_object_object_add(o, "same_bpf", json_object_new_boolean(same_bpf));
		json_object_object_add(
		    o, "match", json_object_new_boolean(same_version && same_bpf && same_commit));
		ctl_print_json(o);
		json_object_put(o);
		return CHLBCTL_EXIT_OK;
	}
	printf("chlbd   %s%s%s%s, bpf build id %s (running: pid %s, socket %s)\n", version,
	       commit[0] ? " (git " : "", commit, commit[0] ? ")" : "",
	       chlb_json_str(r, "bpf_build_id", "?"), chlb_json_str(r, "pid", "?"), ctl.socket);
	print_verdict(version, commit, same_bpf);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}
