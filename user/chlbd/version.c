// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What build this chlbd is: the release (the tree's VERSION file), the git
 * commit it was built from (none from a release tarball) and the BPF build
 * id (the first 64 bits of the SHA-256 of chlb.bpf.o, the object the
 * skeleton embeds and chlbd loads, replacing an adopted program of another
 * build in place). chlbctl compares its own with what `version` over the
 * socket returns, so a daemon still running the previous build after an
 * upgrade shows.
 *
 * The `version` request is answered before the grammar parses anything:
 * any chlbctl can ask any chlbd, whatever statements the two understand.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "chlbd.h"
#include "chlb_version.h"

void chlbd_print_version(void)
{
	printf("chlbd %s, bpf build id %s\n", CHLB_VERSION_LONG, CHLB_BPF_BUILD_ID);
}

/* "version", alone but for white space */
bool chlbd_is_version_request(const char *req)
{
	while (isspace((unsigned char)*req))
		req++;
	if (strncmp(req, "version", 7))
		return false;
	for (req += 7; *req; req++)
		if (!isspace((unsigned char)*req))
			return false;
	return true;
}

json_object *chlbd_version_json(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "version", json_object_new_string(CHLB_VERSION));
	json_object_object_add(o, "commit",
			       CHLB_COMMIT[0] ? json_object_new_string(CHLB_COMMIT) : NULL);
	json_object_object_add(o, "bpf_build_id", json_object_new_string(CHLB_BPF_BUILD_ID));
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(
	    o, "uptime_s",
	    json_object_new_int64((int64_t)((chlb_now_ns() - D.started_ns) / 1000000000ull)));
	return o;
}
