/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one command grammar. chlbctl arguments, control-socket requests, the
 * config file (-c, `apply -f`) and the saved state file are all sequences of
 * these statements, parsed by chlb_parse_tokens(); errors name the token.
 *
 * The statements, their arguments, options, values and ranges are written
 * once, in the keyword table (config/grammar_table.c): the parser takes its
 * keywords and value checks from there, and `chlbctl help` and docs/chlb.5
 * (`man -l docs/chlb.5`) are generated from it. For example
 *
 *   service add 10.0.0.10:80/tcp algo maglev table 65537 fwd ipip
 *   backend add 10.0.0.10:80/tcp 10.1.0.2 weight 100
 *   service add [2001:db8::10]:0/udp force  (port 0 = star: every port)
 *
 * VIP = ADDR:PORT/PROTO, IPv6 in brackets; port * (or 0, as older files
 * write it) means every port of the address, and must be written:
 * 10.0.0.10/tcp is an error naming ADDR:* (star), then /tcp. Written back with the star.
 */
#ifndef CHLB_GRAMMAR_H
#define CHLB_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "chlb_common.h"
#include "chlb_hash.h"
#include "base/addr.h"
#include "base/algo.h"
#include "config/check.h"

#define CHLB_LINE_MAX	4096 /* longest statement */
#define CHLB_TOKENS_MAX 64   /* most tokens in one statement (a service with every option) */
#define CHLB_ERR_MAX	256

enum chlb_cmd_kind {
	CHLB_CMD_NONE = 0, /* empty line or comment */
	CHLB_CMD_SERVICE_ADD,
	CHLB_CMD_SERVICE_SET,
	CHLB_CMD_SERVICE_DEL,
	CHLB_CMD_SERVICE_LIST,
	CHLB_CMD_BACKEND_ADD,
	CHLB_CMD_BACKEND_SET,
	CHLB_CMD_BACKEND_DEL,
	CHLB_CMD_BACKEND_LIST,
	CHLB_CMD_STATS,
	CHLB_CMD_WHICH,
	CHLB_CMD_SAVE,
	CHLB_CMD_APPLY,
	CHLB_CMD_SHUTDOWN,
	CHLB_CMD_DRY_RUN,
	CHLB_CMD_CONNS,
	CHLB_CMD_ROUTE_LIST,	 /* route export (chlbd --route-table): what is exported */
	CHLB_CMD_ROUTE_WITHDRAW, /* ... empty the table and keep it empty */
	CHLB_CMD_ROUTE_ANNOUNCE, /* ... export again */
};

/* Which service options a statement set (struct chlb_cmd.set). */
enum {
	CHLB_OPT_ALGO = 1u << 0,
	CHLB_OPT_VNODES = 1u << 1,
	CHLB_OPT_TABLE = 1u << 2,
	CHLB_OPT_FWD = 1u << 3,
	CHLB_OPT_HASH = 1u << 4,
	CHLB_OPT_MTU = 1u << 5,
	CHLB_OPT_ENCAP_SRC = 1u << 6,
	CHLB_OPT_BUCKETS = 1u << 7,
	CHLB_OPT_WEIGHT = 1u << 8,
	CHLB_OPT_BUCKET = 1u << 9,
	CHLB_OPT_FORCE = 1u << 10,
	CHLB_OPT_BUCKET_ONE = 1u << 11, /* `bucket N` (CHLB_OPT_BUCKET: an old file's list) */
	CHLB_OPT_TARGET = 1u << 12,	/* ring, vnodes auto: `target B` */
	CHLB_OPT_PERSIST = 1u << 13,	/* persist SECONDS|off: client persistence */
	CHLB_OPT_ALLOW = 1u << 14,	/* allow P1,P2,... | any: the source allow-list */
	CHLB_OPT_NETMASK = 1u << 15,	/* netmask /N: which source bits name a persistent client */
	/* health checks: service add/set; the CHLB_OPT_CHECK_ALL ones on backends too */
	CHLB_OPT_CHECK = 1u << 16, /* check none|tcp|http */
	CHLB_OPT_CK_PATH = 1u << 17,
	CHLB_OPT_CK_EXPECT = 1u << 18,
	CHLB_OPT_CK_HOST = 1u << 19,
	CHLB_OPT_CK_PORT = 1u << 20,
	CHLB_OPT_CK_INTERVAL = 1u << 21,
	CHLB_OPT_CK_TIMEOUT = 1u << 22,
	CHLB_OPT_CK_RISE = 1u << 23,
	CHLB_OPT_CK_FALL = 1u << 24,
	CHLB_OPT_CK_VIA = 1u << 25,
	CHLB_OPT_ON_DOWN = 1u << 26, /* service only from here */
	CHLB_OPT_SLOW_START = 1u << 27,
	CHLB_OPT_PANIC = 1u << 28,
};

/* The check's options (struct chlb_cmd.check), and those with the service's policy. */
#define CHLB_OPT_CHECK_ALL                                                                  \
	(CHLB_OPT_CHECK | CHLB_OPT_CK_PATH | CHLB_OPT_CK_EXPECT | CHLB_OPT_CK_HOST |        \
	 CHLB_OPT_CK_PORT | CHLB_OPT_CK_INTERVAL | CHLB_OPT_CK_TIMEOUT | CHLB_OPT_CK_RISE | \
	 CHLB_OPT_CK_FALL | CHLB_OPT_CK_VIA)
#define CHLB_OPT_HEALTH_ALL \
	(CHLB_OPT_CHECK_ALL | CHLB_OPT_ON_DOWN | CHLB_OPT_SLOW_START | CHLB_OPT_PANIC)

/* jump: most buckets one backend holds (weight CHLB_WEIGHT_MAX / 100 per bucket) */
#define CHLB_BE_BUCKETS_MAX (CHLB_WEIGHT_MAX / 100 + 1)

struct chlb_cmd {
	enum chlb_cmd_kind kind;
	bool has_vip; /* list commands: VIP given */
	struct chlb_vip vip;
	struct chlb_addr backend;
	__u32 set; /* CHLB_OPT_* given */
	__u8 algo, fwd, hash;
	__u16 mtu;
	__u32 vnodes, table_size, buckets; /* vnodes 0: `vnodes auto` */
	__u32 vnodes_target;		   /* `target B`: B in thousandths */
	struct chlb_addr encap_src;
	__u32 persist_s;   /* persist: seconds, 0 off */
	bool persist_list; /* conns persist: the client affinity entries, not the connections */
	__u8 netmask;	   /* netmask /N: N */
	__u32 nallow;	   /* allow: the prefixes (0 with CHLB_OPT_ALLOW: `allow any`) */
	struct chlb_prefix allow[CHLB_ALLOW_MAX];
	__u32 weight;
	__u32 nbucket; /* jump: the backend's buckets, as saved (buckets B1,B2,...) */
	__u32 bucket[CHLB_BE_BUCKETS_MAX];
	struct chlb_flow flow;		  /* which */
	bool detach;			  /* shutdown detach */
	bool list;			  /* conns: the entries too, not only the counts */
	bool force;			  /* apply force: the file may delete every service */
	bool reset;			  /* stats reset: zero the data plane's counters first */
	struct chlb_check check;	  /* check options given: check.set has their CHLB_CK_* */
	struct chlb_health_policy health; /* on-down, slow-start, panic (CHLB_OPT_* in set) */
};

/* Is this statement a change of the desired state (add/set/del)? */
bool chlb_cmd_is_change(enum chlb_cmd_kind kind);

/* Splits a line into tokens in place (whitespace; '#' at a token's start begins a comment): their count, or -E2BIG. */
int chlb_tokenize(char *line, char **tok, int max, char *err, size_t errlen);

/*
 * Parses one statement. Returns 0, or -EINVAL (-E2BIG: too many tokens, a
 * line too long) with err naming the offending token.
 */
int chlb_parse_tokens(int ntok, char *const *tok, struct chlb_cmd *cmd, char *err, size_t errlen);

/* Tokenize + parse one line (copied; line may be const). */
int chlb_parse_line(const char *line, struct chlb_cmd *cmd, char *err, size_t errlen);
/* The same for the line at *text (up to '\n' or the end); *text moves past it. */
int chlb_parse_next(const char **text, struct chlb_cmd *cmd, char *err, size_t errlen);

/* A VIP: ADDR:PORT/PROTO, IPv6 in brackets (addresses: base/addr.h). */
int chlb_parse_vip(const char *s, struct chlb_vip *v, char *err, size_t errlen);

#endif /* CHLB_GRAMMAR_H */
