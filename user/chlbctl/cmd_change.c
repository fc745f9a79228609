// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl service|backend add|set|del|list, apply -f FILE, save, shutdown.
 * The arguments ARE a grammar statement: they are checked locally with the
 * daemon's own parser (usage errors need no daemon) and sent as one line.
 * `--force` is the grammar's `force` word: on `service add|set` (a VIP that
 * is one of chlbd's own addresses) and on `apply` (a file that deletes
 * every service).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "chlbctl.h"
#include "client.h"
#include "config/grammar.h"
#include "config/grammar_table.h"
#include "config/state.h"
#include "show.h"

/*
 * Send "[dry-run\n]HEAD BODY" as one request and report: the reply as JSON
 * with -j, the plan with --dry-run, else nothing (the exit code says it).
 */
static int send_changes(const char *head, const char *body, bool dry_run)
{
	json_object *r;
	char *req;
	int rc;

	if (asprintf(&req, "%s%s%s", dry_run ? "dry-run\n" : "", head, body) < 0)
		return CHLBCTL_EXIT_FAIL;
	rc = ctl_request(req, &r);
	free(req);
	if (rc)
		return rc;
	if (ctl.json)
		ctl_print_json(r);
	else if (dry_run)
		show_plan(r);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}

/* One change, checked locally first. */
static int send_change(const char *line, bool dry_run)
{
	int rc = ctl_check_statement(line);

	return rc ? rc : send_changes(line, "\n", dry_run);
}

static int send_read(const char *line, void (*show)(json_object *))
{
	json_object *r;
	int rc = ctl_check_statement(line);

	if (rc)
		return rc;
	rc = ctl_request(line, &r);
	if (rc)
		return rc;
	if (ctl.json)
		ctl_print_json(r);
	else
		show(r);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}

static int object_cmd(const char *obj, int argc, char **argv, void (*show)(json_object *))
{
	bool dry_run = ctl_take_flag(&argc, argv, "--dry-run", "-n");
	bool force = ctl_take_flag(&argc, argv, "--force", NULL);
	const char *verb = NULL;
	char head[64], verbs[64];
	char *line;
	int rc;

	chlb_grammar_verbs(obj, CHLB_GW_CLI, verbs, sizeof(verbs));
	if (argc < 1)
		return p_usage("'%s': missing command (%s)", obj, verbs);
	/* the table's commands of obj, by unambiguous prefix as for the top level */
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++)
		if ((s->where & CHLB_GW_CLI) && s->verb && !strcmp(s->obj, obj) && argv[0][0] &&
		    !strncmp(s->verb, argv[0], strlen(argv[0])))
			verb = verb ? "" : s->verb;
	if (!verb || !*verb)
		return p_usage("'%s': unknown %s command (expected %s)", argv[0], obj, verbs);
	if (force && (strcmp(obj, "service") || (strcmp(verb, "add") && strcmp(verb, "set"))))
		return p_usage("--force applies to service add and service set only");
	rc = ctl_check_words(argc - 1, argv + 1);
	if (rc)
		return rc;
	snprintf(head, sizeof(head), "%s %s", obj, verb);
	line = ctl_join(head, argc - 1, argv + 1);
	/* --force is the statement's `force` word: `save` writes it the same way */
	if (line && force) {
		char *f;

		if (asprintf(&f, "%s force", line) < 0)
			f = NULL;
		free(line);
		line = f;
	}
	if (!line)
		return CHLBCTL_EXIT_FAIL;
	if (!strcmp(verb, "list"))
		rc = dry_run ? p_usage("--dry-run applies to changes only") : send_read(line, show);
	else
		rc = send_change(line, dry_run);
	free(line);
	return rc;
}

int do_service(int argc, char **argv)
{
	return object_cmd("service", argc, argv, show_services);
}

int do_backend(int argc, char **argv)
{
	return object_cmd("backend", argc, argv, show_backends);
}

int do_which(int argc, char **argv)
{
	char *line;
	int rc = ctl_check_words(argc, argv);

	if (rc)
		return rc;
	line = ctl_join("which", argc, argv);
	if (!line)
		return CHLBCTL_EXIT_FAIL;
	rc = send_read(line, show_which);
	free(line);
	return rc;
}

static void show_text(json_object *r)
{
	json_object *t;

	if (json_object_object_get_ex(r, "text", &t))
		fputs(json_object_get_string(t), stdout);
}

int do_save(int argc, char **argv)
{
	if (argc)
		return p_usage("save: unexpected argument '%s'", argv[0]);
	return send_read("save", show_text);
}

/*
 * The FILE of "-f FILE" (apply, batch), the only words left once the flags
 * are taken; else NULL after a usage error naming the word that is wrong.
 */
static const char *file_arg(const char *cmd, const char *usage, int argc, char **argv)
{
	if (argc >= 1 && strcmp(argv[0], "-f") && strcmp(argv[0], "--file"))
		p_usage("%s: unexpected argument '%s' (usage: %s)", cmd, argv[0], usage);
	else if (argc < 2)
		p_usage("%s: %s%s%s (usage: %s)", cmd, argc ? "'" : "", argc ? argv[0] : "",
			argc ? "' needs a file name" : "missing -f FILE", usage);
	else if (argc > 2)
		p_usage("%s: unexpected argument '%s' (usage: %s)", cmd, argv[2], usage);
	else
		return argv[1];
	return NULL;
}

/*
 * Converge to FILE. chlbd refuses a file that would delete every service
 * (an empty one too) unless --force: ipvsadm-restore needs -C to clear.
 */
int do_apply(int argc, char **argv)
{
	bool dry_run = ctl_take_flag(&argc, argv, "--dry-run", "-n");
	bool force = ctl_take_flag(&argc, argv, "--force", NULL);
	char err[CHLB_ERR_MAX + 64];
	struct chlb_state st;
	char *text;
	int rc;

	const char *path =
	    file_arg("apply", "chlbctl apply -f FILE [--dry-run] [--force]", argc, argv);

	if (!path)
		return CHLBCTL_EXIT_USAGE;
	text = chlb_read_file(path, CHLB_STATE_MAX_BYTES, err, sizeof(err));
	if (!text)
		return p_usage("%s", err);
	/* the whole file must be valid before anything is sent: a bad line is a bad value */
	chlb_state_init(&st);
	rc = chlb_state_exec_text(&st, text, path, err, sizeof(err));
	chlb_state_free(&st);
	if (rc) {
		free(text);
		p_err_kind("usage", "%s; nothing applied", err);
		return CHLBCTL_EXIT_USAGE;
	}
	rc = send_changes(force ? "apply force\n" : "apply\n", text, dry_run);
	free(text);
	return rc;
}

/*
 * Only changes belong in a batch. chlbd takes a request by its first
 * statement, so a file starting with `stats` or `shutdown` was answered as
 * that request, exit 0, and the changes after it were dropped unread
 * (`shutdown` stopped chlbd). A line that does not parse is left to chlbd,
 * which names it.
 */
static int batch_only_changes(const char *text, const char *name)
{
	const char *p = text;
	unsigned int line = 0;
	char msg[CHLB_ERR_MAX];

	while (*p) {
		struct chlb_cmd c;

		line++;
		if (chlb_parse_next(&p, &c, msg, sizeof(msg)))
			return 0;
		if (c.kind != CHLB_CMD_NONE && !chlb_cmd_is_change(c.kind)) {
			p_err_kind("usage",
				   "%s:%u: only service/backend add, set, del belong in a config "
				   "file; nothing applied",
				   name, line);
			return CHLBCTL_EXIT_USAGE;
		}
	}
	return 0;
}

/* Several changes as ONE transaction (one swap per service): a burst. */
int do_batch(int argc, char **argv)
{
	bool dry_run = ctl_take_flag(&argc, argv, "--dry-run", "-n");
	char err[CHLB_ERR_MAX + 64];
	char *text;
	int rc;

	const char *path = file_arg("batch", "chlbctl batch -f FILE|- [--dry-run]", argc, argv);

	if (!path)
		return CHLBCTL_EXIT_USAGE;
	text = chlb_read_file(!strcmp(path, "-") ? "/dev/stdin" : path, CHLB_STATE_MAX_BYTES, err,
			      sizeof(err));
	if (!text)
		return p_usage("%s", err);
	ctl.request_name = !strcmp(path, "-") ? "stdin" : path;
	rc = batch_only_changes(text, ctl.request_name);
	if (!rc)
		rc = send_changes("", text, dry_run);
	free(text);
	return rc;
}

/*
 * chlbd closes the socket as it exits, but the process may still be on its
 * way out: wait (up to 10 s) for the pid it named to end, so "shutdown
 * returned" means "chlbd is gone" (a script may start the next one at once).
 */
static void wait_exit(json_object *r)
{
	json_object *v;
	struct pollfd p = { .events = POLLIN };

	if (!json_object_object_get_ex(r, "pid", &v))
		return; /* an older chlbd */
	p.fd = (int)syscall(SYS_pidfd_open, (pid_t)json_object_get_int(v), 0);
	if (p.fd < 0)
		return; /* already gone (ESRCH), or no pidfd: the socket's EOF is all we have */
	poll(&p, 1, 10000);
	close(p.fd);
}

int do_shutdown(int argc, char **argv)
{
	bool detach = ctl_take_flag(&argc, argv, "--detach", "detach");
	json_object *r;
	int rc;

	if (argc)
		return p_usage("shutdown: unexpected argument '%s' (expected --detach)", argv[0]);
	rc = ctl_request(detach ? "shutdown detach\n" : "shutdown\n", &r);
	if (rc)
		return rc;
	wait_exit(r);
	if (ctl.json)
		ctl_print_json(r);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}
