// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Control requests. A request is text in the grammar:
 *   - one read statement: service list, backend list, stats, which, conns, save;
 *   - change statements (one or many lines), optionally after a `dry-run`
 *     line: applied together as ONE transaction, so a burst (a backend
 *     leaving 100 services) costs one swap per service, and one bad line
 *     changes nothing;
 *   - `apply [force]` followed by a whole config: converge to it (force: even
 *     if that deletes every service);
 *   - `shutdown [detach]`.
 * The reply is one JSON object: {"error": "...", "kind": "usage|conflict|
 * refused|failed"} (chlbd.h) or the result.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "chlbd.h"
#include "ctl/ctl.h"
#include "conns.h"
#include "ready.h"
#include "routes.h"
#include "config/plan.h"
#include "config/grammar_table.h"

static json_object *changed_reply(__u64 t0)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "elapsed_ms",
			       json_object_new_double((double)(chlb_now_ns() - t0) / 1e6));
	return o;
}

/*
 * dry-run or commit a candidate state. What chlbd refuses without force
 * (refuse.c) is refused here; a dry run shows the plan all the same, and
 * says why it would be refused ("needs_force").
 */
static json_object *finish(struct chlb_state *next, bool dry_run, bool apply, bool force, __u64 t0)
{
	char err[CHLB_ERR_MAX * 2];
	int refused = chlbd_refuse(&D.state, next, apply, force, err, sizeof(err));
	json_object *o;

	if (dry_run) {
		/* the check the change itself makes first, with its message */
		char cap[CHLB_ERR_MAX * 2 - 32];

		if (chlbd_check_capacity(next, cap, sizeof(cap))) {
			chlb_state_free(next);
			snprintf(err, sizeof(err), "%s; nothing changed", cap);
			return chlbd_jerr_kind(err, CHLBD_ERR_FAILED);
		}
		o = chlb_plan(&D.state, next);
		chlb_state_free(next);
		if (refused)
			json_object_object_add(o, "needs_force", json_object_new_string(err));
		return o;
	}
	if (refused) {
		chlb_state_free(next);
		pr_warn("request refused: %s", err);
		return chlbd_jerr_kind(err, CHLBD_ERR_REFUSED);
	}
	if (apply) /* a whole new state: say what it changes */
		chlbd_log_diff("apply: ", &D.state, next, NULL);
	if (chlbd_commit(next, err, sizeof(err)))
		return chlbd_jerr_kind(err, CHLBD_ERR_FAILED);
	return changed_reply(t0);
}

/* A request as the handlers see it. */
struct request {
	const struct chlb_cmd *cmd; /* its first statement (after a `dry-run` line) */
	const char *stmt;	    /* the text from that statement on */
	const char *rest;	    /* the text after that statement's line */
	bool dry_run;		    /* a `dry-run` line came first */
	__u64 t0;		    /* when it arrived (chlb_now_ns()) */
};

/* An error of chlb_state_exec_text(): a bad value, or a conflict with the state. */
static json_object *exec_error(int rc, const char *msg)
{
	return chlbd_jerr_kind(msg, rc == -ENOMEM	       ? CHLBD_ERR_FAILED
				    : chlb_state_bad_value(rc) ? CHLBD_ERR_USAGE
							       : CHLBD_ERR_CONFLICT);
}

static json_object *handle_apply(const struct request *r)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX * 2];
	json_object *o;

	chlb_state_init(&next);
	/* the file alone is wrong, whatever serves: a duplicate is a bad value too */
	if (chlb_state_exec_text(&next, r->rest, "apply", err, sizeof(err))) {
		chlb_state_free(&next);
		return chlbd_jerr_kind(err, CHLBD_ERR_USAGE);
	}
	chlb_state_inherit(&next, &D.state);
	if (!r->dry_run)
		pr_info("request: apply%s (%u services)", r->cmd->force ? " force" : "", next.nsvc);
	o = finish(&next, r->dry_run, true, r->cmd->force, r->t0);
	/* a whole configuration committed: the host may be announced (ready.h); a change may not */
	if (!r->dry_run && !json_object_object_get_ex(o, "error", NULL))
		chlbd_ready_loaded(CHLBD_LOADED_APPLY);
	return o;
}

/* "what changed": the request's first statement, and how many there were */
static void log_request(const char *text)
{
	const char *p = text + strspn(text, " \t\r\n");
	int n = 0, len = (int)strcspn(p, "\n");

	for (const char *q = p; *q; q++)
		n += *q == '\n';
	pr_info("request: %.*s%s", len > 200 ? 200 : len, p, n > 1 ? " (and more lines)" : "");
}

static bool single_line(const char *text)
{
	const char *nl = strchr(text, '\n');

	return !nl || !nl[strspn(nl, " \t\r\n")];
}

static json_object *handle_changes(const struct request *r)
{
	const char *text = r->stmt;
	struct chlb_state next;
	char err[CHLB_ERR_MAX * 2];
	int rc;

	if (!r->dry_run)
		log_request(text);
	if (chlb_state_copy(&next, &D.state))
		return chlbd_jerr_kind("out of memory", CHLBD_ERR_FAILED);
	rc = chlb_state_exec_text(&next, text, "request", err, sizeof(err));
	if (rc) {
		chlb_state_free(&next);
		/* a single-line request needs no "request:1: " (or, from the
		 * transaction's final check, "request: ") prefix */
		const char *msg = err;

		if (single_line(text))
			msg = !strncmp(err, "request:1: ", 11) ? err + 11
			      : !strncmp(err, "request: ", 9)  ? err + 9
							       : err;
		return exec_error(rc, msg);
	}
	return finish(&next, r->dry_run, false, false, r->t0);
}

static json_object *handle_save(const struct chlb_cmd *c)
{
	json_object *o = json_object_new_object();
	char *text = chlb_state_format(&D.state, false);

	json_object_object_add(o, "text", json_object_new_string(text ? text : ""));
	free(text);
	return o;
}

/* route withdraw|announce (routes.c): changes no state, so a dry run has nothing to plan */
static json_object *handle_route(const struct request *r)
{
	if (r->dry_run)
		return chlbd_jerr_kind("'route' changes no state: nothing for dry-run to plan",
				       CHLBD_ERR_USAGE);
	return chlbd_routes_set_withdrawn(r->cmd->kind == CHLB_CMD_ROUTE_WITHDRAW);
}

static json_object *handle_shutdown(const struct chlb_cmd *c)
{
	json_object *o = json_object_new_object();

	D.stop = true;
	D.detach = c->detach;
	pr_info("shutdown requested%s", c->detach ? ": detaching and unpinning" : "");
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "detach", json_object_new_boolean(c->detach));
	/* chlbctl waits for this process to end before it returns */
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	return o;
}

/* First statement of text (skipping blanks/comments); *rest = text after its line. */
static int first_stmt(const char *text, struct chlb_cmd *c, const char **rest, char *err,
		      size_t errlen)
{
	const char *p = text;
	int rc;

	while (*p) {
		rc = chlb_parse_next(&p, c, err, errlen);
		if (rc)
			return rc;
		if (c->kind != CHLB_CMD_NONE) {
			*rest = p;
			return 0;
		}
	}
	c->kind = CHLB_CMD_NONE;
	return 0;
}

/*
 * Every statement a request may start with, and who answers it: handler
 * registration is this table alone. A read-only request is answered even
 * in the middle of a change (ctl_server.c answers it between services, against
 * the state before the change); the others wait for it to finish. Exactly
 * one of reply (from the statement alone), fn (the whole request:
 * changes, apply) and text (a reply written as text: the `conns list` can
 * be 100,000 entries) is set.
 */
/*
 * Does text hold a statement (or a line that is none)? Every request but a
 * change and apply is one line: "stats\nservice del ..." was answered as
 * stats, and the change after it dropped unread.
 */
static bool more_stmts(const char *text)
{
	struct chlb_cmd c;
	const char *rest;
	char err[CHLB_ERR_MAX];

	return first_stmt(text, &c, &rest, err, sizeof(err)) || c.kind != CHLB_CMD_NONE;
}

/* "stats", "service list": what the grammar calls a statement of this kind */
static const char *stmt_name(enum chlb_cmd_kind kind)
{
	static char name[40];

	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++)
		if (s->kind == kind) {
			snprintf(name, sizeof(name), "%s%s%s", s->obj, s->verb ? " " : "",
				 s->verb ? s->verb : "");
			return name;
		}
	return "?";
}

static const struct handler {
	enum chlb_cmd_kind kind;
	bool read_only;
	json_object *(*reply)(const struct chlb_cmd *c);
	json_object *(*fn)(const struct request *r);
	char *(*text)(const struct chlb_cmd *c);
} handlers[] = {
	{ CHLB_CMD_SERVICE_LIST, true, reply_services, NULL, NULL },
	{ CHLB_CMD_BACKEND_LIST, true, reply_backends, NULL, NULL },
	{ CHLB_CMD_STATS, true, reply_stats, NULL, NULL },
	{ CHLB_CMD_WHICH, true, reply_which, NULL, NULL },
	{ CHLB_CMD_CONNS, true, NULL, NULL, reply_conns },
	{ CHLB_CMD_SAVE, true, handle_save, NULL, NULL },
	{ CHLB_CMD_APPLY, false, NULL, handle_apply, NULL },
	{ CHLB_CMD_SHUTDOWN, false, handle_shutdown, NULL, NULL },
	{ CHLB_CMD_ROUTE_LIST, true, reply_routes, NULL, NULL },
	{ CHLB_CMD_ROUTE_WITHDRAW, false, NULL, handle_route, NULL },
	{ CHLB_CMD_ROUTE_ANNOUNCE, false, NULL, handle_route, NULL },
	{ CHLB_CMD_SERVICE_ADD, false, NULL, handle_changes, NULL },
	{ CHLB_CMD_SERVICE_SET, false, NULL, handle_changes, NULL },
	{ CHLB_CMD_SERVICE_DEL, false, NULL, handle_changes, NULL },
	{ CHLB_CMD_BACKEND_ADD, false, NULL, handle_changes, NULL },
	{ CHLB_CMD_BACKEND_SET, false, NULL, handle_changes, NULL },
	{ CHLB_CMD_BACKEND_DEL, false, NULL, handle_changes, NULL },
};

static const struct handler *handler_of(enum chlb_cmd_kind kind)
{
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i].kind == kind)
			return &handlers[i];
	return NULL;
}

bool chlbd_request_read_only(const char *req)
{
	const struct handler *h;
	struct chlb_cmd c;
	const char *rest;
	char err[CHLB_ERR_MAX];

	if (chlbd_is_version_request(req) || first_stmt(req, &c, &rest, err, sizeof(err)))
		return true; /* the version, or an error reply */
	if (c.kind == CHLB_CMD_NONE)
		return true; /* "empty request" */
	/* dry runs plan against the state: not while it changes */
	h = handler_of(c.kind);
	return h && h->read_only;
}

char *handle_request(const char *req, size_t len)
{
	const struct handler *h;
	struct chlb_cmd c;
	struct request r = { .cmd = &c, .t0 = chlb_now_ns() };
	char err[CHLB_ERR_MAX];

	(void)len;
	if (chlbd_is_version_request(req)) /* not in the grammar: version.c says why */
		return chlbd_reply(chlbd_version_json());
	if (first_stmt(req, &c, &r.rest, err, sizeof(err)))
		return chlbd_error_reply(err, CHLBD_ERR_USAGE);
	if (c.kind == CHLB_CMD_DRY_RUN) {
		r.dry_run = true;
		req = r.rest;
		if (first_stmt(req, &c, &r.rest, err, sizeof(err)))
			return chlbd_error_reply(err, CHLBD_ERR_USAGE);
	}
	r.stmt = req;
	if (c.kind == CHLB_CMD_NONE)
		return chlbd_error_reply("empty request", CHLBD_ERR_USAGE);
	h = handler_of(c.kind);
	if (!h) /* `dry-run` twice */
		return chlbd_error_reply("'dry-run' must be followed by changes", CHLBD_ERR_USAGE);
	if (h->fn != handle_changes && h->fn != handle_apply && more_stmts(r.rest)) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "'%s' is a request of its own: nothing may follow it; "
			 "nothing done",
			 stmt_name(c.kind));
		return chlbd_error_reply(msg, CHLBD_ERR_USAGE);
	}
	if (h->text)
		return h->text(r.cmd);
	return chlbd_reply(h->reply ? h->reply(r.cmd) : h->fn(&r));
}
