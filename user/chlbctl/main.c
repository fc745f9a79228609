// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl [OPTIONS] OBJECT COMMAND [ARGS]: global options (before the
 * command, or among its words, as bpftool takes them), then dispatch
 * through cmds[] with unambiguous prefixes (bpftool's cmd_select()).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "chlbctl.h"
#include "client.h"
#include "config/grammar_table.h"

static const struct chlbctl_cmd cmds[] = {
	{ "help", do_help, "this text" },
	{ "sim", do_sim, "balance and disruption planner (no daemon needed)" },
	{ "decap", do_decap, "attach|detach|show DEV: backend-side ipip decap (no daemon needed)" },
	{ "service", do_service, "services (VIPs)" },
	{ "backend", do_backend, "a service's backends" },
	{ "stats", do_stats, "counters; rates with --watch" },
	{ "which", do_which, "where a flow goes, and why" },
	{ "conns", do_conns, "the connection table (entries)" },
	{ "save", do_save, "print the state in the grammar (input for apply -f)" },
	{ "apply", do_apply, "converge to a config file, atomically" },
	{ "batch", do_batch, "several changes as one transaction" },
	{ "route", do_route, "exported VIP routes (--route-table): list, withdraw, announce" },
	{ "shutdown", do_shutdown, "stop chlbd (the whole word)" },
	{ "version", do_version, "this build's version and BPF build id, and the running chlbd's" },
	{ NULL, NULL, NULL },
};

/* help --man SECTION: a generated section of the man pages (grammar_table.h; make grammar-docs) */
static int help_man(int argc, char **argv)
{
	char names[128] = "";

	if (argc == 2 && !chlb_grammar_man(stdout, argv[1]))
		return CHLBCTL_EXIT_OK;
	for (const char *const *s = chlb_grammar_man_sections; *s; s++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), " %s", *s);
	return p_usage("usage: chlbctl help --man SECTION; the sections:%s", names);
}

int do_help(int argc, char **argv)
{
	if (argc >= 1 && !strcmp(argv[0], "--man"))
		return help_man(argc, argv);
	printf("Usage: chlbctl [OPTIONS] OBJECT COMMAND [ARGS] [OPTIONS]\n\n"
	       "Options (before the command or among its words, as bpftool takes them):\n"
	       "  -j, --json          JSON output; errors as {\"error\": \"...\", \"kind\": ...}\n"
	       "  -s, --socket PATH   chlbd control socket (default %s)\n"
	       "      --timeout SECS  give chlbd this long to answer, from connect to the\n"
	       "                      whole reply (default %d; 0: no limit); then exit %d\n"
	       "  -h, --help          this text\n"
	       "      --version       this build's version; `chlbctl version` compares chlbd's\n\n"
	       "Commands (any unambiguous prefix works):\n",
	       CHLBCTL_DEFAULT_SOCKET, CHLBCTL_DEFAULT_TIMEOUT_MS / 1000, CHLBCTL_EXIT_UNREACHABLE);
	for (const struct chlbctl_cmd *c = cmds; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	printf("\n");
	control_usage();
	printf("\n");
	sim_usage();
	printf("\nExit codes: %d ok; %d rejected (does not fit the state: no such service,\n"
	       "            already there; refused without force) or failed; %d usage error or\n"
	       "            bad value, found by chlbctl or by chlbd; %d chlbd unreachable;\n"
	       "            %d bad reply from chlbd\n",
	       CHLBCTL_EXIT_OK, CHLBCTL_EXIT_FAIL, CHLBCTL_EXIT_USAGE, CHLBCTL_EXIT_UNREACHABLE,
	       CHLBCTL_EXIT_PROTOCOL);
	return CHLBCTL_EXIT_OK;
}

/* --timeout SECONDS (fractions too): 0 waits forever. */
static int parse_timeout(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 86400) {
		p_usage("'%s': bad value for --timeout (seconds, 0-86400; 0: no limit)", s);
		return -1;
	}
	ctl.timeout_ms = v > 0 && v < 0.001 ? 1 : (int)(v * 1000);
	return 0;
}

/* The command argv[0] names (exact or an unambiguous prefix), or NULL. */
static const struct chlbctl_cmd *cmd_named(const char *word)
{
	const struct chlbctl_cmd *hit = NULL;
	int n = 0;

	for (const struct chlbctl_cmd *c = cmds; c->name; c++) {
		if (!strcmp(c->name, word))
			return c;
		if (word[0] && !chlbctl_cmd_whole_only(c->name) &&
		    !strncmp(c->name, word, strlen(word))) {
			hit = c;
			n++;
		}
	}
	return n == 1 ? hit : NULL;
}

/* Is w an option of cmd that takes the next word as its value? */
static bool takes_value(const struct chlbctl_cmd *cmd, const char *w)
{
	static const char *const common[] = { "-f", "--file", "-b", "--backend" };
	static const char *const sim[] = {
		"-a",	   "--algo",	"-n",	  "--backends", "--vnodes", "--table-size",
		"--flows", "--samples", "--seed", "--weights",	"--names",  "--target-balance"
	};

	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (!strcmp(w, common[i]))
			return true;
	for (size_t i = 0; cmd && cmd->fn == do_sim && i < sizeof(sim) / sizeof(sim[0]); i++)
		if (!strcmp(w, sim[i]))
			return true;
	return false;
}

/*
 * -j/--json, -s/--socket PATH (-sPATH, --socket=PATH) and --timeout
 * SECONDS among the command's words, as before it; removed from argv. Up to a "--", and not
 * where a word is the value of the command's own option (-f FILE).
 */
static int take_global_opts(int *argc, char **argv)
{
	const struct chlbctl_cmd *cmd = cmd_named(argv[0]);
	int i, j = 1;

	/* --json first: errors in the words before it are JSON too */
	for (i = 1; i < *argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json"))
			ctl.json = true;
		else if (takes_value(cmd, argv[i]) || !strcmp(argv[i], "-s") ||
			 !strcmp(argv[i], "--socket") || !strcmp(argv[i], "--timeout"))
			i++;
	}
	for (i = 1; i < *argc; i++) {
		const char *w = argv[i];

		if (!strcmp(w, "--")) {
			while (i < *argc)
				argv[j++] = argv[i++];
			break;
		}
		if (!strcmp(w, "-j") || !strcmp(w, "--json"))
			continue;
		if (!strcmp(w, "-s") || !strcmp(w, "--socket")) {
			if (i + 1 >= *argc)
				return p_usage("'%s' needs a socket path", w);
			ctl.socket = argv[++i];
			continue;
		}
		if (!strncmp(w, "--socket=", 9) || (!strncmp(w, "-s", 2) && w[2])) {
			ctl.socket = w + (w[1] == '-' ? 9 : 2);
			continue;
		}
		if (!strcmp(w, "--timeout") || !strncmp(w, "--timeout=", 10)) {
			if (!w[9] && i + 1 >= *argc)
				return p_usage("'%s' needs a number of seconds", w);
			if (parse_timeout(w[9] ? w + 10 : argv[++i]))
				return CHLBCTL_EXIT_USAGE;
			continue;
		}
		argv[j++] = argv[i];
		if (takes_value(cmd, w) && i + 1 < *argc)
			argv[j++] = argv[++i];
	}
	*argc = j;
	argv[j] = NULL;
	return CHLBCTL_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0; /* our own message, JSON-aware */
	/* '+': options end at the first command word; commands parse their own */
	while ((c = getopt_long(argc, argv, "+js:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			ctl.json = true;
			break;
		case 's':
			ctl.socket = optarg;
			break;
		case 'T':
			if (parse_timeout(optarg))
				return CHLBCTL_EXIT_USAGE;
			break;
		case 'h':
			return do_help(0, NULL);
		case 'V': /* this build only; `chlbctl version` asks chlbd too */
			chlbctl_print_version();
			return CHLBCTL_EXIT_OK;
		default:
			return p_usage("unknown option or missing argument: '%s'",
				       argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		if (ctl.json) /* errors as JSON, as every other usage error with -j */
			return p_usage("missing command (chlbctl help lists them)");
		do_help(0, NULL);
		return CHLBCTL_EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	c = take_global_opts(&argc, argv);
	if (c)
		return c;
	return chlbctl_cmd_select(cmds, argc, argv, "command");
}
