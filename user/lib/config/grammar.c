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
#include "base/err.h"
#include "base/util.h"

bool chlb_cmd_is_change(enum chlb_cmd_kind kind)
{
	switch (kind) {
	case CHLB_CMD_SERVICE_ADD:
	case CHLB_CMD_SERVICE_SET:
	case CHLB_CMD_SERVICE_DEL:
	case CHLB_CMD_BACKEND_ADD:
	case CHLB_CMD_BACKEND_SET:
	case CHLB_CMD_BACKEND_DEL:
		return true;
	default:
		return false;
	}
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
		while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != '#')
			p++;
		if (*p == '#') {
			*p = '\0';
			break;
		}
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
	if (split_hostport(buf, s, &v->addr, &port, false, err, errlen, "VIP"))
		return -EINVAL;
	/* every port must be asked for: "10.0.0.10/tcp" is more likely a slip */
	host_end = buf[0] == '[' ? strchr(buf, ']') : buf;
	if (host_end && !strchr(host_end, ':'))
		return chlb_err(
		    err, errlen, -EINVAL,
		    "'%s': missing ':PORT' in VIP (every port of the address: '%s:0%s')", s, buf,
		    slash);
	v->port = (__u16)port;
	return 0;
}

/* Numeric option ranges; semantic checks (prime, > backends) live in state.c. */
static int parse_svc_opt(const char *key, const char *val, struct chlb_cmd *c, char *err,
			 size_t errlen)
{
	__u32 v;

	if (!strcmp(key, "algo")) {
		if (chlb_algo_parse(val, &c->algo))
			return chlb_err(
			    err, errlen, -EINVAL,
			    "'%s': unknown algorithm (expected ring, jump, maglev or jtable)", val);
		c->set |= CHLB_OPT_ALGO;
	} else if (!strcmp(key, "vnodes")) {
		if (parse_u32(val, 1, 65536, &v))
			return chlb_err(err, errlen, -EINVAL, "'%s': vnodes out of range (1-65536)",
					val);
		c->vnodes = v;
		c->set |= CHLB_OPT_VNODES;
	} else if (!strcmp(key, "table")) {
		if (parse_u32(val, 2, CHLB_MAGLEV_MAX_M, &v))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': table size out of range (2-%u)", val,
					CHLB_MAGLEV_MAX_M);
		c->table_size = v;
		c->set |= CHLB_OPT_TABLE;
	} else if (!strcmp(key, "fwd")) {
		if (chlb_fwd_parse(val, &c->fwd))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unknown forwarding mode (expected l2dsr or ipip)",
					val);
		c->set |= CHLB_OPT_FWD;
	} else if (!strcmp(key, "hash")) {
		if (chlb_hash_parse(val, &c->hash))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unknown hash fields (expected 5tuple or src)", val);
		c->set |= CHLB_OPT_HASH;
	} else if (!strcmp(key, "mtu")) {
		if (parse_u32(val, 0, 65535, &v) || (v && v < 576))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': mtu out of range (0 or 576-65535)", val);
		c->mtu = (__u16)v;
		c->set |= CHLB_OPT_MTU;
	} else if (!strcmp(key, "encap-src")) {
		if (chlb_parse_addr(val, &c->encap_src))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': malformed address for encap-src", val);
		c->set |= CHLB_OPT_ENCAP_SRC;
	} else if (!strcmp(key, "buckets")) {
		if (parse_u32(val, 1, CHLB_JUMP_MAX_BUCKETS, &v))
			return chlb_err(err, errlen, -EINVAL, "'%s': buckets out of range (1-%u)",
					val, CHLB_JUMP_MAX_BUCKETS);
		c->buckets = v;
		c->set |= CHLB_OPT_BUCKETS;
	} else {
		return chlb_err(err, errlen, -EINVAL,
				"'%s': unknown service option (expected algo, vnodes, table, fwd, "
				"hash, mtu, encap-src, force)",
				key);
	}
	return 0;
}

/* "3,17,42": a jump backend's buckets, as the state file saves them. */
static int parse_bucket_list(const char *val, struct chlb_cmd *c)
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
		    parse_u32(t, 0, CHLB_JUMP_MAX_BUCKETS - 1, &c->bucket[c->nbucket]))
			return -EINVAL;
		c->nbucket++;
	}
	return c->nbucket ? 0 : -1;
}

static int parse_be_opt(const char *key, const char *val, struct chlb_cmd *c, char *err,
			size_t errlen)
{
	__u32 v;

	if (!strcmp(key, "weight")) {
		if (parse_u32(val, 0, CHLB_WEIGHT_MAX, &v))
			return chlb_err(err, errlen, -EINVAL, "'%s': weight out of range (0-%u)",
					val, CHLB_WEIGHT_MAX);
		c->weight = v;
		c->set |= CHLB_OPT_WEIGHT;
	} else if (!strcmp(key, "buckets")) {
		if (parse_bucket_list(val, c))
			return chlb_err(err, errlen, -EINVAL,
					"'%s': malformed bucket list (B1,B2,... each 0-%u)", val,
					CHLB_JUMP_MAX_BUCKETS - 1);
		c->set |= CHLB_OPT_BUCKET;
	} else {
		return chlb_err(err, errlen, -EINVAL,
				"'%s': unknown backend option (expected weight or buckets)", key);
	}
	return 0;
}

typedef int (*opt_fn)(const char *, const char *, struct chlb_cmd *, char *, size_t);

static int parse_opts(int i, int ntok, char *const *tok, opt_fn fn, struct chlb_cmd *c, char *err,
		      size_t errlen)
{
	__u32 before;

	for (; i < ntok; i += 2) {
		/* a service's `force`: the one option without a value */
		if (fn == parse_svc_opt && !strcmp(tok[i], "force")) {
			if (c->set & CHLB_OPT_FORCE)
				return chlb_err(err, errlen, -EINVAL, "'force': given twice");
			c->set |= CHLB_OPT_FORCE;
			i--;
			continue;
		}
		if (i + 1 >= ntok) {
			/* let the option parser reject unknown keys first */
			if (fn(tok[i], "", c, err, errlen) && strstr(err, "option (expected"))
				return -EINVAL;
			return chlb_err(err, errlen, -EINVAL, "'%s': missing value", tok[i]);
		}
		before = c->set;
		if (fn(tok[i], tok[i + 1], c, err, errlen))
			return -EINVAL;
		if (before == c->set)
			return chlb_err(err, errlen, -EINVAL, "'%s': option given twice", tok[i]);
	}
	return 0;
}

static int need(int i, int ntok, char *const *tok, const char *what, char *err, size_t errlen)
{
	if (i < ntok)
		return 0;
	return chlb_err(err, errlen, -EINVAL, "'%s %s': missing %s", tok[0], ntok > 1 ? tok[1] : "",
			what);
}

/* The verbs `service` and `backend` take, with the command each one means. */
struct obj_verbs {
	const char *obj;
	enum chlb_cmd_kind add, set, del, list;
};

static const struct obj_verbs service_verbs = { "service", CHLB_CMD_SERVICE_ADD,
						CHLB_CMD_SERVICE_SET, CHLB_CMD_SERVICE_DEL,
						CHLB_CMD_SERVICE_LIST },
			      backend_verbs = { "backend", CHLB_CMD_BACKEND_ADD,
						CHLB_CMD_BACKEND_SET, CHLB_CMD_BACKEND_DEL,
						CHLB_CMD_BACKEND_LIST };

/*
 * What `service` and `backend` share: the verb, then the VIP (optional for
 * list). Returns 1 when the command is complete (list), 0 when the caller
 * goes on parsing at tok[3], -1 on error.
 */
static int parse_verb_vip(int ntok, char *const *tok, const struct obj_verbs *v, struct chlb_cmd *c,
			  char *err, size_t errlen)
{
	const char *verb;

	if (ntok < 2)
		return chlb_err(err, errlen, -EINVAL, "'%s': missing command (add, set, del, list)",
				v->obj);
	verb = tok[1];
	if (!strcmp(verb, "list")) {
		c->kind = v->list;
		if (ntok > 3)
			return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument", tok[3]);
		if (ntok == 3) {
			c->has_vip = true;
			if (chlb_parse_vip(tok[2], &c->vip, err, errlen))
				return -EINVAL;
		}
		return 1;
	}
	if (!strcmp(verb, "add"))
		c->kind = v->add;
	else if (!strcmp(verb, "set"))
		c->kind = v->set;
	else if (!strcmp(verb, "del"))
		c->kind = v->del;
	else
		return chlb_err(err, errlen, -EINVAL,
				"'%s': unknown %s command (expected add, set, del, list)", verb,
				v->obj);
	if (need(2, ntok, tok, "VIP (ADDR:PORT/PROTO)", err, errlen))
		return -EINVAL;
	c->has_vip = true;
	return chlb_parse_vip(tok[2], &c->vip, err, errlen);
}

static int parse_service(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	int rc = parse_verb_vip(ntok, tok, &service_verbs, c, err, errlen);

	if (rc)
		return rc < 0 ? rc : 0;
	if (c->kind == CHLB_CMD_SERVICE_DEL) {
		if (ntok > 3)
			return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument", tok[3]);
		return 0;
	}
	return parse_opts(3, ntok, tok, parse_svc_opt, c, err, errlen);
}

static int parse_backend(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	int rc = parse_verb_vip(ntok, tok, &backend_verbs, c, err, errlen);

	if (rc)
		return rc < 0 ? rc : 0;
	if (need(3, ntok, tok, "backend address", err, errlen))
		return -EINVAL;
	if (chlb_parse_addr(tok[3], &c->backend))
		return chlb_err(err, errlen, -EINVAL, "'%s': malformed backend address", tok[3]);
	if (c->kind == CHLB_CMD_BACKEND_DEL) {
		if (ntok > 4)
			return chlb_err(err, errlen, -EINVAL, "'%s': unexpected argument", tok[4]);
		return 0;
	}
	if (parse_opts(4, ntok, tok, parse_be_opt, c, err, errlen))
		return -EINVAL;
	if (c->kind == CHLB_CMD_BACKEND_SET && !(c->set & CHLB_OPT_WEIGHT))
		return chlb_err(err, errlen, -EINVAL,
				"'backend set': nothing to set (expected weight W)");
	return 0;
}

static int parse_which(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	struct chlb_addr src, dst;
	__u32 sport, dport;
	__u8 proto;

	c->kind = CHLB_CMD_WHICH;
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
 * conns [VIP] [backend ADDR] [list]: the VIP is positional (the first word
 * when it is not a keyword), like `service list [VIP]`.
 */
static int parse_conns(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	int i = 1;

	c->kind = CHLB_CMD_CONNS;
	if (i < ntok && strcmp(tok[i], "backend") && strcmp(tok[i], "list")) {
		c->has_vip = true;
		if (chlb_parse_vip(tok[i++], &c->vip, err, errlen))
			return -EINVAL;
	}
	for (; i < ntok; i++) {
		if (!strcmp(tok[i], "list") && !c->list) {
			c->list = true;
		} else if (!strcmp(tok[i], "backend") && !c->backend.family) {
			if (i + 1 >= ntok)
				return chlb_err(err, errlen, -EINVAL,
						"'backend': missing backend address");
			if (chlb_parse_addr(tok[++i], &c->backend))
				return chlb_err(err, errlen, -EINVAL,
						"'%s': malformed backend address", tok[i]);
		} else if (!strcmp(tok[i], "list") || !strcmp(tok[i], "backend")) {
			return chlb_err(err, errlen, -EINVAL, "'%s': given twice", tok[i]);
		} else {
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unexpected argument (expected backend ADDR or list)",
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

int chlb_parse_tokens(int ntok, char *const *tok, struct chlb_cmd *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (err && errlen)
		err[0] = '\0';
	if (ntok <= 0)
		return 0;
	if (!strcmp(tok[0], "service"))
		return parse_service(ntok, tok, c, err, errlen);
	if (!strcmp(tok[0], "backend"))
		return parse_backend(ntok, tok, c, err, errlen);
	if (!strcmp(tok[0], "which"))
		return parse_which(ntok, tok, c, err, errlen);
	if (!strcmp(tok[0], "conns"))
		return parse_conns(ntok, tok, c, err, errlen);
	if (!strcmp(tok[0], "stats")) {
		c->kind = CHLB_CMD_STATS;
		c->reset = ntok >= 2 && !strcmp(tok[1], "reset"); /* zero the counters first */
		if (ntok >= 2 && !c->reset)
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unexpected argument (expected reset)", tok[1]);
		return no_args(ntok, tok, 2, err, errlen);
	}
	if (!strcmp(tok[0], "save")) {
		c->kind = CHLB_CMD_SAVE;
		return no_args(ntok, tok, 1, err, errlen);
	}
	if (!strcmp(tok[0], "apply")) {
		c->kind = CHLB_CMD_APPLY;
		c->force = ntok >= 2 && !strcmp(tok[1], "force");
		if (ntok >= 2 && !c->force)
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unexpected argument (expected force)", tok[1]);
		return no_args(ntok, tok, 2, err, errlen);
	}
	if (!strcmp(tok[0], "dry-run")) {
		c->kind = CHLB_CMD_DRY_RUN;
		return no_args(ntok, tok, 1, err, errlen);
	}
	if (!strcmp(tok[0], "shutdown")) {
		c->kind = CHLB_CMD_SHUTDOWN;
		if (ntok == 2 && !strcmp(tok[1], "detach")) {
			c->detach = true;
			return 0;
		}
		if (ntok >= 2)
			return chlb_err(err, errlen, -EINVAL,
					"'%s': unexpected argument (expected detach)", tok[1]);
		return 0;
	}
	return chlb_err(
	    err, errlen, -EINVAL,
	    "'%s': unknown object (expected service, backend, stats, which, conns, save, "
	    "apply, shutdown)",
	    tok[0]);
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
