// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The grammar's keyword table (see grammar_table.h): the one place a
 * statement, an option, its values and its range are written. The parser
 * (grammar.c), `chlbctl help` and the man pages (grammar_doc.c) read it.
 * Adding an option: an entry below, its CHLB_OPT_* bit (grammar.h) and the
 * field it fills (grammar.c, store_opt()); then `make grammar-docs`.
 */
#include <stdio.h>
#include <string.h>
#include "config/grammar_table.h"
#include "base/algo.h"
#include "config/check.h"
#include "table/vnodes_auto.h"

#define GW_ALL	   (CHLB_GW_GRAMMAR | CHLB_GW_CLI)
#define GW_REQUEST (CHLB_GW_SOCKET | CHLB_GW_CLI) /* a request, not a file's line */

/* chlbctl's --dry-run, on every change (the request's `dry-run` line) */
#define DRY_RUN_OPT                                                                               \
	{                                                                                         \
		.word = "--dry-run", .where = CHLB_GW_CLI, .val = CHLB_GV_FLAG,                   \
		.desc = "any change: print what it would move (keyspace, running flows), change " \
			"nothing; -n too"                                                         \
	}

/*
 * A health check's options: a service's check, and a backend's override of
 * some of its fields (only those given; chlb_check_effective() merges).
 */
#define CHECK_OPTS                                                                                \
	{ .word = "check",                                                                        \
	  .where = GW_ALL,                                                                        \
	  .val = CHLB_GV_NAME,                                                                    \
	  .what = "check type",                                                                   \
	  .name = chlb_check_type_name,                                                           \
	  .parse = chlb_check_type_parse,                                                         \
	  .has_dflt = true,                                                                       \
	  .dflt = CHLB_CHECK_NONE,                                                                \
	  .bit = CHLB_OPT_CHECK,                                                                  \
	  .desc = "health check: none (every backend serves), tcp (a connect that completes), "   \
		  "http (a GET whose status is in expect); a down backend gets no new flows. On " \
		  "a backend: overrides the service's (none: this backend is not checked)" },     \
	    { .word = "path",                                                                     \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_PATH,                                                                \
	      .meta = "PATH",                                                                     \
	      .what = "HTTP path",                                                                \
	      .dflt_text = "/",                                                                   \
	      .bit = CHLB_OPT_CK_PATH,                                                            \
	      .desc = "check http: the path of the GET" },                                        \
	    { .word = "expect",                                                                   \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_RANGE,                                                               \
	      .meta = "LO-HI",                                                                    \
	      .what = "status range",                                                             \
	      .lo = 100,                                                                          \
	      .hi = 599,                                                                          \
	      .dflt_text = "200-399",                                                             \
	      .bit = CHLB_OPT_CK_EXPECT,                                                          \
	      .desc = "check http: the statuses that pass" },                                     \
	    { .word = "host",                                                                     \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_HOST,                                                                \
	      .meta = "HOST",                                                                     \
	      .what = "host name",                                                                \
	      .bit = CHLB_OPT_CK_HOST,                                                            \
	      .desc = "check http: the Host header (default: the address probed)" },              \
	    { .word = "port",                                                                     \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_UINT,                                                                \
	      .meta = "N",                                                                        \
	      .what = "check port",                                                               \
	      .lo = 1,                                                                            \
	      .hi = 65535,                                                                        \
	      .bit = CHLB_OPT_CK_PORT,                                                            \
	      .desc = "the port probed (default: the VIP's; a VIP of every port needs one)" },    \
	    { .word = "interval",                                                                 \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_UINT,                                                                \
	      .meta = "MS",                                                                       \
	      .what = "check interval",                                                           \
	      .lo = 100,                                                                          \
	      .hi = 3600000,                                                                      \
	      .has_dflt = true,                                                                   \
	      .dflt = CHLB_CHECK_INTERVAL_MS,                                                     \
	      .bit = CHLB_OPT_CK_INTERVAL,                                                        \
	      .desc = "milliseconds from one probe's start to the next's" },                      \
	    { .word = "timeout",                                                                  \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_UINT,                                                                \
	      .meta = "MS",                                                                       \
	      .what = "check timeout",                                                            \
	      .lo = 10,                                                                           \
	      .hi = 600000,                                                                       \
	      .has_dflt = true,                                                                   \
	      .dflt = CHLB_CHECK_TIMEOUT_MS,                                                      \
	      .bit = CHLB_OPT_CK_TIMEOUT,                                                         \
	      .desc = "milliseconds a probe may take, at most the interval" },                    \
	    { .word = "rise",                                                                     \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_UINT,                                                                \
	      .meta = "N",                                                                        \
	      .what = "rise",                                                                     \
	      .lo = 1,                                                                            \
	      .hi = 100,                                                                          \
	      .has_dflt = true,                                                                   \
	      .dflt = CHLB_CHECK_RISE,                                                            \
	      .bit = CHLB_OPT_CK_RISE,                                                            \
	      .desc = "passed probes in a row that bring a backend up" },                         \
	    { .word = "fall",                                                                     \
	      .where = GW_ALL,                                                                    \
	      .val = CHLB_GV_UINT,                                                                \
	      .meta = "N",                                                                        \
	      .what = "fall",                                                                     \
	      .lo = 1,                                                                            \
	      .hi = 100,                                                                          \
	      .has_dflt = true,                                                                   \
	      .dflt = CHLB_CHECK_FALL,                                                            \
	      .bit = CHLB_OPT_CK_FALL,                                                            \
	      .desc = "failed probes in a row that take a backend down" },                        \
	{                                                                                         \
		.word = "via", .where = GW_ALL, .val = CHLB_GV_NAME, .what = "probe path",        \
		.name = chlb_check_via_name, .parse = chlb_check_via_parse, .has_dflt = true,     \
		.dflt = CHLB_VIA_AUTO, .bit = CHLB_OPT_CK_VIA,                                    \
		.desc = "vip: the probe goes to the VIP and is forwarded to the backend as "      \
			"client traffic is; direct: to the backend's address; auto: vip when "    \
			"this host has a route to the VIP, else direct"                           \
	}

/* service add and set */
static const struct chlb_gopt svc_opts[] = {
	{ .word = "algo",
	  .where = GW_ALL,
	  .val = CHLB_GV_NAME,
	  .what = "algorithm",
	  .name = chlb_algo_name,
	  .parse = chlb_algo_parse,
	  .has_dflt = true,
	  .dflt = CHLB_ALGO_RING,
	  .bit = CHLB_OPT_ALGO,
	  .desc = "the table's algorithm; jtable is jump's bucket order compiled into a "
		  "Maglev-format table: O(1) lookup, jump's disruption; hrw is weighted "
		  "rendezvous compiled into a Maglev-format table: O(1) lookup, stateless, "
		  "only a changed backend's flows move" },
	{ .word = "vnodes",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "K",
	  .what = "vnodes",
	  .lo = 1,
	  .hi = 65536,
	  .zero_word = "auto",
	  .has_dflt = true,
	  .dflt = CHLB_RING_DEFAULT_VNODES,
	  .bit = CHLB_OPT_VNODES,
	  .desc = "ring: points on the ring per backend at weight 100; auto: chlbd picks K, the "
		  "smallest power of two 16-4096 whose balance (max load / fair share, as chlbctl "
		  "sim computes it) is within target for the backends and weights, a function of "
		  "them alone so every LB host picks the same (service list shows it)" },
	{ .word = "target",
	  .where = GW_ALL,
	  .val = CHLB_GV_MILLI,
	  .meta = "B",
	  .what = "balance target",
	  .lo = CHLB_VNODES_TARGET_MIN,
	  .hi = CHLB_VNODES_TARGET_MAX,
	  .dflt_text = "1.05",
	  .bit = CHLB_OPT_TARGET,
	  .desc = "ring with vnodes auto: the balance K is picked for; past what the ring's "
		  "vnode limit allows, the largest K it allows" },
	{ .word = "table",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "M",
	  .what = "table size",
	  .lo = 2,
	  .hi = CHLB_MAGLEV_MAX_M,
	  .has_dflt = true,
	  .dflt = CHLB_MAGLEV_DEFAULT_M,
	  .bit = CHLB_OPT_TABLE,
	  .desc = "maglev, jtable and hrw: the table size, a prime larger than the backend count" },
	{ .word = "fwd",
	  .where = GW_ALL,
	  .val = CHLB_GV_NAME,
	  .what = "forwarding mode",
	  .name = chlb_fwd_name,
	  .parse = chlb_fwd_parse,
	  .has_dflt = true,
	  .dflt = CHLB_FWD_IPIP,
	  .bit = CHLB_OPT_FWD,
	  .desc = "ipip: encapsulate to the backend (anywhere routable; it decapsulates); "
		  "l2dsr: rewrite the MAC only (backends on this L2 segment)" },
	{ .word = "hash",
	  .where = GW_ALL,
	  .val = CHLB_GV_NAME,
	  .what = "hash fields",
	  .name = chlb_hash_name,
	  .parse = chlb_hash_parse,
	  .has_dflt = true,
	  .dflt = CHLB_HASH_5TUPLE,
	  .bit = CHLB_OPT_HASH,
	  .desc = "what the flow hash covers: the 5-tuple, or the source address alone "
		  "(a client's flows go to one backend)" },
	{ .word = "mtu",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "N",
	  .what = "mtu",
	  .lo = 576,
	  .hi = 65535,
	  .zero_off = true,
	  .has_dflt = true,
	  .dflt = 0,
	  .bit = CHLB_OPT_MTU,
	  .desc = "fwd ipip: a packet whose encapsulation would exceed N is answered with "
		  "ICMP too-big; 0: no check" },
	{ .word = "encap-src",
	  .where = GW_ALL,
	  .val = CHLB_GV_ADDR,
	  .meta = "ADDR",
	  .what = "address for encap-src",
	  .bit = CHLB_OPT_ENCAP_SRC,
	  .desc = "fwd ipip: the outer source address (default: derived from each flow's hash)" },
	{ .word = "buckets",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "N",
	  .what = "buckets",
	  .lo = 1,
	  .hi = CHLB_JUMP_MAX_BUCKETS,
	  .bit = CHLB_OPT_BUCKETS,
	  .desc = "jump and jtable: the bucket count of the saved bucket order (save writes it)" },
	{ .word = "force",
	  .where = GW_ALL,
	  .val = CHLB_GV_FLAG,
	  .bit = CHLB_OPT_FORCE,
	  .desc = "the VIP may be one of chlbd's own addresses (refused otherwise: it would take "
		  "the host's own traffic); kept in the state; --force too" },
	CHECK_OPTS,
	{ .word = "on-down",
	  .where = GW_ALL,
	  .val = CHLB_GV_NAME,
	  .what = "on-down action",
	  .name = chlb_on_down_name,
	  .parse = chlb_on_down_parse,
	  .has_dflt = true,
	  .dflt = CHLB_ON_DOWN_KEEP,
	  .bit = CHLB_OPT_ON_DOWN,
	  .desc = "a backend's connections when it goes down: keep (they drain; a flapping check "
		  "resets nothing) or reset (decided again: a fast reset instead of timeouts)" },
	{ .word = "slow-start",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "SECONDS",
	  .what = "slow start",
	  .lo = 0,
	  .hi = 3600,
	  .has_dflt = true,
	  .dflt = 0,
	  .bit = CHLB_OPT_SLOW_START,
	  .desc = "a backend coming up (or added) ramps to its weight over SECONDS; 0: at once" },
	{ .word = "panic",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "PERCENT",
	  .what = "panic threshold",
	  .lo = 0,
	  .hi = 100,
	  .has_dflt = true,
	  .dflt = CHLB_PANIC_PCT,
	  .bit = CHLB_OPT_PANIC,
	  .desc = "when fewer than PERCENT of the backends are up, health is ignored and all "
		  "serve" },
	{ .word = "persist",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "SECONDS",
	  .what = "persistence timeout",
	  .lo = 1,
	  .hi = CHLB_PERSIST_MAX_S,
	  .zero_off = true,
	  .zero_word = "off",
	  .has_dflt = true,
	  .dflt = 0,
	  .bit = CHLB_OPT_PERSIST,
	  .desc = "client persistence: a client's new connections go to the backend of its "
		  "first one while it was seen within SECONDS (its traffic refreshes it), across "
		  "changes, as long as that backend is up and not drained; a new client is "
		  "decided by its (masked) source address; not with hash src; off (0): none" },
	{ .word = "netmask",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "/N",
	  .what = "persistence netmask",
	  .lo = 0,
	  .hi = 128,
	  .slash = true,
	  .dflt_text = "/32 (IPv4), /128 (IPv6)",
	  .bit = CHLB_OPT_NETMASK,
	  .desc = "with persist: the source bits that name one client (/24: a client's whole "
		  "/24 shares its backend); at most the VIP family's length" },
	{ .word = "allow",
	  .where = GW_ALL,
	  .val = CHLB_GV_PREFIXES,
	  .meta = "PREFIX,...|any",
	  .what = "allow-list",
	  .dflt_text = "any",
	  .bit = CHLB_OPT_ALLOW,
	  .desc = "only these source prefixes reach the service (at most 64, of the VIP's "
		  "family, none inside another); other sources' packets are dropped and counted "
		  "(drop_source), established connections too; any: every source" },
	DRY_RUN_OPT,
	{ 0 },
};

/* backend add and set */
static const struct chlb_gopt be_opts[] = {
	{ .word = "weight",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "W",
	  .what = "weight",
	  .lo = 0,
	  .hi = CHLB_WEIGHT_MAX,
	  .has_dflt = true,
	  .dflt = CHLB_WEIGHT_DEFAULT,
	  .bit = CHLB_OPT_WEIGHT,
	  .desc = "the backend's share relative to the others; 0 drains it (its connections "
		  "stay, new ones go elsewhere)" },
	{ .word = "bucket",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT,
	  .meta = "N",
	  .what = "bucket",
	  .lo = 0,
	  .hi = CHLB_JUMP_MAX_BUCKETS - 1,
	  .bit = CHLB_OPT_BUCKET_ONE,
	  .desc = "jump and jtable: the backend's bucket (one each; save writes it); without "
		  "it a new backend takes the lowest free bucket, new backends of one "
		  "transaction in address order, so hosts given the same state build the same "
		  "table" },
	{ .word = "buckets",
	  .where = GW_ALL,
	  .val = CHLB_GV_UINT_LIST,
	  .meta = "B1,B2,...",
	  .what = "bucket list",
	  .lo = 0,
	  .hi = CHLB_JUMP_MAX_BUCKETS - 1,
	  .bit = CHLB_OPT_BUCKET,
	  .desc = "old state files (a bucket per 100 of weight): the first is the backend's "
		  "bucket" },
	CHECK_OPTS,
	DRY_RUN_OPT,
	{ 0 },
};

static const struct chlb_gopt dry_run_opts[] = { DRY_RUN_OPT, { 0 } };

static const struct chlb_gopt stats_opts[] = {
	{ .word = "--watch",
	  .where = CHLB_GW_CLI,
	  .val = CHLB_GV_SECONDS,
	  .meta = "SECONDS",
	  .val_optional = true,
	  .desc = "a frame every SECONDS (default 1) with this reader's rates, until Ctrl-C" },
	{ .word = "reset",
	  .cli = "--reset",
	  .where = GW_ALL,
	  .val = CHLB_GV_FLAG,
	  .desc = "zero the data plane's counters first (ct_insert kept)" },
	{ 0 },
};

static const struct chlb_gopt conns_opts[] = {
	{ .word = "backend",
	  .cli = "--backend",
	  .where = GW_ALL,
	  .val = CHLB_GV_ADDR,
	  .meta = "ADDR",
	  .what = "backend address",
	  .desc = "only this backend's entries, in every service that has it" },
	{ .word = "list",
	  .cli = "--json",
	  .where = GW_ALL,
	  .val = CHLB_GV_FLAG,
	  .desc = "the entries too, not only their counts (at most 100000)" },
	{ .word = "persist",
	  .cli = "--persist",
	  .where = GW_ALL,
	  .val = CHLB_GV_FLAG,
	  .desc = "the client affinity entries of persist services instead (at most 100000): "
		  "client, backend, age, whether they still hold" },
	{ 0 },
};

static const struct chlb_gopt apply_opts[] = {
	DRY_RUN_OPT,
	{ .word = "force",
	  .cli = "--force",
	  .where = GW_ALL,
	  .val = CHLB_GV_FLAG,
	  .desc = "the file may delete every service (refused otherwise)" },
	{ 0 },
};

static const struct chlb_gopt shutdown_opts[] = {
	{ .word = "detach",
	  .cli = "--detach",
	  .where = GW_ALL,
	  .val = CHLB_GV_FLAG,
	  .desc = "also detach the program and unpin its maps (else it keeps forwarding)" },
	{ 0 },
};

#define VIP_ARG(opt)                                                           \
	{                                                                      \
		"VIP", CHLB_GV_VIP, opt, GW_ALL, NULL, "VIP (ADDR:PORT/PROTO)" \
	}
#define FILE_ARG(m)                                                  \
	{                                                            \
		m, CHLB_GV_FILE, false, CHLB_GW_CLI, "-f", "-f FILE" \
	}

static const struct chlb_garg
    no_args[] = { { 0 } },
    vip_arg[] = { VIP_ARG(false), { 0 } }, opt_vip_arg[] = { VIP_ARG(true), { 0 } },
    vip_addr_args[] = { VIP_ARG(false),
			{ "ADDR", CHLB_GV_ADDR, false, GW_ALL, NULL, "backend address" },
			{ 0 } },
    which_args[] = { { "SRC:PORT", CHLB_GV_ENDPOINT, false, GW_ALL, NULL, "source" },
		     { "DST:PORT", CHLB_GV_ENDPOINT, false, GW_ALL, NULL, "destination" },
		     { "PROTO", CHLB_GV_PROTO, false, GW_ALL, NULL, "protocol" },
		     { 0 } },
    file_arg[] = { FILE_ARG("FILE"), { 0 } }, batch_arg[] = { FILE_ARG("FILE|-"), { 0 } };

#define SVC_SET_NEED                                                                             \
	(CHLB_OPT_ALGO | CHLB_OPT_VNODES | CHLB_OPT_TARGET | CHLB_OPT_TABLE | CHLB_OPT_FWD |     \
	 CHLB_OPT_HASH | CHLB_OPT_MTU | CHLB_OPT_ENCAP_SRC | CHLB_OPT_BUCKETS | CHLB_OPT_FORCE | \
	 CHLB_OPT_HEALTH_ALL | CHLB_OPT_ALLOW | CHLB_OPT_PERSIST | CHLB_OPT_NETMASK)

const struct chlb_gstmt chlb_grammar[] = {
	{ "service", "add", CHLB_CMD_SERVICE_ADD, GW_ALL, vip_arg, svc_opts, 0, false,
	  "a new service: its VIP, how its table is built and how its packets are forwarded" },
	/* at least one option: a bare `service set VIP` would be a silent no-op */
	{ "service", "set", CHLB_CMD_SERVICE_SET, GW_ALL, vip_arg, svc_opts, SVC_SET_NEED, true,
	  "change the options given (service add's); the others keep their values" },
	{ "service", "del", CHLB_CMD_SERVICE_DEL, GW_ALL, vip_arg, dry_run_opts, 0, false,
	  "remove a service and its backends" },
	{ "service", "list", CHLB_CMD_SERVICE_LIST, GW_REQUEST, opt_vip_arg, NULL, 0, false,
	  "options, backends, table fingerprint, tables in the view, swaps" },
	{ "backend", "add", CHLB_CMD_BACKEND_ADD, GW_ALL, vip_addr_args, be_opts, 0, false,
	  "a new backend ADDR of the service VIP" },
	{ "backend", "set", CHLB_CMD_BACKEND_SET, GW_ALL, vip_addr_args, be_opts,
	  CHLB_OPT_WEIGHT | CHLB_OPT_BUCKET_ONE | CHLB_OPT_BUCKET | CHLB_OPT_CHECK_ALL, false,
	  "change a backend's weight, bucket or its check's overrides (at least one option)" },
	{ "backend", "del", CHLB_CMD_BACKEND_DEL, GW_ALL, vip_addr_args, dry_run_opts, 0, false,
	  "remove a backend; its running flows are decided again" },
	{ "backend", "list", CHLB_CMD_BACKEND_LIST, GW_REQUEST, opt_vip_arg, NULL, 0, false,
	  "weight, slot, generation, state and live connection entries of each backend" },
	{ "stats", NULL, CHLB_CMD_STATS, GW_REQUEST, no_args, stats_opts, 0, false,
	  "packets, bytes, new flows, no-route drops per service and backend; reasons; the "
	  "connection table" },
	{ "which", NULL, CHLB_CMD_WHICH, GW_REQUEST, which_args, NULL, 0, false,
	  "where a flow goes: every table's decision, its connection entry" },
	{ "conns", NULL, CHLB_CMD_CONNS, GW_REQUEST, opt_vip_arg, conns_opts, 0, false,
	  "the connection table: entries per service and backend, live, ended (FIN/RST), stale" },
	{ "save", NULL, CHLB_CMD_SAVE, GW_REQUEST, no_args, NULL, 0, false,
	  "the state as statements of this grammar (input for apply)" },
	{ "apply", NULL, CHLB_CMD_APPLY, GW_REQUEST, file_arg, apply_opts, 0, false,
	  "converge to a whole config file (the request's next lines), atomically: one bad line "
	  "applies nothing" },
	{ "batch", NULL, CHLB_CMD_NONE, CHLB_GW_CLI, batch_arg, dry_run_opts, 0, false,
	  "the changes in FILE (- is stdin) as one transaction (one request)" },
	{ "dry-run", NULL, CHLB_CMD_DRY_RUN, CHLB_GW_SOCKET, no_args, NULL, 0, false,
	  "a request's first line: plan the changes that follow, change nothing" },
	{ "route", "list", CHLB_CMD_ROUTE_LIST, GW_REQUEST, no_args, NULL, 0, false,
	  "the VIP routes chlbd exports (--route-table) and whether they are withdrawn" },
	{ "route", "withdraw", CHLB_CMD_ROUTE_WITHDRAW, GW_REQUEST, no_args, NULL, 0, false,
	  "remove every exported VIP route, and add none, until announce or a restart "
	  "(maintenance: the routers move the flows to other LBs, chlbd keeps running)" },
	{ "route", "announce", CHLB_CMD_ROUTE_ANNOUNCE, GW_REQUEST, no_args, NULL, 0, false,
	  "export the VIP routes again after withdraw" },
	{ "shutdown", NULL, CHLB_CMD_SHUTDOWN, GW_REQUEST, no_args, shutdown_opts, 0, false,
	  "stop chlbd; the program stays attached and keeps forwarding unless detach" },
	{ "version", NULL, CHLB_CMD_NONE, CHLB_GW_CLI, no_args, NULL, 0, false,
	  "this chlbctl's and the running chlbd's version and BPF build id" },
	{ 0 },
};

const struct chlb_gkind chlb_gkinds[CHLB_GV_COUNT] = {
	[CHLB_GV_VIP] = { "VIP", "ADDR:PORT/PROTO, IPv6 in brackets: 10.0.0.10:80/tcp, "
				 "[2001:db8::10]:443/udp. PORT * (or 0) is every port of the "
				 "address, hashed with the destination port unless hash src; a "
				 "service of one port of that address takes that port. It is "
				 "written: 10.0.0.10/tcp is refused, naming 10.0.0.10:*/tcp. "
				 "Port ranges are not taken." },
	[CHLB_GV_ADDR] = { "ADDR", "An IPv4 or IPv6 address, IPv6 without brackets: 10.1.0.2, "
				   "2001:db8::2. A VIP's or a backend's is not unspecified, "
				   "loopback, multicast or broadcast." },
	[CHLB_GV_ENDPOINT] = { "SRC:PORT", "ADDR:PORT, IPv6 in brackets: 192.0.2.1:40000, "
					   "[2001:db8::1]:40000 (DST:PORT alike)." },
	[CHLB_GV_PROTO] = { "PROTO", "tcp or udp." },
	[CHLB_GV_UINT] = { "N", "A decimal number, without sign, in the option's range "
				"(K, M, W, MS, SECONDS, PERCENT alike)." },
	[CHLB_GV_RANGE] = { "LO-HI", "Two decimal numbers in the option's range, LO <= HI: "
				     "200-399." },
	[CHLB_GV_PATH] = { "PATH", "An HTTP path: '/', then printable ASCII without spaces, "
				   "at most 127 bytes: /healthz?full=1." },
	[CHLB_GV_HOST] = { "HOST", "A host name (letters, digits, '.' and '-'), optionally "
				   ":PORT, at most 127 bytes: www.example.com:8080." },
	[CHLB_GV_MILLI] = { "B", "A decimal number with up to 3 decimals, in the option's "
				 "range: 1.05." },
	[CHLB_GV_PREFIXES] = { "PREFIX,...",
			       "any, or source prefixes ADDR/LEN separated by commas, "
			       "without spaces: 10.0.0.0/8,192.0.2.7 (a bare address is "
			       "one host); no bits set past LEN." },
	[CHLB_GV_UINT_LIST] = { "B1,B2,...", "Decimal numbers separated by commas, without "
					     "spaces: 0,7,42." },
};

const struct chlb_gstmt *chlb_grammar_find(const char *obj, const char *verb, unsigned int where)
{
	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++)
		if ((s->where & where) && !strcmp(s->obj, obj) &&
		    (!s->verb || (verb && !strcmp(s->verb, verb))))
			return s;
	return NULL;
}

const struct chlb_gopt *chlb_gopt_find(const struct chlb_gstmt *s, const char *word,
				       unsigned int where)
{
	for (const struct chlb_gopt *o = s->opts; o && o->word; o++)
		if ((o->where & where) && !strcmp(o->word, word))
			return o;
	return NULL;
}

/* Appends "a, b, c or d" one word at a time: n words so far, last says it is the last. */
static void list_add(char *buf, size_t len, int n, bool last, const char *sep, const char *and,
		     const char *w)
{
	size_t at = strlen(buf);

	if (at < len)
		snprintf(buf + at, len - at, "%s%s", n == 0 ? "" : last ? and : sep, w);
}

/* Words of a list with one more to come: collect them, then flush with the last one known. */
struct word_list {
	char *buf;
	size_t len;
	int n;
	const char *pending, *sep, *and;
};

static void wl_push(struct word_list *l, const char *w)
{
	if (l->pending)
		list_add(l->buf, l->len, l->n++, false, l->sep, l->and, l->pending);
	l->pending = w;
}

static const char *wl_end(struct word_list *l)
{
	if (l->pending)
		list_add(l->buf, l->len, l->n++, true, l->sep, l->and, l->pending);
	return l->buf;
}

static struct word_list wl_start(char *buf, size_t len, const char *sep, const char *and)
{
	if (len)
		buf[0] = '\0';
	return (struct word_list){ .buf = buf, .len = len, .sep = sep, .and = and};
}

const char *chlb_grammar_objects(unsigned int where, char *buf, size_t len)
{
	struct word_list l = wl_start(buf, len, ", ", " or ");

	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++)
		if ((s->where & where) && (s == chlb_grammar || strcmp(s[-1].obj, s->obj)))
			wl_push(&l, s->obj);
	return wl_end(&l);
}

const char *chlb_grammar_verbs(const char *obj, unsigned int where, char *buf, size_t len)
{
	struct word_list l = wl_start(buf, len, ", ", " or ");

	for (const struct chlb_gstmt *s = chlb_grammar; s->obj; s++)
		if ((s->where & where) && s->verb && !strcmp(s->obj, obj))
			wl_push(&l, s->verb);
	return wl_end(&l);
}

const char *chlb_gopt_words(const struct chlb_gstmt *s, unsigned int where, char *buf, size_t len)
{
	struct word_list l = wl_start(buf, len, ", ", " or ");

	for (const struct chlb_gopt *o = s->opts; o && o->word; o++)
		if (o->where & where)
			wl_push(&l, o->word);
	return wl_end(&l);
}

const char *chlb_gopt_names(const struct chlb_gopt *o, const char *sep, const char *last, char *buf,
			    size_t len)
{
	struct word_list l = wl_start(buf, len, sep, last);

	/* every value with a name, in value order: ring, jump, maglev, jtable, hrw */
	for (unsigned int v = 0; o->name && v < 256; v++)
		if (strcmp(o->name((__u8)v), "?"))
			wl_push(&l, o->name((__u8)v));
	return wl_end(&l);
}
