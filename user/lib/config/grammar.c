// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The one parser for the chlb command grammar (see grammar.h). Pure: no I/O,
 * no allocation, so the same code serves the CLI, the daemon and the fuzzer.
 * Every error quotes the token it rejects, so "line 7: 'maglevv': unknown
 * algorithm" points the operator at the exact word.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/grammar.h"
#include "config/grammar_table.h"
#include "base/err.h"
#include "base/util.h"

/* The changes are the statements a file takes. */
bool chlb_cmd_is_change(enum chlb_cmd_kind kind)
{
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++)
		if (s->kind == kind && kind != CHLB_CMD_NONE)
			return (s->where & CHLB_GW_FILE) != 0;
	return false;
}

int chlb_tokenize(char *line, char **tok, int max, char *err, size_t errlen)
{
	int n = 0;
	char *p = line;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (*p == '\0' || *p == '#')
			break;
		if (n == max)
			return chlb_err(err, errlen, -E2BIG,
					"'%.32s': too many tokens (at most %d)", p, max);
		tok[n++] = p;
		/* '#' starts a comment only at a token's start, as in sh: "path /a#b" is one token */
		while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			p++;
		if (*p)
			*p++ = '\0';
	}
	return n;
}

/* Strict unsigned decimal in [lo, hi]: no sign, no spaces, no trailing junk. */
static int parse_u32(const char *s, __u32 lo, __u32 hi, __u32 *out)
{
	__u64 v;

	if (strlen(s) > 10 || chlb_parse_u64(s, 10, lo, hi, &v))
		return -EINVAL;
	*out = (__u32)v;
	return 0;
}

static int parse_proto(const char *s, __u8 *proto)
{
	if (!strcmp(s, "tcp"))
		*proto = IPPROTO_TCP;
	else if (!strcmp(s, "udp"))
		*proto = IPPROTO_UDP;
	else
		return -EINVAL;
	return 0;
}

/* "ADDR[:PORT]" with v6 in brackets; a bare v6 has no port. */
static int split_hostport(const char *s, const char *shown, struct chlb_addr *a, __u32 *port,
			  bool need_port, char *err, size_t errlen, const char *what)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = NULL;
	size_t hlen;

	*port = 0;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb)
			return chlb_err(err, errlen, -EINVAL,
					"'%s': missing ']' after IPv6 address", shown);
		if (rb[1] == ':')
			colon = rb + 1;
		else if (rb[1] != '\0')
			return chlb_err(err, errlen, -EINVAL, "'%s': expected ':PORT' after ']'",
					shown);
		hlen = (size_t)(rb - s) + 1;
	} else {
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': IPv6 %s must be in brackets: [ADDR]:PORT", s, what);
		hlen = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return chlb_err(err, errlen, -EINVAL, "'%s': malformed address in %s", shown, what);
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (chlb_parse_addr(host, a))
		return chlb_err(err, errlen, -EINVAL, "'%s': malformed address '%s' in %s", shown,
				host, what);
	if (colon) {
		if (parse_u32(colon + 1, 0, 65535, port))
			return chlb_err(err, errlen, -EINVAL, "'%s': malformed port '%s' (0-65535)",
					shown, colon + 1);
	} else if (need_port) {
		return chlb_err(err, errlen, -EINVAL, "'%s': missing ':PORT' in %s", shown, what);
	}
	return 0;
}

int chlb_parse_vip(const char *s, struct chlb_vip *v, char *err, size_t errlen)
{
	char buf[CHLB_ADDRSTR + 8];
	const char *slash = strrchr(s, '/'), *host_end;
	__u32 port;
	size_t len;

	memset(v, 0, sizeof(*v));
	if (!slash)
		return chlb_err(err, errlen, -EINVAL,
				"'%s': malformed VIP, expected ADDR:PORT/tcp|udp", s);
	if (parse_proto(slash + 1, &v->proto))
		return chlb_err(err, errlen, -EINVAL,
				"'%s': unknown protocol '%s' (expected tcp or udp)", s, slash + 1);
	len = (size_t)(slash - s);
	if (len == 0 || len >= sizeof(buf))
		return chlb_err(err, errlen, -EINVAL,
				"'%s': malformed VIP, expected ADDR:PORT/tcp|udp", s);
	memcpy(buf, s, len);
	buf[len] = '\0';
	/* ":*" is every port of the address: port 0, as the data plane keys it */
	if (len >= 2 && buf[len - 1] == '*' && buf[len - 2] == ':')
		buf[len - 1] = '0';
	/* a range (5060-5100) is no key of the data plane's exact index: say what is */
	host_end = buf[0] == '[' ? strchr(buf, ']') : buf;
	if (host_end && strrchr(host_end, ':') && strchr(strrchr(host_end, ':'), '-'))
		return chlb_err(err, errlen, -EINVAL,
				"'%s': port ranges are not supported (every port of the address is "
				"':*'; services of single ports beside it take theirs)",
				s);
	if (split_hostport(buf, s, &v->addr, &port, false, err, errlen, "VIP"))
		return -EINVAL;
	/* every port must be asked for: "10.0.0.10/tcp" is more likely a slip */
	host_end = buf[0] == '[' ? strchr(buf, ']') : buf;
	if (host_end && !strchr(host_end, ':'))
		return chlb_err(
		    err, errlen, -EINVAL,
		    "'%s': missing ':PORT' in VIP (every port of the address: '%s:*%s')", s, buf,
		    slash);

	v->port = (__u16)port;
	return 0;
}

/* "3,17,42": a jump backend's buckets, as the state file saves them; each in [lo, hi]. */
static int parse_bucket_list(const char *val, __u32 lo, __u32 hi, struct chlb_cmd *c)
{
	char buf[CHLB_LINE_MAX];
	char *save = NULL, *t;

	if (strlen(val) >= sizeof(buf) || !*val || *val == ',' || val[strlen(val) - 1] == ',' ||
	    strstr(val, ",,"))
		return -EINVAL;
	strcpy(buf, val);
	c->nbucket = 0;
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (c->nbucket == CHLB_BE_BUCKETS_MAX ||
		    parse_u32(t, lo, hi, &c->bucket[c->nbucket]))
			return -EINVAL;
		c->nbucket++;
	}
	return c->nbucket ? 0 : -EINVAL;
}

/*
 * `any`, or "10.0.0.0/8,192.0.2.7": at most CHLB_ALLOW_MAX prefixes, none
 * inside another (a duplicate or an overlap is a slip: which one was meant?).
 */
static int parse_prefixes(const char *val, struct chlb_cmd *c, char *err, size_t errlen)
{
	char buf[CHLB_LINE_MAX], a[64], b[64];
	char *save = NULL, *t;
	const char *why;

	c->nallow = 0;
	if (!strcmp(val, "any"))
		return 0;
	if (strlen(val) >= sizeof(buf) || !*val || *val == ',' || val[strlen(val) - 1] == ',' ||
	    strstr(val, ",,"))
		return chlb_err(err, errlen, -EINVAL,
				"'%s': malformed allow-list (any, or PREFIX,PREFIX,... without "
				"spaces)",
				val);
	strcpy(buf, val);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct chlb_prefix *p = &c->allow[c->nallow];

		if (c->nallow == CHLB_ALLOW_MAX)
			return chlb_err(err, errlen, -E2BIG,
					"'%s': too many prefixes in allow-list (at most %d)", t,
					CHLB_ALLOW_MAX);
		if (chlb_parse_prefix(t, p, &why))
			return chlb_err(err, errlen, -EINVAL, "'%s': malformed prefix: %s", t, why);
		for (__u32 i = 0; i < c->nallow; i++) {
			const struct chlb_prefix *q = &c->allow[i];

			if (p->addr.family != q->addr.family)
				return chlb_err(err, errlen, -EINVAL,
						"'%s': address family differs from '%s'", t,
						chlb_fmt_prefix(q, a, sizeof(a)));
			if (chlb_prefix_contains(q, p) || chlb_prefix_contains(p, q))
				return chlb_err(err, errlen, -EINVAL,
						"'%s': overlaps '%s' in the allow-list", t,
						chlb_fmt_prefix(q, b, sizeof(b)));
		}
		c->nallow++;
	}
	return 0;
}

/* "200-399": two numbers in [lo, hi], the first not above the second. */
static int parse_range(const char *s, __u32 lo, __u32 hi, __u32 *a, __u32 *b)
{
	const char *dash = strchr(s, '-');
	char first[16];

	if (!dash || (size_t)(dash - s) >= sizeof(first))
		return -EINVAL;
	memcpy(first, s, (size_t)(dash - s));
	first[dash - s] = '\0';
	if (parse_u32(first, lo, hi, a) || parse_u32(dash + 1, lo, hi, b) || *a > *b)
		return -EINVAL;
	return 0;
}

/* An HTTP path: '/', then printable ASCII without spaces, shorter than CHLB_CHECK_PATH_MAX. */
static bool valid_path(const char *s)
{
	if (s[0] != '/' || strlen(s) >= CHLB_CHECK_PATH_MAX)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return false;
	return true;
}

/* A host name ([A-Za-z0-9.-]), optionally ":PORT" (1-65535), shorter than CHLB_CHECK_HOST_MAX. */
static bool valid_host(const char *s)
{
	const char *colon = strchr(s, ':'), *p;
	__u32 port;

	if (!*s || s == colon || strlen(s) >= CHLB_CHECK_HOST_MAX)
		return false;
	for (p = s; *p && p != colon; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
			return false;
	return !colon || !parse_u32(colon + 1, 1, 65535, &port);
}

/* The check options: into c->check, with their CHLB_CK_* in c->check.set. */
static void store_check(const struct chlb_gopt *o, __u32 v, __u8 n, const char *text,
			struct chlb_cmd *c)
{
	struct chlb_check *k = &c->check;

	switch (o->bit) {
	case CHLB_OPT_CHECK:
		k->type = n;
		k->set |= CHLB_CK_TYPE;
		break;
	case CHLB_OPT_CK_PATH:
		snprintf(k->path, sizeof(k->path), "%s", text);
		k->set |= CHLB_CK_PATH;
		break;
	case CHLB_OPT_CK_EXPECT: /* parse_opt() stored the two ends */
		k->set |= CHLB_CK_EXPECT;
		break;
	case CHLB_OPT_CK_HOST:
		snprintf(k->host, sizeof(k->host), "%s", text);
		k->set |= CHLB_CK_HOST;
		break;
	case CHLB_OPT_CK_PORT:
		k->port = (__u16)v;
		k->set |= CHLB_CK_PORT;
		break;
	case CHLB_OPT_CK_INTERVAL:
		k->interval_ms = v;
		k->set |= CHLB_CK_INTERVAL;
		break;
	case CHLB_OPT_CK_TIMEOUT:
		k->timeout_ms = v;
		k->set |= CHLB_CK_TIMEOUT;
		break;
	case CHLB_OPT_CK_RISE:
		k->rise = (__u8)v;
		k->set |= CHLB_CK_RISE;
		break;
	case CHLB_OPT_CK_FALL:
		k->fall = (__u8)v;
		k->set |= CHLB_CK_FALL;
		break;
	case CHLB_OPT_CK_VIA:
		k->via = n;
		k->set |= CHLB_CK_VIA;
		break;
	case CHLB_OPT_ON_DOWN:
		c->health.on_down = n;
		break;
	case CHLB_OPT_SLOW_START:
		c->health.slow_start_s = v;
		break;
	case CHLB_OPT_PANIC:
		c->health.panic_pct = (__u8)v;
		break;
	default:
		break;
	}
}

/*
 * Where an option's value goes: v (UINT), n (NAME), a (ADDR), text (PATH,
 * HOST); a list and a range are stored by parse_opt().
 */
static void store_opt(const struct chlb_gopt *o, __u32 v, __u8 n, const struct chlb_addr *a,
		      const char *text, struct chlb_cmd *c)
{
	if (o->bit & CHLB_OPT_HEALTH_ALL)
		store_check(o, v, n, text, c);
	switch (o->bit) {
	case CHLB_OPT_ALGO:
		c->algo = n;
		break;
	case CHLB_OPT_FWD:
		c->fwd = n;
		break;
	case CHLB_OPT_HASH:
		c->hash = n;
		break;
	case CHLB_OPT_VNODES:
		c->vnodes = v;
		break;
	case CHLB_OPT_TARGET:
		c->vnodes_target = v;
		break;
	case CHLB_OPT_TABLE:
		c->table_size = v;
		break;
	case CHLB_OPT_MTU:
		c->mtu = (__u16)v;
		break;
	case CHLB_OPT_BUCKETS:
		c->buckets = v;
		break;
	case CHLB_OPT_WEIGHT:
		c->weight = v;
		break;
	case CHLB_OPT_BUCKET_ONE: /* `bucket N`; an old file's `buckets B1,...` filled c->bucket */
		c->bucket[0] = v;
		c->nbucket = 1;
		break;
	case CHLB_OPT_ENCAP_SRC:
		c->encap_src = *a;
		break;
	case CHLB_OPT_PERSIST:
		c->persist_s = v;
		break;
	case CHLB_OPT_NETMASK:
		c->netmask = (__u8)v;
		break;
	default: /* CHLB_OPT_FORCE: the bit alone; CHLB_OPT_BUCKET, _ALLOW: in c already */
		break;
	}
	c->set |= o->bit;
}

/*
 * An option's value, checked as the table says (kind, range, names):
 * semantic checks (prime, > backends, algo jump only) live in state.c.
 */
static int parse_opt(const struct chlb_gopt *o, const char *val, struct chlb_cmd *c, char *err,
		     size_t errlen)
{
	struct chlb_addr a = { 0 };
	char names[128];
	__u32 v = 0;
	__u8 n = 0;

	switch (o->val) {
	case CHLB_GV_FLAG:
		break;
	case CHLB_GV_NAME:
		if (o->parse(val, &n))
			return chlb_err(err, errlen, -EINVAL, "'%s': unknown %s (expected %s)", val,
					o->what,
					chlb_gopt_names(o, ", ", " or ", names, sizeof(names)));
		break;
	case CHLB_GV_UINT:
		if (o->zero_word && !strcmp(val, o->zero_word))
			break; /* v = 0 */
		if (o->slash && val[0] == '/')
			val++;
		if (parse_u32(val, o->zero_off ? 0 : o->lo, o->hi, &v) || (v && v < o->lo))
			return chlb_err(err, errlen, -EINVAL, "'%s': %s out of range (%s%s%s%u-%u)",
					val, o->what, o->zero_off ? "0 or " : "",
					o->zero_word ? o->zero_word : "",
					o->zero_word ? " or " : "", o->lo, o->hi);
		break;
	case CHLB_GV_MILLI: {
		char lo[16], hi[16];

		if (chlb_parse_milli(val, o->lo, o->hi, &v))
			return chlb_err(err, errlen, -EINVAL, "'%s': %s out of range (%s-%s)", val,
					o->what, chlb_fmt_milli(o->lo, lo, sizeof(lo)),
					chlb_fmt_milli(o->hi, hi, sizeof(hi)));
		break;
	}
	case CHLB_GV_UINT_LIST:
		if (parse_bucket_list(val, o->lo, o->hi, c))
			return chlb_err(err, errlen, -EINVAL, "'%s': malformed %s (%s each %u-%u)",
					val, o->what, o->meta, o->lo, o->hi);
		break;
	case CHLB_GV_ADDR:
		if (chlb_parse_addr(val, &a))
			return chlb_err(err, errlen, -EINVAL, "'%s': malformed %s", val, o->what);
		break;
	case CHLB_GV_RANGE: {
		__u32 lo, hi;

		if (parse_range(val, o->lo, o->hi, &lo, &hi))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': malformed %s (LO-HI, each %u-%u, LO <= HI)", val,
					o->what, o->lo, o->hi);
		c->check.expect_lo = (__u16)lo;
		c->check.expect_hi = (__u16)hi;
		break;
	}
	case CHLB_GV_PREFIXES:
		if (parse_prefixes(val, c, err, errlen))
			return -EINVAL;
		break;
	case CHLB_GV_PATH:
		if (!valid_path(val))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': malformed %s (starts with '/', printable ASCII "
					"without spaces, at most %d bytes)",
					val, o->what, CHLB_CHECK_PATH_MAX - 1);
		break;
	case CHLB_GV_HOST:
		if (!valid_host(val))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': malformed %s (letters, digits, '.' and '-', "
					"optionally :PORT 1-65535, at most %d bytes)",
					val, o->what, CHLB_CHECK_HOST_MAX - 1);
		break;
	default:
		return chlb_err(err, errlen, -EINVAL, "'%s': no value of this kind here", o->word);
	}
	store_opt(o, v, n, &a, val, c);
	return 0;
}

/* [OPTION [VALUE]]... from tok[i]: the keywords and values the table gives statement s. */
static int parse_opts(const struct chlb_gstmt *s, int i, int ntok, char *const *tok,
		      struct chlb_cmd *c, char *err, size_t errlen)
{
	char words[224];

	for (; i < ntok; i++) {
		const struct chlb_gopt *o = chlb_gopt_find(s, tok[i], CHLB_GW_GRAMMAR);

		if (!o && !*chlb_gopt_words(s, CHLB_GW_GRAMMAR, words, sizeof(words)))
			return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument", tok[i]);
		if (!o)
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unknown %s option (expected %s)", tok[i], s->obj,
					words);
		if (c->set & o->bit)
			return chlb_err(err, errlen, -EINVAL, "'%s': given twice", tok[i]);
		if (o->val != CHLB_GV_FLAG && i + 1 >= ntok)
			return chlb_err(err, errlen, -EINVAL, "'%s': missing value", tok[i]);
		if (parse_opt(o, o->val == CHLB_GV_FLAG ? "" : tok[++i], c, err, errlen))
			return -EINVAL;
	}
	if (s->need && !(c->set & s->need)) {
		/* one option needed: "weight W"; several: "at least one of weight, check, ..." */
		struct chlb_gstmt needed = *s;
		struct chlb_gopt opts[32];
		int n = 0;

		for (const struct chlb_gopt *o = s->opts; o && o->word && n < 31; o++)
			if (s->need & o->bit)
				opts[n++] = *o;
		opts[n].word = NULL;
		needed.opts = opts;
		if (n == 1)
			return chlb_err(err, errlen, -EINVAL,
					"'%s %s': nothing to set (expected %s %s)", s->obj, s->verb,
					opts[0].word, opts[0].meta);
		return chlb_err(err, errlen, -EINVAL,
				"'%s %s': nothing to set (expected at least one of %s)", s->obj,
				s->verb,
				chlb_gopt_words(&needed, CHLB_GW_GRAMMAR, words, sizeof(words)));
	}
	return 0;
}

/*
 * `service` and `backend`: COMMAND, its positional arguments (VIP, a
 * backend's ADDR), then its options, all as the table says.
 */
static int parse_object(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	const struct chlb_gstmt *s;
	char verbs[64];
	int i = 2;

	chlb_grammar_verbs(tok[0], CHLB_GW_GRAMMAR, verbs, sizeof(verbs));
	if (ntok < 2)
		return chlb_err(err, errlen, -EINVAL, "'%s': missing command (%s)", tok[0], verbs);
	s = chlb_grammar_find(tok[0], tok[1], CHLB_GW_GRAMMAR);
	if (!s)
		return chlb_err(err, errlen, -EINVAL, "'%s': unknown %s command (expected %s)",
				tok[1], tok[0], verbs);
	c->kind = s->kind;
	for (const struct chlb_garg *a = s->args; a->meta; a++) {
		if (!(a->where & CHLB_GW_GRAMMAR))
			continue;
		if (i >= ntok) {
			if (a->optional)
				break;
			return chlb_err(err, errlen, -EINVAL, "'%s %s': missing %s", tok[0], tok[1],
					a->what);
		}
		if (a->val == CHLB_GV_VIP) {
			c->has_vip = true;
			if (chlb_parse_vip(tok[i], &c->vip, err, errlen))
				return -EINVAL;
		} else if (chlb_parse_addr(tok[i], &c->backend)) { /* CHLB_GV_ADDR */
			return chlb_err(err, errlen, -EINVAL, "'%s': malformed %s", tok[i],
					a->what);
		}
		i++;
	}
	return parse_opts(s, i, ntok, tok, c, err, errlen);
}

static int parse_which(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	struct chlb_addr src, dst;
	__u32 sport, dport;
	__u8 proto;

	c->kind = CHLB_CMD_WHICH;
	if (ntok > 4)
		return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument", tok[4]);
	if (ntok != 4)
		return chlb_err(err, errlen, -EINVAL,
				"'which': expected SRC:PORT DST:PORT tcp|udp");
	if (split_hostport(tok[1], tok[1], &src, &sport, true, err, errlen, "source") ||
	    split_hostport(tok[2], tok[2], &dst, &dport, true, err, errlen, "destination"))
		return -EINVAL;
	if (parse_proto(tok[3], &proto))
		return chlb_err(err, errlen, -EINVAL,
				"'%s': unknown protocol (expected tcp or udp)", tok[3]);
	if (src.family != dst.family)
		return chlb_err(err, errlen, -EINVAL, "'%s': address family differs from '%s'",
				tok[2], tok[1]);
	memcpy(c->flow.src, src.a, 16);
	memcpy(c->flow.dst, dst.a, 16);
	c->flow.sport = htons((__u16)sport);
	c->flow.dport = htons((__u16)dport);
	c->flow.proto = proto;
	c->flow.family = src.family;
	return 0;
}

/*
 * conns [VIP] [backend ADDR] [list] [persist]: the VIP is positional (the first word
 * when it is not a keyword), like `service list [VIP]`.
 */
static int parse_conns(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	int i = 1;

	c->kind = CHLB_CMD_CONNS;
	if (i < ntok && strcmp(tok[i], "backend") && strcmp(tok[i], "list") &&
	    strcmp(tok[i], "persist")) {
		c->has_vip = true;
		if (chlb_parse_vip(tok[i++], &c->vip, err, errlen))
			return -EINVAL;
	}
	for (; i < ntok; i++) {
		if (!strcmp(tok[i], "list") && !c->list) {
			c->list = true;
		} else if (!strcmp(tok[i], "persist") && !c->persist_list) {
			c->persist_list = true;
		} else if (!strcmp(tok[i], "backend") && !c->backend.family) {
			if (i + 1 >= ntok)
				return chlb_err(err, errlen, -EINVAL,
						"'backend': missing backend address");
			if (chlb_parse_addr(tok[++i], &c->backend))
				return chlb_err(err, errlen, -EINVAL,
						"'%s': malformed backend address", tok[i]);
		} else if (!strcmp(tok[i], "list") || !strcmp(tok[i], "backend") ||
			   !strcmp(tok[i], "persist")) {
			return chlb_err(err, errlen, -EINVAL, "'%s': given twice", tok[i]);
		} else {
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unexpected argument (expected backend ADDR, list or "
					"persist)",
					tok[i]);
		}
	}
	return 0;
}

static int no_args(int ntok, char *const *tok, int max, char *err, size_t errlen)
{
	if (ntok > max)
		return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument", tok[max]);
	return 0;
}

/* A word without a value after the object (stats reset, apply force, shutdown detach), or none. */
static int parse_flag(const struct chlb_gstmt *s, int ntok, char *const *tok, bool *flag, char *err,
		      size_t errlen)
{
	char words[64];

	if (ntok >= 2 && !chlb_gopt_find(s, tok[1], CHLB_GW_GRAMMAR))
		return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument (expected %s)",
				tok[1], chlb_gopt_words(s, CHLB_GW_GRAMMAR, words, sizeof(words)));
	*flag = ntok >= 2;
	return no_args(ntok, tok, 2, err, errlen);
}

int chlb_parse_tokens(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	const struct chlb_gstmt *s;
	char words[128];

	memset(c, 0, sizeof(*c));
	if (err && errlen)
		err[0] = '\0';
	if (ntok <= 0)
		return 0;
	/* objects with commands: service, backend */
	if (*chlb_grammar_verbs(tok[0], CHLB_GW_GRAMMAR, words, sizeof(words)))
		return parse_object(ntok, tok, c, err, errlen);
	s = chlb_grammar_find(tok[0], NULL, CHLB_GW_GRAMMAR);
	if (!s)
		return chlb_err(err, errlen, -EINVAL, "'%s': unknown object (expected %s)", tok[0],
				chlb_grammar_objects(CHLB_GW_GRAMMAR, words, sizeof(words)));
	c->kind = s->kind;
	switch (s->kind) {
	case CHLB_CMD_WHICH:
		return parse_which(ntok, tok, c, err, errlen);
	case CHLB_CMD_CONNS:
		return parse_conns(ntok, tok, c, err, errlen);
	case CHLB_CMD_STATS: /* reset: zero the counters first */
		return parse_flag(s, ntok, tok, &c->reset, err, errlen);
	case CHLB_CMD_APPLY:
		return parse_flag(s, ntok, tok, &c->force, err, errlen);
	case CHLB_CMD_SHUTDOWN:
		return parse_flag(s, ntok, tok, &c->detach, err, errlen);
	default: /* save, dry-run */
		return no_args(ntok, tok, 1, err, errlen);
	}
}

/* Tokenize + parse the len bytes at line (a copy: line stays as it is). */
static int parse_len(const char *line, size_t len, struct chlb_cmd *cmd, char *err, size_t errlen)
{
	char buf[CHLB_LINE_MAX];
	char *tok[CHLB_TOKENS_MAX];
	int n;

	memset(cmd, 0, sizeof(*cmd));
	if (len >= sizeof(buf))
		return chlb_err(err, errlen, -E2BIG, "line too long (at most %d bytes)",
				CHLB_LINE_MAX - 1);
	memcpy(buf, line, len);
	buf[len] = '\0';
	n = chlb_tokenize(buf, tok, CHLB_TOKENS_MAX, err, errlen);
	if (n < 0)
		return n;
	return chlb_parse_tokens(n, tok, cmd, err, errlen);
}

int chlb_parse_line(const char *line, struct chlb_cmd *cmd, char *err, size_t errlen)
{
	return parse_len(line, strlen(line), cmd, err, errlen);
}

int chlb_parse_next(const char **text, struct chlb_cmd *cmd, char *err, size_t errlen)
{
	const char *nl = strchr(*text, '\n');
	size_t len = nl ? (size_t)(nl - *text) : strlen(*text);
	int r = parse_len(*text, len, cmd, err, errlen);

	*text += len + (nl ? 1 : 0);
	return r;
}
