// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The grammar table (grammar_table.c) written out for people: `chlbctl
 * help` (text) and the generated sections of docs/chlb.5 and docs/chlbctl.8
 * (roff). The same walk over the table for both, so they cannot disagree.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "config/grammar_table.h"
#include "base/util.h"

#define WIDTH	  79 /* text lines */
#define MAN_WIDTH 72 /* .nf lines: a man page indents its text 7 columns of 80 */

enum style {
	TEXT,
	ROFF,
};

/* One unbreakable part of a statement's form, "[algo ring|jump]", as text and as roff. */
struct piece {
	char plain[192];
	char roff[512];
};

static void cat(char *buf, size_t len, const char *s)
{
	size_t at = strlen(buf);

	if (at < len)
		snprintf(buf + at, len - at, "%s", s);
}

/* Appends s in font ('B' bold, 'I' italic, 0 roman); roff escapes '-' and '\'. */
static void put(struct piece *p, const char *s, char font)
{
	char esc[512] = "";

	cat(p->plain, sizeof(p->plain), s);
	for (; *s; s++)
		cat(esc, sizeof(esc), *s == '-' ? "\\-" : *s == '\\' ? "\\e" : (char[2]){ *s, 0 });
	if (font)
		cat(p->roff, sizeof(p->roff), font == 'B' ? "\\fB" : "\\fI");
	cat(p->roff, sizeof(p->roff), esc);
	if (font)
		cat(p->roff, sizeof(p->roff), "\\fR");
}

/* The names of a NAME option, bold, between '|'. */
static void put_names(struct piece *p, const struct chlb_gopt *o)
{
	bool first = true;

	for (unsigned int v = 0; v < 256; v++) {
		const char *n = o->name((__u8)v);

		if (!strcmp(n, "?"))
			continue;
		if (!first)
			put(p, "|", 0);
		put(p, n, 'B');
		first = false;
	}
}

static void put_value(struct piece *p, enum chlb_gval val, const char *meta,
		      const struct chlb_gopt *o)
{
	if (val == CHLB_GV_NAME && o) {
		put_names(p, o);
	} else if (val == CHLB_GV_PROTO) {
		put(p, "tcp", 'B');
		put(p, "|", 0);
		put(p, "udp", 'B');
	} else {
		put(p, meta, 'I');
		if (o && o->zero_word) { /* K|auto */
			put(p, "|", 0);
			put(p, o->zero_word, 'B');
		}
	}
}

static const char *opt_word(const struct chlb_gopt *o, unsigned int where)
{
	return where == CHLB_GW_CLI && o->cli ? o->cli : o->word;
}

static void put_opt(struct piece *p, const struct chlb_gopt *o, unsigned int where, bool need)
{
	if (!need)
		put(p, "[", 0);
	put(p, opt_word(o, where), 'B');
	if (o->val != CHLB_GV_FLAG) {
		put(p, o->val_optional ? " [" : " ", 0);
		put_value(p, o->val, o->meta, o);
		if (o->val_optional)
			put(p, "]", 0);
	}
	if (!need)
		put(p, "]", 0);
}

#define MAX_PIECES 32

/* Must o be given? A need of several bits asks for at least one: each stays optional. */
static bool needed(const struct chlb_gstmt *s, const struct chlb_gopt *o)
{
	return (s->need & o->bit) && !(s->need & (s->need - 1));
}

/*
 * s as `where` takes it ("service add VIP [algo ...]"), in pieces: the first
 * is the object and command, the rest wrap.
 */
static int form(const struct chlb_gstmt *s, unsigned int where, struct piece *pc)
{
	int n = 0;

	memset(pc, 0, MAX_PIECES * sizeof(*pc));
	put(&pc[n], s->obj, 'B');
	if (s->verb) {
		put(&pc[n], " ", 0);
		put(&pc[n], s->verb, 'B');
	}
	n++;
	for (const struct chlb_garg *a = s->args; a && a->meta && n < MAX_PIECES; a++) {
		if (!(a->where & where))
			continue;
		if (a->optional)
			put(&pc[n], "[", 0);
		if (a->flag) {
			put(&pc[n], a->flag, 'B');
			put(&pc[n], " ", 0);
		}
		put_value(&pc[n], a->val, a->meta, NULL);
		if (a->optional)
			put(&pc[n], "]", 0);
		n++;
	}
	if (s->brief && n < MAX_PIECES) {
		put(&pc[n], "OPTION", 'I');
		put(&pc[n], " ", 0);
		put(&pc[n], "VALUE", 'I');
		put(&pc[n++], "...", 0);
	}
	for (const struct chlb_gopt *o = s->opts; o && o->word && n < MAX_PIECES; o++) {
		if (!(o->where & where) || (s->brief && o->val != CHLB_GV_FLAG))
			continue;
		put_opt(&pc[n++], o, where, needed(s, o));
	}
	return n;
}

/*
 * Writes pieces separated by spaces, the first after indent, the others
 * wrapped at width with hang spaces before them.
 */
static void lay_out(FILE *f, enum style st, int width, int indent, int hang, const struct piece *pc,
		    int n)
{
	int col = indent + (int)strlen(pc[0].plain);

	fprintf(f, "%*s%s", indent, "", st == ROFF ? pc[0].roff : pc[0].plain);

	for (int i = 1; i < n; i++) {
		int w = (int)strlen(pc[i].plain);

		if (col + 1 + w > width) {
			fprintf(f, "\n%*s", hang, "");
			col = hang;
		} else {
			fputc(' ', f);
			col++;
		}
		fputs(st == ROFF ? pc[i].roff : pc[i].plain, f);
		col += w;
	}
	fputc('\n', f);
}

/*
 * Writes text wrapped at WIDTH: the first line from column col (the cursor
 * is there), the others after indent spaces.
 */
static void wrap(FILE *f, int col, int indent, const char *text)
{
	const char *p = text;

	while (*p) {
		int room = WIDTH - col, len = (int)strlen(p), cut = len;

		if (len > room) {
			for (cut = room; cut > 0 && p[cut] != ' '; cut--)
				;
			if (cut == 0)
				for (cut = room; p[cut] && p[cut] != ' '; cut++)
					;
		}
		fprintf(f, "%.*s\n", cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		if (*p)
			fprintf(f, "%*s", indent, "");
		col = indent;
	}
}

/* "  left  text...": text in a column after left (under it when left is wider than w). */
static void two_col(FILE *f, const char *left, int w, const char *text)
{
	if ((int)strlen(left) > w)
		fprintf(f, "  %s\n%*s", left, 2 + w + 1, "");
	else
		fprintf(f, "  %-*s ", w, left);
	wrap(f, 2 + w + 1, 2 + w + 1, text);
}

/* Writes text as roff input: '-' and '\' escaped, a leading '.' or '\'' guarded. */
static void roff_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s, f);
	}
}

/* "(1-65536; default 160)", "(default ring)", "(0 or 576-65535; default 0)", or "". */
static const char *range_note(const struct chlb_gopt *o, char *buf, size_t len)
{
	char dflt[64] = "", lo[16], hi[16];

	buf[0] = '\0';
	if (o->dflt_text) {
		snprintf(dflt, sizeof(dflt), "default %s", o->dflt_text);
	} else if (o->has_dflt) {
		if (o->val == CHLB_GV_NAME)
			snprintf(dflt, sizeof(dflt), "default %s", o->name((__u8)o->dflt));
		else
			snprintf(dflt, sizeof(dflt), "default %u", o->dflt);
	}
	if (o->val == CHLB_GV_RANGE)
		snprintf(buf, len, "(each %u-%u%s%s)", o->lo, o->hi, *dflt ? "; " : "", dflt);
	else if (o->val == CHLB_GV_UINT || o->val == CHLB_GV_UINT_LIST)
		snprintf(buf, len, "(%s%s%s%s%u-%u%s%s)",
			 o->val == CHLB_GV_UINT_LIST ? "each " : "", o->zero_off ? "0 or " : "",
			 o->zero_word ? o->zero_word : "", o->zero_word ? " or " : "", o->lo, o->hi,
			 *dflt ? "; " : "", dflt);
	else if (o->val == CHLB_GV_MILLI)
		snprintf(buf, len, "(%s-%s%s%s)", chlb_fmt_milli(o->lo, lo, sizeof(lo)),
			 chlb_fmt_milli(o->hi, hi, sizeof(hi)), *dflt ? "; " : "", dflt);
	else if (*dflt)
		snprintf(buf, len, "(%s)", dflt);
	return buf;
}

/* The statements that share s's options: "service add, service set". */
static const char *sharing(const struct chlb_gstmt *s, unsigned int where, char *buf, size_t len)
{
	buf[0] = '\0';
	for (const struct chlb_gstmt *t = chlb_grammar; t->obj; t++) {
		if (t->opts != s->opts || !(t->where & where))
			continue;
		if (buf[0])
			cat(buf, len, ", ");
		cat(buf, len, t->obj);
		if (t->verb) {
			cat(buf, len, " ");
			cat(buf, len, t->verb);
		}
	}
	return buf;
}

/* Is s the first statement (in the places `where` says) with its option array? */
static bool first_with_opts(const struct chlb_gstmt *s, unsigned int where)
{
	for (const struct chlb_gstmt *t = chlb_grammar; t != s; t++)
		if (t->opts == s->opts && (t->where & where))
			return false;
	return true;
}

/* Was an option with o's spelling and description shown before o (in an earlier array)? */
static bool shown_before(const struct chlb_gopt *o, unsigned int where)
{
	for (const struct chlb_gstmt *t = chlb_grammar; t->obj; t++) {
		if (!(t->where & where) || !first_with_opts(t, where))
			continue;
		for (const struct chlb_gopt *p = t->opts; p && p->word; p++) {
			if (p == o)
				return false;
			if ((p->where & where) && !strcmp(opt_word(p, where), opt_word(o, where)) &&
			    !strcmp(p->desc, o->desc))
				return true;
		}
	}
	return false;
}

const char *chlb_grammar_form(const struct chlb_gstmt *s, unsigned int where, char *buf, size_t len)
{
	struct piece pc[MAX_PIECES];
	int n = form(s, where, pc);

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i)
			cat(buf, len, " ");
		cat(buf, len, pc[i].plain);
	}
	return buf;
}

void chlb_grammar_help(FILE *f)
{
	struct piece pc[MAX_PIECES];
	char buf[256], note[96];
	int n, hang;

	fputs("Daemon commands (talk to chlbd over -s SOCKET). The words of a change are one\n"
	      "statement of the grammar of the config and state files, chlb(5):\n",
	      f);
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		if (!(s->where & CHLB_GW_CLI))
			continue;
		n = form(s, CHLB_GW_CLI, pc);
		hang = 2 + (int)strlen(pc[0].plain) + 1;
		lay_out(f, TEXT, WIDTH, 2, hang > 20 ? 6 : hang, pc, n);
		fprintf(f, "%6s", "");
		wrap(f, 6, 6, s->desc);
	}
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		bool header = false;

		if (!(s->where & CHLB_GW_CLI) || !s->opts || !first_with_opts(s, CHLB_GW_CLI))
			continue;
		for (const struct chlb_gopt *o = s->opts; o->word; o++) {
			struct piece p = { 0 };
			char text[512];

			if (!(o->where & CHLB_GW_CLI) || shown_before(o, CHLB_GW_CLI))
				continue;
			if (!header)
				fprintf(f, "Options of %s:\n",
					sharing(s, CHLB_GW_CLI, buf, sizeof(buf)));
			header = true;
			put_opt(&p, o, CHLB_GW_CLI, true);
			range_note(o, note, sizeof(note));
			snprintf(text, sizeof(text), "%s%s%s", o->desc, *note ? " " : "", note);
			two_col(f, p.plain, 21, text);
		}
	}
	fputs("Values:\n", f);
	for (int k = 0; k < CHLB_GV_COUNT; k++) {
		if (!chlb_gkinds[k].meta)
			continue;
		two_col(f, chlb_gkinds[k].meta, 10, chlb_gkinds[k].desc);
	}
}

static void man_synopsis(FILE *f)
{
	struct piece pc[MAX_PIECES];

	fputs(".nf\n", f);
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		if (!(s->where & CHLB_GW_GRAMMAR))
			continue;
		int n = form(s, CHLB_GW_GRAMMAR, pc), hang = (int)strlen(pc[0].plain) + 1;

		lay_out(f, ROFF, MAN_WIDTH, 0, hang > 16 ? 4 : hang, pc, n);
	}
	fputs(".fi\n", f);
}

/* The statements a file takes (the changes), then those of requests alone. */
static void man_statements(FILE *f)
{
	struct piece pc[MAX_PIECES];

	for (int file = 1; file >= 0; file--) {
		fputs(file ? ".SS \"Changes: in files and requests\"\n"
			   : ".SS \"In requests only\"\n",
		      f);
		for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
			if (!(s->where & CHLB_GW_GRAMMAR) || !(s->where & CHLB_GW_FILE) != !file)
				continue;
			int n = form(s, CHLB_GW_GRAMMAR, pc);

			fputs(".TP\n", f);
			for (int i = 0; i < n; i++)
				fprintf(f, "%s%s", i ? " " : "", pc[i].roff);
			fputs("\n", f);
			roff_text(f, s->desc);
			fputs(".\n", f);
		}
	}
}

static void man_options(FILE *f)
{
	char buf[256], note[96];

	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++) {
		if (!(s->where & CHLB_GW_GRAMMAR) || !s->opts ||
		    !first_with_opts(s, CHLB_GW_GRAMMAR))
			continue;
		bool header = false;

		for (const struct chlb_gopt *o = s->opts; o->word; o++) {
			struct piece p = { 0 };

			if (!(o->where & CHLB_GW_GRAMMAR))
				continue;
			if (!header) {
				fputs(".SS \"", f);
				roff_text(f, sharing(s, CHLB_GW_GRAMMAR, buf, sizeof(buf)));
				fputs("\"\n", f);
			}
			header = true;
			put_opt(&p, o, CHLB_GW_GRAMMAR, true);
			fprintf(f, ".TP\n%s\n", p.roff);
			roff_text(f, o->desc);
			range_note(o, note, sizeof(note));
			if (*note) {
				fputs(" ", f);
				roff_text(f, note);
			}
			fputs(".\n", f);
		}
	}
}

static void man_values(FILE *f)
{
	for (int k = 0; k < CHLB_GV_COUNT; k++) {
		if (!chlb_gkinds[k].meta)
			continue;
		fputs(".TP\n\\fI", f);
		roff_text(f, chlb_gkinds[k].meta);
		fputs("\\fR\n", f);
		roff_text(f, chlb_gkinds[k].desc);
		fputs("\n", f);
	}
}

const char *const chlb_grammar_man_sections[] = { "synopsis", "statements", "options", "values",
						  NULL };

int chlb_grammar_man(FILE *f, const char *section)
{
	if (!strcmp(section, "synopsis"))
		man_synopsis(f);
	else if (!strcmp(section, "statements"))
		man_statements(f);
	else if (!strcmp(section, "options"))
		man_options(f);
	else if (!strcmp(section, "values"))
		man_values(f);
	else
		return -EINVAL;
	return 0;
}
