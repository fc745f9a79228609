// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbd's command line: the options into D (chlbd.h) and the rooms' own
 * settings (--metrics, --sync-*, --ready-settle-ms), or a usage error.
 * Nothing is opened here: every check that needs the system (interfaces,
 * paths, locks) is the start sequence's (main.c).
 */
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chlbd.h"
#include "metrics/metrics.h"
#include "sync/sync.h"
#include "ready.h"
#include "base/util.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: chlbd -i IFACE [-i IFACE...] [OPTIONS]\n"
	    "  -i, --interface IFACE   attach to IFACE (repeatable)\n"
	    "  -m, --mode MODE         xdp (native, default) | xdp-generic | tc; a restart\n"
	    "                          moves what was attached to the -i and -m asked\n"
	    "      --netns NAME        join network namespace NAME (/var/run/netns/NAME) only;\n"
	    "                          pins stay in the host's bpffs\n"
	    "  -s, --socket PATH       control socket (default %s), mode 0600;\n"
	    "                          only a stale socket at PATH is replaced\n"
	    "      --socket-group GRP  also let members of GRP use the socket (mode 0660)\n"
	    "      --pin-dir DIR       bpffs pin directory (default %s); no bpffs there:\n"
	    "                          chlbd mounts one (on /sys/fs/bpf, else on DIR's parent)\n"
	    "      --state FILE        state file (default %s)\n"
	    "  -c, --config FILE       config file: applied at start (instead of the state\n"
	    "                          file) and on SIGHUP / `chlbctl apply`\n"
	    "      --ct-size N         connection-table entries, 120 bytes each (default\n"
	    "                          %u; a restart resizes a pinned table, entries kept)\n"
	    "      --persist-size N    client affinity entries of `persist` services, 80\n"
	    "                          bytes each (default %u; another size at a restart\n"
	    "                          starts them afresh)\n"
	    "      --udp-timeout-ms N  UDP flow idle timeout (default %u)\n"
	    "      --tcp-timeout-ms N  TCP connection idle timeout (default 0: none; an\n"
	    "                          entry lives until its connection's backend leaves\n"
	    "                          or the table evicts it)\n"
	    "      --history-ms N      how long a replaced table keeps flows sticky (default %u)\n"
	    "      --grace-ms N        wait before reusing a table slot (default %u)\n"
	    "  -f, --foreground        stay in the foreground, log to stderr (default:\n"
	    "                          daemonize once serving, log to syslog)\n"
	    "      --pid-file FILE     write chlbd's pid to FILE (removed at exit)\n"
	    "      --metrics ADDR:PORT serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	    "                          ([ADDR]:PORT for IPv6; default: off)\n"
	    "      --route-table N     keep a blackhole host route (protocol 250, 'chlb')\n"
	    "                          per servable VIP address in kernel routing table N,\n"
	    "                          for BIRD/FRR to announce; removed on TERM (default\n"
	    "                          0: off); added only once chlbd is ready\n"
	    "      --ready-settle-ms N ready (announced) N ms after the configuration is\n"
	    "                          loaded and the sync peers are synced (default %u)\n"
	    "      --sync-listen ADDR:PORT  accept entry-sync peers here (they receive our\n"
	    "                          connection entries; docs/operations.md)\n"
	    "      --sync-peer ADDR:PORT  an LB peer to sync entries with (repeatable)\n"
	    "      --sync-key FILE     the key sync peers prove to each other (mode 0600;\n"
	    "                          a line of 64 hex digits, a second one also accepted\n"
	    "                          while a key is rotated; needed with --sync-peer)\n"
	    "  -v, --verbose           debug logging (twice: libbpf too)\n"
	    "      --log-level LEVEL   err | warning | info (default; -v: debug) | debug;\n"
	    "                          stderr lines get <N> priorities under systemd\n"
	    "      --version           the version (and git commit), the BPF build id\n"
	    "  -h, --help              this text\n"
	    "Signals: TERM/INT stop (program stays attached), HUP re-reads the config file.\n",
	    CHLBD_DEFAULT_SOCKET, CHLBD_DEFAULT_PIN_DIR, CHLBD_DEFAULT_STATE,
	    (unsigned int)CHLB_DP_DEFAULT_CONN_MAX, (unsigned int)CHLB_PERSIST_DEFAULT_MAX,
	    (unsigned int)CHLB_DP_DEFAULT_UDP_IDLE_MS, (unsigned int)CHLBD_DEFAULT_HISTORY,
	    (unsigned int)CHLBD_DEFAULT_GRACE, (unsigned int)CHLBD_READY_SETTLE_MS);
}

static int parse_num(const char *opt, const char *s, __u64 max, __u64 *out)
{
	if (chlb_parse_u64(s, 10, 0, max, out)) {
		fprintf(stderr, "chlbd: '%s': bad value for %s (0-%llu)\n", s, opt,
			(unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

int chlbd_options_parse(int argc, char **argv)
{
	enum {
		O_NETNS = 256,
		O_PIN,
		O_STATE,
		O_CT,
		O_UDP,
		O_TCP,
		O_HIST,
		O_GRACE,
		O_GROUP,
		O_PIDFILE,
		O_LOGLEVEL,
		O_VERSION,
		O_METRICS,
		O_ROUTE_TABLE,
		O_SYNC_LISTEN,
		O_SYNC_PEER,
		O_SYNC_KEY,
		O_READY_SETTLE,
		O_PERSIST_SIZE
	};
	static const struct option opts[] = {
		{ "interface", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "netns", required_argument, NULL, O_NETNS },
		{ "socket", required_argument, NULL, 's' },
		{ "socket-group", required_argument, NULL, O_GROUP },
		{ "pin-dir", required_argument, NULL, O_PIN },
		{ "state", required_argument, NULL, O_STATE },
		{ "config", required_argument, NULL, 'c' },
		{ "ct-size", required_argument, NULL, O_CT },
		{ "persist-size", required_argument, NULL, O_PERSIST_SIZE },
		{ "udp-timeout-ms", required_argument, NULL, O_UDP },
		{ "tcp-timeout-ms", required_argument, NULL, O_TCP },
		{ "history-ms", required_argument, NULL, O_HIST },
		{ "grace-ms", required_argument, NULL, O_GRACE },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pid-file", required_argument, NULL, O_PIDFILE },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "route-table", required_argument, NULL, O_ROUTE_TABLE },
		{ "sync-listen", required_argument, NULL, O_SYNC_LISTEN },
		{ "sync-peer", required_argument, NULL, O_SYNC_PEER },
		{ "sync-key", required_argument, NULL, O_SYNC_KEY },
		{ "ready-settle-ms", required_argument, NULL, O_READY_SETTLE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-level", required_argument, NULL, O_LOGLEVEL },
		{ "version", no_argument, NULL, O_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	__u64 v;
	int c;

	D.mode = CHLB_ATTACH_XDP;
	D.socket_path = CHLBD_DEFAULT_SOCKET;
	D.pin_dir = CHLBD_DEFAULT_PIN_DIR;
	D.state_path = CHLBD_DEFAULT_STATE;
	D.history_ms = CHLBD_DEFAULT_HISTORY;
	D.grace_ms = CHLBD_DEFAULT_GRACE;
	while ((c = getopt_long(argc, argv, "i:m:s:c:fvh", opts, NULL)) != -1) {
		/* "--state ''" (an unset shell variable) is a usage error, not a path to resolve */
		if (optarg && !*optarg) {
			const struct option *o = opts;

			while (o->name && o->val != c)
				o++;
			fprintf(stderr, "chlbd: --%s: empty value\n", o->name ? o->name : "?");
			return -EINVAL;
		}
		switch (c) {
		case 'i':
			if (D.niface == CHLBD_MAX_IFACES) {
				fprintf(stderr, "chlbd: at most %d interfaces\n", CHLBD_MAX_IFACES);
				return -EINVAL;
			}
			for (int k = 0; k < D.niface; k++)
				if (!strcmp(D.iface[k], optarg)) {
					fprintf(stderr, "chlbd: -i %s given twice\n", optarg);
					return -EINVAL;
				}
			D.iface[D.niface++] = optarg;
			break;
		case 'm':
			if (!strcmp(optarg, "xdp"))
				D.mode = CHLB_ATTACH_XDP;
			else if (!strcmp(optarg, "xdp-generic"))
				D.mode = CHLB_ATTACH_XDP_GENERIC;
			else if (!strcmp(optarg, "tc"))
				D.mode = CHLB_ATTACH_TC;
			else {
				fprintf(
				    stderr,
				    "chlbd: '%s': unknown mode (expected xdp, xdp-generic, tc)\n",
				    optarg);
				return -EINVAL;
			}
			break;
		case O_NETNS:
			D.netns = optarg;
			break;
		case 's':
			D.socket_path = optarg;
			break;
		case O_PIN:
			D.pin_dir = optarg;
			break;
		case O_GROUP: {
			struct group *g = getgrnam(optarg);

			if (!g) {
				fprintf(stderr, "chlbd: '%s': no such group\n", optarg);
				return -EINVAL;
			}
			D.socket_gid = (int)g->gr_gid;
			break;
		}
		case O_STATE:
			D.state_path = optarg;
			break;
		case 'c':
			D.config_path = optarg;
			break;
		case O_CT:
			if (parse_num("--ct-size", optarg, 1u << 28, &v))
				return -EINVAL;
			D.ct_size = (__u32)v;
			break;
		case O_PERSIST_SIZE:
			if (parse_num("--persist-size", optarg, 1u << 24, &v))
				return -EINVAL;
			D.persist_size = (__u32)v;
			break;
		case O_UDP:
			if (parse_num("--udp-timeout-ms", optarg, 86400000, &v))
				return -EINVAL;
			D.udp_timeout_ms = (__u32)v;
			break;
		case O_TCP:
			if (parse_num("--tcp-timeout-ms", optarg, 30ull * 86400000, &v))
				return -EINVAL;
			D.tcp_timeout_ms = (__u32)v;
			break;
		case O_HIST:
			if (parse_num("--history-ms", optarg, 86400000, &v))
				return -EINVAL;
			D.history_ms = v;
			break;
		case O_GRACE:
			if (parse_num("--grace-ms", optarg, 60000, &v))
				return -EINVAL;
			D.grace_ms = v;
			break;
		case 'f':
			D.foreground = true;
			break;
		case O_PIDFILE:
			D.pid_file = optarg;
			break;
		case O_METRICS:
			if (metrics_parse(optarg))
				return -EINVAL;
			break;
		case O_SYNC_LISTEN:
			if (sync_parse_listen(optarg))
				return -EINVAL;
			break;
		case O_SYNC_PEER:
			if (sync_parse_peer(optarg))
				return -EINVAL;
			break;
		case O_SYNC_KEY:
			if (sync_parse_key(optarg))
				return -EINVAL;
			break;
		case O_ROUTE_TABLE:
			/* 0 is RT_TABLE_UNSPEC; 253-255 are default, main, local: never ours */
			if (parse_num("--route-table", optarg, 0xffffffffu, &v))
				return -EINVAL;
			if (v >= 253 && v <= 255) {
				fprintf(stderr,
					"chlbd: '%s': --route-table needs a table of its own, not "
					"default (253), main (254) or local (255)\n",
					optarg);
				return -EINVAL;
			}
			D.route_table = (__u32)v;
			break;
		case O_READY_SETTLE:
			if (parse_num("--ready-settle-ms", optarg, CHLBD_READY_SETTLE_MAX, &v))
				return -EINVAL;
			chlbd_ready_set_settle_ms(v);
			break;
		case 'v':
			D.verbose++;
			break;
		case O_LOGLEVEL:
			D.log_level = chlbd_log_level_parse(optarg);
			if (D.log_level < 0) {
				fprintf(stderr, "chlbd: '%s': unknown log level (expected %s)\n",
					optarg, "err, warning, info, debug");
				return -EINVAL;
			}
			break;
		case O_VERSION:
			chlbd_print_version();
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "chlbd: '%s': unexpected argument\n", argv[optind]);
		return -EINVAL;
	}
	if (!D.niface) {
		fprintf(stderr, "chlbd: no interface (-i IFACE)\n");
		return -EINVAL;
	}
	return sync_check_options();
}
