/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chlbctl: command table, global options, output helpers, exit codes.
 *
 * Adding a command: write `int do_x(int argc, char **argv)` (argv[0] is the
 * first word after the command name), declare it below and add
 * { "x", do_x, "one-line summary" } to cmds[] in main.c. Objects with
 * sub-commands (service add|del|...) use their own table and
 * chlbctl_cmd_select(). The options, the reporters and the dispatch are
 * cli.c's, below every command; main.c only parses the options and
 * dispatches. Return a CHLBCTL_EXIT_* code; report errors with
 * p_err() (JSON-aware) and usage errors with p_usage().
 */
#ifndef CHLBCTL_H
#define CHLBCTL_H

#include <stdbool.h>
#include <json-c/json.h>
#include "base/err.h"

/* Exit codes (documented in `chlbctl help`, docs/chlbctl.8 and docs/operations.md). */
enum chlbctl_exit {
	CHLBCTL_EXIT_OK = 0,	/* success */
	CHLBCTL_EXIT_FAIL = 1,	/* rejected (conflicts with the state, needs force) or failed */
	CHLBCTL_EXIT_USAGE = 2, /* bad command line or value, found here or by chlbd */
	CHLBCTL_EXIT_UNREACHABLE = 3, /* cannot connect to chlbd's socket */
	CHLBCTL_EXIT_PROTOCOL = 4,    /* chlbd answered something unparsable / closed early */
};

#define CHLBCTL_DEFAULT_SOCKET	   "/run/chlb/chlb.sock"
#define CHLBCTL_DEFAULT_TIMEOUT_MS 30000 /* --timeout: connect, send and reply together */

/* Global options: before the command, or among its words (main.c). */
struct chlbctl_opts {
	bool json;	    /* -j/--json: one JSON document on stdout, errors as {"error": ...} */
	const char *socket; /* -s/--socket PATH */
	int timeout_ms;	    /* --timeout SECONDS: a request's limit; 0 = none */
	/* batch -f FILE: chlbd's "request:N: ..." errors are reported as "FILE:N: ..." */
	const char *request_name;
};
extern struct chlbctl_opts ctl;

struct chlbctl_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* Taken only as the whole word, never by a prefix: 'chlbctl sh' once stopped chlbd. */
bool chlbctl_cmd_whole_only(const char *name);

/*
 * Runs the command named by argv[0] from cmds (NULL-name terminated): an
 * exact name or an unambiguous prefix ("se" -> service, but "s" is
 * ambiguous when "stats" exists). `what` names the level for errors
 * ("command", "service command").
 */
int chlbctl_cmd_select(const struct chlbctl_cmd *cmds, int argc, char **argv, const char *what);

/* Error: {"error": "..."} on stdout in JSON mode, "chlbctl: ..." on stderr otherwise. */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with "kind": kind in JSON (chlbd's error kinds; none when kind is NULL). */
void p_err_kind(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* p_err() plus "try 'chlbctl help'"; returns CHLBCTL_EXIT_USAGE. */
int p_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints JSON (one line, valid, "/" unescaped: base/json_out.h) on stdout. */
void ctl_print_json(json_object *o);

/* commands */
int do_help(int argc, char **argv);
int do_sim(int argc, char **argv);
int do_decap(int argc, char **argv);
int do_service(int argc, char **argv);
int do_backend(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_which(int argc, char **argv);
int do_conns(int argc, char **argv);
int do_save(int argc, char **argv);
int do_apply(int argc, char **argv);
int do_batch(int argc, char **argv);
int do_shutdown(int argc, char **argv);
int do_route(int argc, char **argv); /* cmd_route.c */
int do_version(int argc, char **argv);
/* chlbctl --version: "chlbctl VERSION[ (git COMMIT)], bpf build id ID" */
void chlbctl_print_version(void);
void control_usage(void);
void sim_usage(void);

#endif /* CHLBCTL_H */
