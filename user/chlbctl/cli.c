// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The CLI's plumbing, below every command: the global options (ctl), the
 * one error reporter (p_err: JSON-aware), JSON output, and command dispatch
 * by unambiguous prefix (bpftool's cmd_select()).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "chlbctl.h"
#include "base/json_out.h"

struct chlbctl_opts ctl = { .socket = CHLBCTL_DEFAULT_SOCKET,
			    .timeout_ms = CHLBCTL_DEFAULT_TIMEOUT_MS };

static void vp_err(const char *kind, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (ctl.json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "error", json_object_new_string(msg));
		/* every JSON error has a kind (the docs promise one): failed, unless said */
		json_object_object_add(o, "kind", json_object_new_string(kind ? kind : "failed"));
		ctl_print_json(o);
		json_object_put(o);
	} else {
		fprintf(stderr, "chlbctl: %s\n", msg);
	}
}

void p_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err(NULL, fmt, ap);
	va_end(ap);
}

void p_err_kind(const char *kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err(kind, fmt, ap);
	va_end(ap);
}

void ctl_print_json(json_object *o)
{
	char *s = chlb_json_dump(o);

	printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
	free(s);
}

int p_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vp_err("usage", fmt, ap);
	va_end(ap);
	if (!ctl.json)
		fprintf(stderr, "try 'chlbctl help'\n");
	return CHLBCTL_EXIT_USAGE;
}

bool chlbctl_cmd_whole_only(const char *name)
{
	return !strcmp(name, "shutdown");
}

int chlbctl_cmd_select(const struct chlbctl_cmd *cmds, int argc, char **argv, const char *what)
{
	const struct chlbctl_cmd *hit = NULL, *whole = NULL;
	char names[256] = "";
	size_t len;
	int n = 0;

	if (argc < 1)
		return p_usage("missing %s", what);
	len = strlen(argv[0]);
	for (const struct chlbctl_cmd *c = cmds; c->name; c++) {
		if (!strcmp(c->name, argv[0]))
			return c->fn(argc - 1, argv + 1);
		if (!len || strncmp(c->name, argv[0], len))
			continue;
		if (chlbctl_cmd_whole_only(c->name)) {
			whole = c;
			continue;
		}
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 n ? ", " : "", c->name);
		hit = c;
		n++;
	}
	if (n > 1)
		return p_usage("ambiguous %s '%s': %s?", what, argv[0], names);
	if (!hit && whole)
		return p_usage("unknown %s '%s' ('%s' is taken only as the whole word)", what,
			       argv[0], whole->name);
	if (!hit)
		return p_usage("unknown %s '%s'", what, argv[0]);
	return hit->fn(argc - 1, argv + 1);
}
