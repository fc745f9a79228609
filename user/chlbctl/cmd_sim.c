// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl sim: argument parsing and output around chlb_sim_run()
 * (user/lib/table/sim.c). The service's table options are taken as the
 * grammar writes them, `algo ring vnodes 160 table 65537` (what `service
 * add` takes), or as flags, `--algo ring --vnodes 160 --table-size 65537`;
 * the planner's own knobs (--backends, --flows, --weights...) have no
 * grammar form: they are flags only.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "chlbctl.h"
#include "base/util.h"
#include "table/sim.h"
#include "client.h"
#include "base/json_out.h"

void sim_usage(void)
{
	printf("chlbctl sim --algo ring|jump|maglev|jtable|hrw --backends N [--vnodes K|auto] "
	       "[--table-size "
	       "M]\n"
	       "            [--target-balance B] [--flows F] [--samples S] [--seed S] [--weights "
	       "W1,W2,...]\n"
	       "            [--names A1,A2,...] [--json]\n"
	       "  (algo A, vnodes K and table M, as service add writes them, work too)\n"
	       "  Builds the table for N backends (names generated 10.x.y.z, or --names; weights\n"
	       "  100, or --weights), then with one backend added and with the middle one\n"
	       "  removed, and reports balance (max and min load / fair share) and the share of\n"
	       "  flows that change backend, against the ideal 1/(N+1) and 1/N. Keyspace columns\n"
	       "  are exact shares of the 2^32 flow hashes (jump: exact bucket distribution);\n"
	       "  'flows' columns are measured over F random flows (default 1000000; jump's\n"
	       "  balance over max(F, 2^24)). --seed picks the flows. jtable: a jump bucket order\n"
	       "  compiled into a Maglev-format table (O(1) lookup, jump's disruption). hrw:\n"
	       "  weighted rendezvous per entry of a Maglev-format table; sim also scores every\n"
	       "  backend for every entry (O(M N)) and shows where the table differs from that.\n"
	       "  ring --target-balance B (or vnodes auto [target B], default 1.05): the K\n"
	       "  `vnodes auto` picks for this set, the smallest power of two 16..4096 whose\n"
	       "  balance is within B, and the figures with it.\n");
}

static int parse_u64(const char *opt, const char *s, __u64 min, __u64 max, __u64 *out)
{
	if (chlb_parse_u64(s, 0, min, max, out))
		return p_usage("--%s: '%s' is not a number in %llu..%llu", opt, s,
			       (unsigned long long)min, (unsigned long long)max);
	return 0;
}

static const struct option opts[] = {
	{ "algo", required_argument, NULL, 'a' },
	{ "backends", required_argument, NULL, 'n' },
	{ "vnodes", required_argument, NULL, 'k' },
	{ "table-size", required_argument, NULL, 'm' },
	{ "flows", required_argument, NULL, 'f' },
	{ "samples", required_argument, NULL, 'S' },
	{ "seed", required_argument, NULL, 'r' },
	{ "weights", required_argument, NULL, 'w' },
	{ "names", required_argument, NULL, 'N' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "target-balance", required_argument, NULL, 'T' },
	{ NULL, 0, NULL, 0 },
};
static const char shortopts[] = "+a:n:jh";

/* Does the option word w (-x, --name, an unambiguous --prefix) take the next word? */
static bool takes_value(const char *w)
{
	const char *c;

	if (w[1] != '-')
		return w[1] && (c = strchr(shortopts, w[1])) && c[1] == ':';
	for (const struct option *o = opts; o->name; o++)
		if (!strncmp(o->name, w + 2, strlen(w + 2)))
			return o->has_arg == required_argument;
	return false;
}

/*
 * The service options in the grammar's words (algo A, vnodes K, table M)
 * become their flags, in place: one spelling per option whichever the
 * operator types. Only where an option may stand, not as another's value.
 */
static void grammar_words_to_flags(int argc, char **argv)
{
	static char algo[] = "--algo", vnodes[] = "--vnodes", table[] = "--table-size",
		    target[] = "--target-balance";

	for (int i = 0; i < argc; i++) {
		if (argv[i][0] == '-') {
			if (!strchr(argv[i], '=') && takes_value(argv[i]))
				i++; /* its value */
			continue;
		}
		if (i + 1 >= argc)
			break;
		if (!strcmp(argv[i], "algo"))
			argv[i] = algo;
		else if (!strcmp(argv[i], "vnodes"))
			argv[i] = vnodes;
		else if (!strcmp(argv[i], "table"))
			argv[i] = table;
		else if (!strcmp(argv[i], "target"))
			argv[i] = target;
		else
			break; /* not an option: getopt reports it */
		i++;
	}
}

/* Splits a comma list in place; returns the count or -1 on an empty element. */
static int split_list(char *s, char ***out)
{
	int n = 1;
	char **v;

	for (char *p = s; *p; p++)
		n += *p == ',';
	v = calloc(n, sizeof(*v));
	if (!v)
		return -1;
	for (int i = 0; i < n; i++) {
		v[i] = s;
		s = strchr(s, ',');
		if (s)
			*s++ = 0;
		if (!v[i][0]) {
			free(v);
			return -1;
		}
	}
	*out = v;
	return n;
}

/* Fractions with fixed decimals: 6 for balance, 7 for disruption (as the text shows them). */

static void print_json(const struct chlb_sim_opts *o, const struct chlb_sim_result *r)
{
	json_object *j = json_object_new_object();

	json_object_object_add(j, "algo", json_object_new_string(chlb_algo_name((__u8)o->algo)));
	chlb_json_add_u64(j, "backends", r->nbackends);
	if (o->algo == CHLB_ALGO_RING)
		chlb_json_add_u64(j, "vnodes", r->vnodes);
	if (o->algo == CHLB_ALGO_RING && o->target) {
		chlb_json_add_fixed(j, "target_balance", o->target / 1000.0, 3);
		json_object_object_add(j, "target_met", json_object_new_boolean(r->pick.met));
		chlb_json_add_u64(j, "vnodes_tried", r->pick.tried);
		chlb_json_add_fixed(j, "vnodes_pick_ms", r->pick.ms, 3);
	}
	if (chlb_algo_has_table((__u8)o->algo))
		chlb_json_add_u64(j, "table_size",
				  o->table_size ? o->table_size : CHLB_MAGLEV_DEFAULT_M);
	chlb_json_add_u64(j, "flows", r->flows);
	chlb_json_add_u64(j, "samples", r->samples);
	chlb_json_add_u64(j, "seed", o->seed);
	chlb_json_add_fixed(j, "balance_max", r->balance_max, 6);
	chlb_json_add_fixed(j, "balance_min", r->balance_min, 6);
	chlb_json_add_fixed(j, "disruption_add", r->disruption_add, 7);
	chlb_json_add_fixed(j, "disruption_add_ideal", r->disruption_add_ideal, 7);
	chlb_json_add_fixed(j, "disruption_remove", r->disruption_remove, 7);
	chlb_json_add_fixed(j, "disruption_remove_ideal", r->disruption_remove_ideal, 7);
	chlb_json_add_u64(j, "table_bytes", r->table_bytes);
	chlb_json_add_fixed(j, "build_ms", r->build_ms, 3);
	chlb_json_add_fixed(j, "flows_balance_max", r->flows_balance_max, 6);
	chlb_json_add_fixed(j, "flows_balance_min", r->flows_balance_min, 6);
	chlb_json_add_fixed(j, "flows_disruption_add", r->flows_disruption_add, 7);
	chlb_json_add_fixed(j, "flows_disruption_remove", r->flows_disruption_remove, 7);
	json_object_object_add(j, "added", json_object_new_string(r->added_name));
	json_object_object_add(j, "removed", json_object_new_string(r->removed_name));
	if (o->algo == CHLB_ALGO_HRW) {
		chlb_json_add_fixed(j, "hrw_differ", r->hrw_differ, 7);
		chlb_json_add_fixed(j, "hrw_direct_ms", r->hrw_direct_ms, 3);
		chlb_json_add_u64(j, "hrw_checked", r->hrw_checked);
	}
	if (o->algo == CHLB_ALGO_JUMP)
		json_object_object_add(j, "jump_model",
				       json_object_new_string(r->jump_model ? "exact" : "uniform"));
	ctl_print_json(j);
	json_object_put(j);
}

static void print_plain(const struct chlb_sim_opts *o, const struct chlb_sim_result *r)
{
	printf("sim: %s, %u backends", chlb_algo_name((__u8)o->algo), r->nbackends);
	if (o->algo == CHLB_ALGO_RING)
		printf(", %u vnodes per backend at weight 100%s", r->vnodes,
		       o->target ? " (auto)" : "");
	if (chlb_algo_has_table((__u8)o->algo))
		printf(", table size %u", o->table_size ? o->table_size : CHLB_MAGLEV_DEFAULT_M);
	printf(", %llu flows, seed %llu\n\n", (unsigned long long)r->flows,
	       (unsigned long long)o->seed);
	printf("  %-22s %10s %10s %9s %12s\n", "", "keyspace", "ideal", "vs ideal", "flows");
	printf("  %-22s %10.4f %10.4f %9s %12.4f\n", "balance max/fair", r->balance_max, 1.0, "",
	       r->flows_balance_max);
	printf("  %-22s %10.4f %10.4f %9s %12.4f\n", "balance min/fair", r->balance_min, 1.0, "",
	       r->flows_balance_min);
	printf("  %-22s %9.4f%% %9.4f%% %8.2fx %11.4f%%\n", "moved, add 1 backend",
	       100 * r->disruption_add, 100 * r->disruption_add_ideal,
	       r->disruption_add / r->disruption_add_ideal, 100 * r->flows_disruption_add);
	printf("  %-22s %9.4f%% %9.4f%% %8.2fx %11.4f%%\n", "moved, remove 1",
	       100 * r->disruption_remove, 100 * r->disruption_remove_ideal,
	       r->disruption_remove / r->disruption_remove_ideal, 100 * r->flows_disruption_remove);
	printf("\n  table: %llu bytes (%.2f MiB, %u words), built in %.2f ms\n",
	       (unsigned long long)r->table_bytes, r->table_bytes / 1048576.0, r->table_words,
	       r->build_ms);
	printf("  added %s; removed %s (backend %u of %u)", r->added_name, r->removed_name,
	       r->removed, r->nbackends);
	if (o->algo == CHLB_ALGO_HRW)
		printf("\n  direct rendezvous (every backend scored for %u of the %u entries, "
		       "%.0f ms): the table differs on %.4f%% of the keyspace",
		       r->hrw_checked, r->table_words - CHLB_TBL_HDR_WORDS, r->hrw_direct_ms,
		       100 * r->hrw_differ);
	if (o->algo == CHLB_ALGO_RING && o->target) {
		char b[16];

		printf("\n  vnodes auto, target %s: K=%u, balance %.4f, %s (%u rungs built in %.1f "
		       "ms)",
		       chlb_fmt_milli(o->target, b, sizeof(b)), r->vnodes, r->pick.balance,
		       r->pick.met ? "met" : "missed: the largest K the ring allows", r->pick.tried,
		       r->pick.ms);
	}
	if (o->algo == CHLB_ALGO_JUMP)
		printf("\n  jump keyspace: the %s bucket distribution; 'flows' balance over %llu "
		       "flows",
		       r->jump_model ? "exact" : "uniform (too many buckets for the exact)",
		       (unsigned long long)r->samples);
	printf("\n");
}

int do_sim(int argc, char **argv)
{
	struct chlb_sim_opts o = { .seed = 1 };
	struct chlb_sim_result r;
	char **wl = NULL, **nl = NULL, err[256];
	int c, nw = 0, nn = 0, rc = CHLBCTL_EXIT_USAGE;
	__u64 v, nbackends = 0;
	__u32 *weights = NULL;
	__u8 algo;

	grammar_words_to_flags(argc, argv);
	/* argv[-1] is "sim": getopt wants a program name in argv[0] */
	optind = 1;
	while ((c = getopt_long(argc + 1, argv - 1, shortopts, opts, NULL)) != -1) {
		const char *name = NULL;

		for (const struct option *p = opts; p->name; p++)
			if (p->val == c)
				name = p->name;
		switch (c) {
		case 'a':
			if (chlb_algo_parse(optarg, &algo)) {
				p_usage("--algo: unknown algorithm '%s' (ring, jump, maglev, "
					"jtable, hrw)",
					optarg);
				goto out;
			}
			o.algo = algo;
			break;
		case 'n':
			if (parse_u64(name, optarg, 2, CHLB_MAX_SVC_BACKENDS - 1, &nbackends))
				goto out;
			break;
		case 'k':
			if (!strcmp(optarg, "auto")) {
				o.target = o.target ? o.target : CHLB_VNODES_TARGET_DEFAULT;
				break;
			}
			if (parse_u64(name, optarg, 1, CHLB_RING_MAX_VNODES, &v))
				goto out;
			o.vnodes = v;
			break;
		case 'T':
			if (chlb_parse_milli(optarg, CHLB_VNODES_TARGET_MIN, CHLB_VNODES_TARGET_MAX,
					     &o.target)) {
				p_usage("--target-balance: '%s' is not a decimal in 1.001..2",
					optarg);
				goto out;
			}
			break;
		case 'm':
			if (parse_u64(name, optarg, 3, CHLB_MAGLEV_MAX_M, &v))
				goto out;
			o.table_size = v;
			break;
		case 'f':
			if (parse_u64(name, optarg, 1000, 1ull << 32, &o.flows))
				goto out;
			break;
		case 'S':
			if (parse_u64(name, optarg, 1000, 1ull << 32, &o.samples))
				goto out;
			break;
		case 'r':
			if (parse_u64(name, optarg, 0, ~0ull, &o.seed))
				goto out;
			break;
		case 'w':
			free(wl);
			nw = split_list(optarg, &wl);
			if (nw < 0) {
				wl = NULL;
				p_usage("--weights: empty element in '%s'", optarg);
				goto out;
			}
			break;
		case 'N':
			free(nl);
			nn = split_list(optarg, &nl);
			if (nn < 0) {
				nl = NULL;
				p_usage("--names: empty element in '%s'", optarg);
				goto out;
			}
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'h':
			sim_usage();
			rc = CHLBCTL_EXIT_OK;
			goto out;
		default:
			p_usage("sim: unknown option or missing argument: '%s'", argv[optind - 2]);
			goto out;
		}
	}
	if (optind <= argc) {
		p_usage("sim: unexpected argument '%s'", argv[optind - 1]);
		goto out;
	}
	if (!o.algo) {
		p_usage("sim: --algo is required (ring, jump, maglev, jtable, hrw)");
		goto out;
	}
	if (o.target && (o.algo != CHLB_ALGO_RING || o.vnodes)) {
		p_usage("sim: --target-balance (vnodes auto) is for algo ring, without --vnodes K");
		goto out;
	}
	if (!nbackends)
		nbackends = nw ? nw : nn;
	if (nbackends < 2 || nbackends >= CHLB_MAX_SVC_BACKENDS) {
		p_usage("sim: --backends N (2..%u) is required, or a --weights/--names list",
			CHLB_MAX_SVC_BACKENDS - 1);
		goto out;
	}
	if ((nw && (__u64)nw != nbackends) || (nn && (__u64)nn != nbackends)) {
		p_usage("sim: %llu backends but %d weights and %d names",
			(unsigned long long)nbackends, nw, nn);
		goto out;
	}
	o.nbackends = nbackends;
	if (nw) {
		weights = calloc(nw, sizeof(*weights));
		if (!weights) {
			p_err("out of memory");
			rc = CHLBCTL_EXIT_FAIL;
			goto out;
		}
		for (int i = 0; i < nw; i++) {
			if (parse_u64("weights", wl[i], 0, CHLB_WEIGHT_MAX, &v))
				goto out;
			weights[i] = v;
		}
		o.weights = weights;
	}
	if (nn)
		o.names = (const char *const *)nl;
	c = chlb_sim_run(&o, &r, err, sizeof(err));
	if (c == -EINVAL) { /* a bad value (a table size that is not prime): exit 2, as chlbd's */
		p_usage("sim: %s", err);
		goto out;
	}
	if (c) {
		p_err("sim: %s", err);
		rc = CHLBCTL_EXIT_FAIL;
		goto out;
	}
	if (ctl.json)
		print_json(&o, &r);
	else
		print_plain(&o, &r);
	rc = CHLBCTL_EXIT_OK;
out:
	free(weights);
	free(wl);
	free(nl);
	return rc;
}
