// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The grammar is written once, in its keyword table (config/grammar_table.c),
 * and everything else must agree with it:
 *   - the parser takes every statement, option and value the table gives
 *     and refuses the values outside it, naming the table's words;
 *   - the state's defaults are the table's;
 *   - `chlbctl help` prints the table (chlb_grammar_help());
 *   - the generated sections of docs/chlb.5 and docs/chlbctl.8 are what
 *     chlb_grammar_man() writes now (`make grammar-docs` rewrites them);
 *   - the command column of docs/operations.md's chlbctl reference is the
 *     table's chlbctl forms, every one of them.
 * Files are found from the source tree ($CHLB_SRCDIR, default the current
 * directory: tests/run.sh runs from the top) and chlbctl in $BUILD (build).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "config/grammar.h"
#include "config/grammar_table.h"
#include "config/state.h"

static const char *srcdir(void)
{
	return getenv("CHLB_SRCDIR") ? getenv("CHLB_SRCDIR") : ".";
}

/* The whole of a file (or a command's stdout with popen), malloc'd; NULL when unreadable. */
static char *read_stream(FILE *f)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);

	assert_non_null(buf);
	for (size_t n; (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
		len += n;
		if (cap - len < 2) {
			char *more = realloc(buf, cap * 2);

			assert_non_null(more);
			buf = more;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	return buf;
}

static char *read_doc(const char *name)
{
	char path[4096];
	FILE *f;
	char *text;

	snprintf(path, sizeof(path), "%s/%s", srcdir(), name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: cannot read it (run from the source tree, or set CHLB_SRCDIR)", path);
	text = read_stream(f);
	fclose(f);
	return text;
}

/* What a writer into a FILE * writes, as a string (malloc'd). */
#define CAPTURE(out, call)                               \
	do {                                             \
		size_t len_;                             \
		FILE *f = open_memstream(&(out), &len_); \
                                                         \
		assert_non_null(f);                      \
		call;                                    \
		fclose(f);                               \
	} while (0)

static int parse(const char *line, struct chlb_cmd *c, char *err, size_t errlen)
{
	return chlb_parse_line(line, c, err, errlen);
}

/* ---- the table itself ---- */

static bool has_verbs(const struct chlb_gstmt *s)
{
	return s->verb != NULL;
}

static void table_is_well_formed(void **st)
{
	unsigned int kinds = 0;

	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		__u32 bits = 0;

		assert_true(s->where != 0);
		assert_true(s->desc && *s->desc);
		assert_non_null(s->args);
		/* what the parser takes has a kind, once; chlbctl's own commands none */
		if (s->where & CHLB_GW_GRAMMAR) {
			assert_int_not_equal(s->kind, CHLB_CMD_NONE);
			assert_false(kinds & (1u << s->kind));
			kinds |= 1u << s->kind;
		} else {
			assert_int_equal(s->kind, CHLB_CMD_NONE);
		}
		/* a file holds changes only */
		if (s->where & CHLB_GW_FILE)
			assert_true(has_verbs(s) && strcmp(s->verb, "list"));
		for (const struct chlb_gopt *o = s->opts; o && o->word; o++) {
			assert_true(o->where != 0);
			assert_true(o->desc && *o->desc);
			if (o->val == CHLB_GV_NAME)
				assert_true(o->name && o->parse && o->what);
			if (o->val == CHLB_GV_UINT || o->val == CHLB_GV_UINT_LIST)
				assert_true(o->lo <= o->hi && o->what && o->meta);
			if (o->val == CHLB_GV_ADDR || o->val == CHLB_GV_PATH ||
			    o->val == CHLB_GV_HOST)
				assert_true(o->what && o->meta);
			if (o->val == CHLB_GV_RANGE)
				assert_true(o->lo <= o->hi && o->what && o->meta && o->dflt_text);
			/* service and backend options: one CHLB_OPT_* bit each */
			if (has_verbs(s) && (o->where & CHLB_GW_GRAMMAR)) {
				assert_int_not_equal(o->bit, 0);
				assert_false(bits & o->bit);
				bits |= o->bit;
			}
		}
		assert_int_equal(s->need & ~bits, 0);
	}
}

/* ---- the parser against the table ---- */

/* A value of kind val the parser takes; NULL for a flag. */
static const char *sample(enum chlb_gval val, const struct chlb_gopt *o, char *buf, size_t len)
{
	switch (val) {
	case CHLB_GV_VIP:
		return "10.0.0.10:80/tcp";
	case CHLB_GV_ADDR:
		return "10.1.0.2";
	case CHLB_GV_PROTO:
		return "tcp";
	case CHLB_GV_NAME:
		return o->name((__u8)o->dflt);
	case CHLB_GV_UINT:
		snprintf(buf, len, "%u", o->hi);
		return buf;
	case CHLB_GV_UINT_LIST:
		snprintf(buf, len, "%u,%u", o->lo, o->hi);
		return buf;
	case CHLB_GV_RANGE:
		snprintf(buf, len, "%u-%u", o->lo, o->hi);
		return buf;
	case CHLB_GV_PATH:
		return "/healthz?full=1";
	case CHLB_GV_HOST:
		return "www.example.com:8080";
	case CHLB_GV_MILLI:
		return "1.05";
	case CHLB_GV_PREFIXES:
		return "10.0.0.0/8,192.0.2.7";
	default:
		return NULL;
	}
}

/* "obj [verb] ARGS": the statement's head with sample arguments. */
static void head(const struct chlb_gstmt *s, char *line, size_t len)
{
	int n = snprintf(line, len, "%s%s%s", s->obj, s->verb ? " " : "", s->verb ? s->verb : "");
	int endpoint = 0;

	for (const struct chlb_garg *a = s->args; a->meta; a++) {
		char buf[64];
		const char *v = sample(a->val, NULL, buf, sizeof(buf));

		if (!(a->where & CHLB_GW_GRAMMAR))
			continue;
		if (a->val == CHLB_GV_ENDPOINT) /* which: a source, then a destination */
			v = endpoint++ ? "10.0.0.10:80" : "192.0.2.1:40000";
		n += snprintf(line + n, len - (size_t)n, " %s", v);
	}
}

/* Appends " word [value]" for option o. */
static void add_opt(char *line, size_t len, const struct chlb_gopt *o, const char *value)
{
	size_t n = strlen(line);

	snprintf(line + n, len - n, " %s%s%s", o->word, value ? " " : "", value ? value : "");
}

/* The field an option fills, as the parser stored it. */
static __u32 stored(const struct chlb_cmd *c, __u32 bit)
{
	switch (bit) {
	case CHLB_OPT_ALGO:
		return c->algo;
	case CHLB_OPT_FWD:
		return c->fwd;
	case CHLB_OPT_HASH:
		return c->hash;
	case CHLB_OPT_VNODES:
		return c->vnodes;
	case CHLB_OPT_TARGET:
		return c->vnodes_target;
	case CHLB_OPT_TABLE:
		return c->table_size;
	case CHLB_OPT_MTU:
		return c->mtu;
	case CHLB_OPT_PERSIST:
		return c->persist_s;
	case CHLB_OPT_NETMASK:
		return c->netmask;
	case CHLB_OPT_BUCKETS:
		return c->buckets;
	case CHLB_OPT_WEIGHT:
		return c->weight;
	case CHLB_OPT_BUCKET_ONE:
		return c->bucket[0];
	case CHLB_OPT_CHECK:
		return c->check.type;
	case CHLB_OPT_CK_PORT:
		return c->check.port;
	case CHLB_OPT_CK_INTERVAL:
		return c->check.interval_ms;
	case CHLB_OPT_CK_TIMEOUT:
		return c->check.timeout_ms;
	case CHLB_OPT_CK_RISE:
		return c->check.rise;
	case CHLB_OPT_CK_FALL:
		return c->check.fall;
	case CHLB_OPT_CK_VIA:
		return c->check.via;
	case CHLB_OPT_ON_DOWN:
		return c->health.on_down;
	case CHLB_OPT_SLOW_START:
		return c->health.slow_start_s;
	case CHLB_OPT_PANIC:
		return c->health.panic_pct;
	default:
		return 0;
	}
}

static void parser_takes_every_form(void **st)
{
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		char line[CHLB_LINE_MAX], err[CHLB_ERR_MAX], buf[64];
		struct chlb_cmd c;
		__u32 bits = 0;

		if (!(s->where & CHLB_GW_GRAMMAR))
			continue;
		/* the head alone, with what it needs */
		head(s, line, sizeof(line));
		for (const struct chlb_gopt *o = s->opts; o && o->word; o++)
			if (s->need & o->bit)
				add_opt(line, sizeof(line), o, sample(o->val, o, buf, sizeof(buf)));
		if (parse(line, &c, err, sizeof(err)))
			fail_msg("'%s' refused: %s", line, err);
		assert_int_equal(c.kind, s->kind);
		/* every option at once */
		head(s, line, sizeof(line));
		for (const struct chlb_gopt *o = s->opts; o && o->word; o++) {
			if (!(o->where & CHLB_GW_GRAMMAR))
				continue;
			add_opt(line, sizeof(line), o, sample(o->val, o, buf, sizeof(buf)));
			bits |= o->bit;
		}
		if (parse(line, &c, err, sizeof(err)))
			fail_msg("'%s' refused: %s", line, err);
		assert_int_equal(c.kind, s->kind);
		assert_int_equal(c.set, bits);
		/* each value the table allows, stored as given */
		for (const struct chlb_gopt *o = s->opts; o && o->word; o++) {
			__u32 vals[] = { o->lo, o->hi, 0 };

			if (!(o->where & CHLB_GW_GRAMMAR))
				continue;
			for (unsigned int v = 0; o->val == CHLB_GV_NAME && v < 256; v++) {
				if (!strcmp(o->name((__u8)v), "?"))
					continue;
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, o->name((__u8)v));
				if (parse(line, &c, err, sizeof(err)))
					fail_msg("'%s' refused: %s", line, err);
				assert_int_equal(stored(&c, o->bit), v);
			}
			for (int i = 0; o->val == CHLB_GV_UINT && i < 2 + o->zero_off; i++) {
				snprintf(buf, sizeof(buf), "%u", vals[i]);
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, buf);
				if (parse(line, &c, err, sizeof(err)))
					fail_msg("'%s' refused: %s", line, err);
				assert_int_equal(stored(&c, o->bit), vals[i]);
			}
		}
	}
}

/* line is refused, and the message has every word of the list ("a, b or c"). */
static void refused_naming(const char *line, const char *token, const char *list)
{
	char err[CHLB_ERR_MAX], words[256], *save = NULL;
	struct chlb_cmd c;

	if (!parse(line, &c, err, sizeof(err)))
		fail_msg("'%s' taken", line);
	if (!strstr(err, token))
		fail_msg("'%s': message '%s' lacks %s", line, err, token);
	snprintf(words, sizeof(words), "%s", list ? list : "");
	for (char *w = strtok_r(words, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
		if (strcmp(w, "or") && !strstr(err, w))
			fail_msg("'%s': message '%s' does not list '%s' (the table's)", line, err,
				 w);
}

static void parser_refuses_what_the_table_does_not_give(void **st)
{
	char line[CHLB_LINE_MAX], list[256], buf[64];

	refused_naming("frobnicate", "'frobnicate': unknown object",
		       chlb_grammar_objects(CHLB_GW_GRAMMAR, list, sizeof(list)));
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		if (!(s->where & CHLB_GW_GRAMMAR))
			continue;
		if (s->verb) {
			snprintf(line, sizeof(line), "%s frob", s->obj);
			refused_naming(
			    line, "'frob'",
			    chlb_grammar_verbs(s->obj, CHLB_GW_GRAMMAR, list, sizeof(list)));
		}
		/* an unknown word where an option may be: the table's options named */
		head(s, line, sizeof(line));
		strcat(line, " nosuch x");
		refused_naming(line, "'nosuch'",
			       chlb_gopt_words(s, CHLB_GW_GRAMMAR, list, sizeof(list)));
		for (const struct chlb_gopt *o = s->opts; o && o->word; o++) {
			if (!(o->where & CHLB_GW_GRAMMAR))
				continue;
			/* given twice */
			if (s->verb) {
				const char *v = sample(o->val, o, buf, sizeof(buf));

				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, v);
				add_opt(line, sizeof(line), o, v);
				refused_naming(line, "given twice", NULL);
			}
			if (o->val == CHLB_GV_NAME) {
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, "nosuch");
				refused_naming(
				    line, "'nosuch'",
				    chlb_gopt_names(o, ", ", " or ", list, sizeof(list)));
			}
			if (o->val == CHLB_GV_UINT) {
				snprintf(buf, sizeof(buf), "%u", o->hi + 1);
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, buf);
				refused_naming(line, buf, NULL);
				if (o->lo > 0) {
					snprintf(buf, sizeof(buf), "%u", o->lo - 1);
					head(s, line, sizeof(line));
					add_opt(line, sizeof(line), o, buf);
					if (!(o->zero_off && o->lo == 1))
						refused_naming(line, buf, NULL);
				}
			}
			if (o->val == CHLB_GV_RANGE) { /* an end outside, or reversed */
				snprintf(buf, sizeof(buf), "%u-%u", o->lo, o->hi + 1);
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, buf);
				refused_naming(line, buf, NULL);
				snprintf(buf, sizeof(buf), "%u-%u", o->hi, o->lo);
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, buf);
				refused_naming(line, buf, NULL);
			}
			if (o->val == CHLB_GV_PATH || o->val == CHLB_GV_HOST) {
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, "bad\x01");
				refused_naming(line, "'bad\x01'", NULL);
			}
			if (o->val == CHLB_GV_UINT_LIST && o->hi < 0xffffffffu) {
				snprintf(buf, sizeof(buf), "%u", o->hi + 1);
				head(s, line, sizeof(line));
				add_opt(line, sizeof(line), o, buf);
				refused_naming(line, buf, NULL);
			}
		}
		/* what must be given */
		if (s->need) {
			head(s, line, sizeof(line));
			refused_naming(line, "nothing to set", NULL);
		}
	}
}

/* ---- the state takes the table's defaults ---- */

static const struct chlb_gopt *opt_named(const char *obj, const char *verb, const char *word)
{
	const struct chlb_gstmt *s = chlb_grammar_find(obj, verb, CHLB_GW_GRAMMAR);
	const struct chlb_gopt *o = s ? chlb_gopt_find(s, word, CHLB_GW_GRAMMAR) : NULL;

	assert_non_null(o);
	assert_true(o->has_dflt);
	return o;
}

static void exec(struct chlb_state *state, const char *line)
{
	char err[CHLB_ERR_MAX];
	struct chlb_cmd c;

	if (parse(line, &c, err, sizeof(err)) || chlb_state_exec(state, &c, err, sizeof(err)))
		fail_msg("'%s': %s", line, err);
}

static void defaults_are_the_states(void **st)
{
	struct chlb_state state;
	struct chlb_cmd c;
	struct chlb_svc_cfg *s;
	char err[CHLB_ERR_MAX];

	chlb_state_init(&state);
	exec(&state, "service add 10.0.0.10:80/tcp");
	exec(&state, "backend add 10.0.0.10:80/tcp 10.1.0.2");
	exec(&state, "service add 10.0.0.11:80/tcp algo maglev");
	assert_int_equal(parse("service list 10.0.0.10:80/tcp", &c, err, sizeof(err)), 0);
	s = chlb_state_find(&state, &c.vip);
	assert_non_null(s);
	assert_int_equal(s->algo, opt_named("service", "add", "algo")->dflt);
	assert_int_equal(s->vnodes, opt_named("service", "add", "vnodes")->dflt);
	assert_int_equal(s->fwd, opt_named("service", "add", "fwd")->dflt);
	assert_int_equal(s->hash, opt_named("service", "add", "hash")->dflt);
	assert_int_equal(s->mtu, opt_named("service", "add", "mtu")->dflt);
	assert_int_equal(s->nbe, 1);
	assert_int_equal(s->be[0].weight, opt_named("backend", "add", "weight")->dflt);
	/* health checks: the service's, and what a backend without an override gets */
	{
		struct chlb_check k;
		char expect[32];
		const struct chlb_gstmt *add = chlb_grammar_find("service", "add", CHLB_GW_GRAMMAR);

		chlb_check_effective(s, &s->be[0], &k);
		assert_int_equal(k.type, opt_named("service", "add", "check")->dflt);
		assert_int_equal(k.interval_ms, opt_named("service", "add", "interval")->dflt);
		assert_int_equal(k.timeout_ms, opt_named("service", "add", "timeout")->dflt);
		assert_int_equal(k.rise, opt_named("service", "add", "rise")->dflt);
		assert_int_equal(k.fall, opt_named("service", "add", "fall")->dflt);
		assert_int_equal(k.via, opt_named("service", "add", "via")->dflt);
		assert_int_equal(s->health.on_down, opt_named("service", "add", "on-down")->dflt);
		assert_int_equal(s->health.slow_start_s,
				 opt_named("service", "add", "slow-start")->dflt);
		assert_int_equal(s->health.panic_pct, opt_named("service", "add", "panic")->dflt);
		assert_string_equal(k.path,
				    chlb_gopt_find(add, "path", CHLB_GW_GRAMMAR)->dflt_text);
		snprintf(expect, sizeof(expect), "%u-%u", k.expect_lo, k.expect_hi);
		assert_string_equal(expect,
				    chlb_gopt_find(add, "expect", CHLB_GW_GRAMMAR)->dflt_text);
	}
	assert_int_equal(parse("service list 10.0.0.11:80/tcp", &c, err, sizeof(err)), 0);
	s = chlb_state_find(&state, &c.vip);
	assert_non_null(s);
	assert_int_equal(s->table_size, opt_named("service", "add", "table")->dflt);
	chlb_state_free(&state);
}

/* ---- what people read: chlbctl help, the man pages, operations.md ---- */

static void help_prints_the_table(void **st)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char cmd[4096], *help, *want;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s/chlbctl help", build);
	p = popen(cmd, "r");
	assert_non_null(p);
	help = read_stream(p);
	assert_int_equal(pclose(p), 0);
	CAPTURE(want, chlb_grammar_help(f));
	if (!strstr(help, want))
		fail_msg("`%s` does not print the grammar table (chlb_grammar_help())", cmd);
	free(help);
	free(want);
}

#define BEGIN_MARK ".\\\" BEGIN GENERATED "
#define END_MARK   ".\\\" END GENERATED "

/* The generated sections of doc: each must be what chlb_grammar_man() writes; need: NULL-ended. */
static void doc_sections_match(const char *doc, const char *const *need)
{
	char *text = read_doc(doc), *p = text;
	int found = 0;

	while ((p = strstr(p, BEGIN_MARK))) {
		char name[32], end[64], *body, *stop, *want;
		size_t n = strcspn(p + strlen(BEGIN_MARK), " :\n");

		snprintf(name, sizeof(name), "%.*s", (int)n, p + strlen(BEGIN_MARK));
		body = strchr(p, '\n');
		assert_non_null(body);
		body++;
		snprintf(end, sizeof(end), END_MARK "%s\n", name);
		stop = strstr(body, end);
		if (!stop)
			fail_msg("%s: no '%s' after the section's start", doc, end);
		want = NULL;
		CAPTURE(want,
			if (chlb_grammar_man(f, name)) fail_msg("%s: no section '%s'", doc, name));
		if (strlen(want) != (size_t)(stop - body) || memcmp(want, body, strlen(want))) {
			size_t i = 0, line = 1;

			while (i < strlen(want) && body + i < stop && want[i] == body[i])
				line += want[i++] == '\n';
			fail_msg("%s: section '%s' differs from the grammar table at its line %zu: "
				 "run `make grammar-docs`",
				 doc, name, line);
		}
		free(want);
		for (const char *const *s = need; *s; s++)
			if (!strcmp(*s, name))
				found++;
		p = stop;
	}
	for (const char *const *s = need; *s; s++)
		if (!strstr(text, *s))
			fail_msg("%s: no generated section '%s'", doc, *s);
	assert_true(found >= 1);
	free(text);
}

static void man_pages_are_the_table(void **st)
{
	static const char *const chlb5[] = { "synopsis", "statements", "options", "values", NULL };
	static const char *const chlbctl8[] = { "synopsis", NULL };

	doc_sections_match("docs/chlb.5", chlb5);
	doc_sections_match("docs/chlbctl.8", chlbctl8);
}

/*
 * docs/operations.md, "## chlbctl": the first cell of each table row holds
 * chlbctl forms in backquotes ("\|" for "|"), each one of the table's, and
 * together all of them.
 */
static void operations_md_forms_are_the_tables(void **st)
{
	char *text = read_doc("docs/operations.md"), *p, *end;
	unsigned int seen[64] = { 0 }, n = 0;

	p = strstr(text, "\n## chlbctl\n");
	assert_non_null(p);
	end = strstr(p + 1, "\n## ");
	if (end)
		*end = '\0';
	for (p = strstr(p, "\n| `"); p; p = strstr(p, "\n| `")) {
		char *cell_end = p + 3;

		/* the first cell ends at a '|' that is neither escaped nor inside backquotes */
		for (bool quoted = false; *cell_end && *cell_end != '\n'; cell_end++) {
			if (*cell_end == '`')
				quoted = !quoted;
			else if (*cell_end == '|' && !quoted && cell_end[-1] != '\\')
				break;
		}
		for (char *q = strchr(p + 1, '`'); q && q < cell_end; q = strchr(q + 1, '`')) {
			char form[512], want[512];
			char *close = strchr(q + 1, '`');
			size_t k = 0;
			bool ok = false;

			assert_non_null(close);
			for (char *r = q + 1; r < close && k < sizeof(form) - 1; r++)
				if (!(r[0] == '\\' && r[1] == '|'))
					form[k++] = *r;
			form[k] = '\0';
			n = 0;
			for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++, n++) {
				if (!(s->where & CHLB_GW_CLI))
					continue;
				if (!strcmp(form, chlb_grammar_form(s, CHLB_GW_CLI, want,
								    sizeof(want)))) {
					seen[n] = 1;
					ok = true;
				}
			}
			if (!ok)
				fail_msg(
				    "docs/operations.md: '%s' is no chlbctl form of the grammar "
				    "table (`chlbctl help` lists them)",
				    form);
			q = close;
		}
		p = cell_end;
	}
	n = 0;
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++, n++) {
		char want[512];

		if ((s->where & CHLB_GW_CLI) && !seen[n])
			fail_msg("docs/operations.md: chlbctl reference lacks `%s`",
				 chlb_grammar_form(s, CHLB_GW_CLI, want, sizeof(want)));
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_is_well_formed),
		cmocka_unit_test(parser_takes_every_form),
		cmocka_unit_test(parser_refuses_what_the_table_does_not_give),
		cmocka_unit_test(defaults_are_the_states),
		cmocka_unit_test(help_prints_the_table),
		cmocka_unit_test(man_pages_are_the_table),
		cmocka_unit_test(operations_md_forms_are_the_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
