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
#include "chlbd.h"
#include "conns.h"
#include "base/json_out.h"
#include "config/plan.h"

/* valid JSON whatever the request held (json_out.h); numbers with 6 decimals */
char *chlbd_reply(json_object *o)
{
	static bool fixed;
	char *s;

	if (!fixed)
		fixed = !json_c_set_serialization_double_format("%.6f", JSON_C_OPTION_GLOBAL);
	s = chlb_json_dump(o);
	json_object_put(o);
	return s;
}

json_object *chlbd_jerr(const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

json_object *chlbd_jerr_kind(const char *msg, const char *kind)
{
	json_object *o = chlbd_jerr(msg);

	json_object_object_add(o, "kind", json_object_new_string(kind));
	return o;
}

/*
 * Durability and atomicity: a change is written, then applied, then
 * published, so it is durable before it is acknowledged, or not applied at
 * all:
 *   1. capacity: every backend slot and service id the change needs is
 *      counted first (chlb_rt_capacity()): none missing halfway;
 *   2. persist: the new state goes to STATE.tmp, fsynced. This is the step
 *      that fails in practice (a full or read-only state directory): it
 *      fails before anything is touched, so no flow moves and no backend
 *      slot changes generation, which an apply undone afterwards would do;
 *   3. apply: the data plane converges;
 *   4. publish: STATE.tmp renamed over STATE (STATE kept as STATE.prev),
 *      directory fsynced. A rename needs no space.
 * If 3 or 4 fails, the data plane is put back to what it was (an apply of
 * the old state) and STATE.tmp removed: the file and the data plane agree
 * on the old state. A crash before 4 leaves STATE as it was: the next
 * chlbd adopts the pinned maps and converges them back to it (the change
 * was never acknowledged); a crash after 4 leaves the new state in both.
 *
 * At start (main.c, adopted services deferred) the state comes from the
 * state file or -c FILE, which a restart reads again: it is applied even
 * if it cannot be written back, and the failure is logged.
 */
static int commit_start(struct chlb_state *next, char *err, size_t errlen)
{
	char perr[CHLB_ERR_MAX * 2];
	int r = chlb_rt_apply(D.rt, &D.state, next, err, errlen);

	/* next now describes what serves, even after a partial failure */
	chlb_state_free(&D.state);
	D.state = *next;
	chlb_state_init(next);
	if (chlb_state_save_file(&D.state, D.state_path, perr, sizeof(perr)))
		pr_err("state not written back at start (what serves came from it or from -c): %s",
		       perr);
	loop_kick_timer();
	return r;
}

/* After a failed step 3 or 4: converge back to `old` (consumed); 0 if all of it serves. */
static int roll_back(struct chlb_state *old)
{
	char err[CHLB_ERR_MAX * 2];
	int r = chlb_rt_apply(D.rt, &D.state, old, err, sizeof(err));

	chlb_state_free(&D.state);
	D.state = *old; /* what serves, even if the roll back failed in part */
	chlb_state_init(old);
	if (r)
		pr_err("rolling back: %s", err);
	return r;
}

int chlbd_check_capacity(const struct chlb_state *next, char *err, size_t errlen)
{
	return chlb_rt_capacity(D.rt, next, err, errlen);
}

int chlbd_commit(struct chlb_state *next, char *err, size_t errlen)
{
	char perr[CHLB_ERR_MAX * 2];
	struct chlb_state_pending pend;
	struct chlb_state old;
	int r;

	if (D.rt->defer_adopted)
		return commit_start(next, err, errlen);
	if (chlbd_check_capacity(next, perr, sizeof(perr))) {
		chlb_state_free(next);
		snprintf(err, errlen, "%s; nothing changed", perr);
		return -1;
	}
	if (chlb_state_prepare(next, D.state_path, &pend, perr, sizeof(perr))) {
		chlb_state_free(next);
		pr_err("state not persisted: %s; nothing changed", perr);
		snprintf(err, errlen, "%s: nothing changed", perr);
		return -1;
	}
	if (chlb_state_copy(&old, &D.state)) {
		chlb_state_abort(&pend);
		chlb_state_free(next);
		snprintf(err, errlen, "out of memory; nothing changed");
		return -1;
	}
	D.rt->yield = server_poll_readonly; /* read-only requests are answered meanwhile */
	r = chlb_rt_apply(D.rt, &D.state, next, perr, sizeof(perr));
	D.rt->yield = NULL;
	chlb_state_free(&D.state);
	D.state = *next; /* what serves, even after a partial failure */
	chlb_state_init(next);
	if (!r && chlb_state_publish(&pend, perr, sizeof(perr))) {
		pr_err("state not persisted: %s; rolling back", perr);
		r = -1;
	} else if (r) {
		chlb_state_abort(&pend);
	}
	if (r) {
		bool mixed = roll_back(&old) != 0;

		snprintf(err, errlen, "%s; %s", perr,
			 mixed ? "rolling back failed too: see the log"
			       : "rolled back: nothing changed");
		/* neither old nor new serves: the file says what does, if it can */
		if (mixed && chlb_state_save_file(&D.state, D.state_path, perr, sizeof(perr)))
			pr_err("state not persisted after a failed roll back: %s", perr);
	}
	chlb_state_free(&old);
	loop_kick_timer(); /* new deadlines; preallocate the next slots */
	return r;
}

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
 * (guard.c) is refused here; a dry run shows the plan all the same, and
 * says why it would be refused ("needs_force").
 */
static json_object *finish(struct chlb_state *next, bool dry_run, bool apply, bool force, __u64 t0)
{
	char err[CHLB_ERR_MAX * 2];
	int refused = chlbd_guard(&D.state, next, apply, force, err, sizeof(err));
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

/* An error of chlb_state_exec_text(): a bad value, or a conflict with the state. */
static json_object *exec_error(int rc, const char *msg)
{
	return chlbd_jerr_kind(msg, rc == -ENOMEM	       ? CHLBD_ERR_FAILED
				    : chlb_state_bad_value(rc) ? CHLBD_ERR_USAGE
							       : CHLBD_ERR_CONFLICT);
}

static json_object *do_apply(const char *body, bool dry_run, bool force, __u64 t0)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX * 2];

	chlb_state_init(&next);
	/* the file alone is wrong, whatever serves: a duplicate is a bad value too */
	if (chlb_state_exec_text(&next, body, "apply", err, sizeof(err))) {
		chlb_state_free(&next);
		return chlbd_jerr_kind(err, CHLBD_ERR_USAGE);
	}
	chlb_state_inherit(&next, &D.state);
	if (!dry_run)
		pr_info("request: apply%s (%u services)", force ? " force" : "", next.nsvc);
	return finish(&next, dry_run, true, force, t0);
}

static bool single_line(const char *text)
{
	const char *nl = strchr(text, '\n');

	return !nl || !nl[strspn(nl, " \t\r\n")];
}

static json_object *do_changes(const char *text, bool dry_run, __u64 t0)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX * 2];

	int rc;

	if (chlb_state_copy(&next, &D.state))
		return chlbd_jerr_kind("out of memory", CHLBD_ERR_FAILED);
	rc = chlb_state_exec_text(&next, text, "request", err, sizeof(err));
	if (rc) {
		chlb_state_free(&next);
		/* a single-line request needs no "request:1: " prefix */
		return exec_error(
		    rc, !strncmp(err, "request:1: ", 11) && single_line(text) ? err + 11 : err);
	}
	return finish(&next, dry_run, false, false, t0);
}

static json_object *do_save(void)
{
	json_object *o = json_object_new_object();
	char *text = chlb_state_format(&D.state, false);

	json_object_object_add(o, "text", json_object_new_string(text ? text : ""));
	free(text);
	return o;
}

static json_object *do_shutdown(const struct chlb_cmd *c)
{
	json_object *o = json_object_new_object();

	D.stop = true;
	D.detach = c->detach;
	pr_info("shutdown requested%s", c->detach ? ": detaching and unpinning" : "");
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "detach", json_object_new_boolean(c->detach));
	return o;
}

/* First statement of text (skipping blanks/comments); *rest = text after its line. */
static int first_stmt(const char *text, struct chlb_cmd *c, const char **rest, char *err,
		      size_t errlen)
{
	const char *p = text;

	while (*p) {
		if (chlb_parse_next(&p, c, err, errlen))
			return -1;
		if (c->kind != CHLB_CMD_NONE) {
			*rest = p;
			return 0;
		}
	}
	c->kind = CHLB_CMD_NONE;
	return 0;
}

bool chlbd_request_read_only(const char *req)
{
	struct chlb_cmd c;
	const char *rest;
	char err[CHLB_ERR_MAX];

	if (chlbd_is_version_request(req) || first_stmt(req, &c, &rest, err, sizeof(err)))
		return true; /* the version, or an error reply */
	switch (c.kind) {
	case CHLB_CMD_NONE:
	case CHLB_CMD_SERVICE_LIST:
	case CHLB_CMD_BACKEND_LIST:
	case CHLB_CMD_STATS:
	case CHLB_CMD_WHICH:
	case CHLB_CMD_CONNS:
	case CHLB_CMD_SAVE:
		return true;
	default: /* changes, apply, shutdown; and dry runs, which plan against the state */
		return false;
	}
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

char *handle_request(const char *req, size_t len)
{
	struct chlb_cmd c;
	const char *rest = req, *stmt;
	char err[CHLB_ERR_MAX];
	bool dry_run = false;
	__u64 t0 = chlb_now_ns();

	(void)len;
	if (chlbd_is_version_request(req)) /* not in the grammar: version.c says why */
		return chlbd_reply(view_version());
	if (first_stmt(req, &c, &rest, err, sizeof(err)))
		return chlbd_reply(chlbd_jerr_kind(err, CHLBD_ERR_USAGE));
	if (c.kind == CHLB_CMD_DRY_RUN) {
		dry_run = true;
		req = rest;
		if (first_stmt(req, &c, &rest, err, sizeof(err)))
			return chlbd_reply(chlbd_jerr_kind(err, CHLBD_ERR_USAGE));
	}
	stmt = req;
	switch (c.kind) {
	case CHLB_CMD_NONE:
		return chlbd_reply(chlbd_jerr_kind("empty request", CHLBD_ERR_USAGE));
	case CHLB_CMD_APPLY:
		return chlbd_reply(do_apply(rest, dry_run, c.force, t0));
	case CHLB_CMD_SERVICE_LIST:
		return chlbd_reply(view_services(&c));
	case CHLB_CMD_BACKEND_LIST:
		return chlbd_reply(view_backends(&c));
	case CHLB_CMD_STATS:
		return chlbd_reply(view_stats(&c));
	case CHLB_CMD_WHICH:
		return chlbd_reply(view_which(&c));
	case CHLB_CMD_CONNS:
		return view_conns(&c);
	case CHLB_CMD_SAVE:
		return chlbd_reply(do_save());
	case CHLB_CMD_SHUTDOWN:
		return chlbd_reply(do_shutdown(&c));
	default:
		break;
	}
	if (!chlb_cmd_is_change(c.kind))
		return chlbd_reply(
		    chlbd_jerr_kind("'dry-run' must be followed by changes", CHLBD_ERR_USAGE));
	if (!dry_run)
		log_request(stmt);
	return chlbd_reply(do_changes(stmt, dry_run, t0));
}
