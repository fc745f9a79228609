// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbd: load (or adopt) the data plane, restore the desired state, attach,
 * serve the control socket. SIGTERM leaves the program attached and the maps
 * pinned, so traffic flows while chlbd is down and the next chlbd adopts
 * them without moving a flow; `chlbctl shutdown --detach` tears down.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <grp.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "chlbd.h"
#include "health/health.h"
#include "metrics/metrics.h"
#include "sync/sync.h"
#include "locks.h"
#include "ready.h"
#include "routes.h"
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
	    (unsigned int)CHLB_DP_DEFAULT_CONN_MAX, (unsigned int)CHLB_DP_DEFAULT_UDP_IDLE_MS,
	    (unsigned int)CHLBD_DEFAULT_HISTORY, (unsigned int)CHLBD_DEFAULT_GRACE,
	    (unsigned int)CHLBD_READY_SETTLE_MS);
}

static int parse_num(const char *opt, const char *s, __u64 max, __u64 *out)
{
	if (chlb_parse_u64(s, 10, 0, max, out)) {
		fprintf(stderr, "chlbd: '%s': bad value for %s (0-%llu)\n", s, opt,
			(unsigned long long)max);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv)
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
		O_READY_SETTLE
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
			return -1;
		}
		switch (c) {
		case 'i':
			if (D.niface == CHLBD_MAX_IFACES) {
				fprintf(stderr, "chlbd: at most %d interfaces\n", CHLBD_MAX_IFACES);
				return -1;
			}
			for (int k = 0; k < D.niface; k++)
				if (!strcmp(D.iface[k], optarg)) {
					fprintf(stderr, "chlbd: -i %s given twice\n", optarg);
					return -1;
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
				return -1;
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
				return -1;
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
				return -1;
			D.ct_size = (__u32)v;
			break;
		case O_UDP:
			if (parse_num("--udp-timeout-ms", optarg, 86400000, &v))
				return -1;
			D.udp_timeout_ms = (__u32)v;
			break;
		case O_TCP:
			if (parse_num("--tcp-timeout-ms", optarg, 30ull * 86400000, &v))
				return -1;
			D.tcp_timeout_ms = (__u32)v;
			break;
		case O_HIST:
			if (parse_num("--history-ms", optarg, 86400000, &v))
				return -1;
			D.history_ms = v;
			break;
		case O_GRACE:
			if (parse_num("--grace-ms", optarg, 60000, &v))
				return -1;
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
				return -1;
			break;
		case O_SYNC_LISTEN:
			if (sync_parse_listen(optarg))
				return -1;
			break;
		case O_SYNC_PEER:
			if (sync_parse_peer(optarg))
				return -1;
			break;
		case O_SYNC_KEY:
			if (sync_parse_key(optarg))
				return -1;
			break;
		case O_ROUTE_TABLE:
			/* 0 is RT_TABLE_UNSPEC; 253-255 are default, main, local: never ours */
			if (parse_num("--route-table", optarg, 0xffffffffu, &v))
				return -1;
			if (v >= 253 && v <= 255) {
				fprintf(stderr,
					"chlbd: '%s': --route-table needs a table of its own, not "
					"default (253), main (254) or local (255)\n",
					optarg);
				return -1;
			}
			D.route_table = (__u32)v;
			break;
		case O_READY_SETTLE:
			if (parse_num("--ready-settle-ms", optarg, CHLBD_READY_SETTLE_MAX, &v))
				return -1;
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
				return -1;
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
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "chlbd: '%s': unexpected argument\n", argv[optind]);
		return -1;
	}
	if (!D.niface) {
		fprintf(stderr, "chlbd: no interface (-i IFACE)\n");
		return -1;
	}
	return sync_check_options();
}

/* Only the network namespace: the mount namespace (and so the host bpffs) stays ours. */
static int join_netns(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("couldn't open netns '%s' (%s): %s", name, path, chlb_strerror(-errno));
		return -1;
	}
	if (setns(fd, CLONE_NEWNET)) {
		pr_err("couldn't join netns '%s': %s", name, chlb_strerror(-errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The directory path is in (0700; missing parents 0755): 0 or -errno. */
static int mkdir_parent(const char *path)
{
	char buf[4096], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	p = strrchr(buf, '/');
	if (!p || p == buf)
		return 0;
	*p = '\0';
	return chlb_mkdir_p(buf, 0755, 0700);
}

/*
 * The state file was bad and FILE.prev was read: move the bad one aside to
 * FILE.bad (for a look), else the next write would keep it as FILE.prev,
 * the "last good copy", and a second bad write would leave chlbd with none.
 */
static void set_aside_bad_state(bool used_prev)
{
	char bad[4096 + 8];

	if (!used_prev)
		return;
	snprintf(bad, sizeof(bad), "%s.bad", D.state_path);
	if (!rename(D.state_path, bad))
		pr_warn("state: the bad state file is now %s; %s.prev stays the last good copy",
			bad, D.state_path);
	else if (errno != ENOENT)
		pr_warn("state: couldn't move the bad state file to %s (%s): the next change "
			"keeps it as %s.prev",
			bad, strerror(errno), D.state_path);
}

/*
 * The config's new services (against the state file: what served last) may
 * not take one of the host's own addresses without `force` (guard.c).
 */
static int config_guard(const struct chlb_state *st, char *err, size_t errlen)
{
	struct chlb_state last;
	bool prev;
	int rc;

	chlb_state_init(&last);
	if (chlb_state_load_file(&last, D.state_path, &prev, err, errlen))
		chlb_state_free(&last); /* unreadable: every service is new */
	else
		set_aside_bad_state(prev);
	rc = chlbd_guard(&last, st, false, false, err, errlen);
	chlb_state_free(&last);
	return rc;
}

/* Desired state at start: the config file when given, else the state file. */
static int initial_state(struct chlb_state *st)
{
	char err[CHLB_ERR_MAX + 128];
	bool prev;

	if (D.config_path) {
		char *text = chlb_read_file(D.config_path, CHLB_STATE_MAX_BYTES, err, sizeof(err));

		if (text && !chlb_state_exec_text(st, text, D.config_path, err, sizeof(err)) &&
		    !config_guard(st, err, sizeof(err))) {
			free(text);
			/* what SIGHUP's log compares with: changes made since are marked */
			if (chlb_state_copy(&D.config_state, st))
				chlb_state_init(&D.config_state);
			chlbd_ready_loaded(CHLBD_LOADED_CONFIG);
			return 0;
		}
		free(text);
		chlb_state_free(st);
		/* nothing from a bad file is applied: keep serving the last state */
		pr_err("config: %s; nothing from it applied, starting from the state file", err);
	}
	if (chlb_state_load_file(st, D.state_path, &prev, err, sizeof(err))) {
		pr_err("state: %s; refusing to start (fix it, or remove it to start empty)", err);
		return -1;
	}
	if (prev)
		pr_err("state: %s; started from the last good copy %s.prev", err, D.state_path);
	set_aside_bad_state(prev);
	/*
	 * A state file with services is what this host served (a restart): loaded.
	 * Not an empty one: every start writes the state back, so its existence
	 * says nothing, and a host that served nothing has nothing to keep.
	 */
	if (st->nsvc)
		chlbd_ready_loaded(CHLBD_LOADED_STATE);
	return 0;
}

/* Every interface exists (in --netns): checked before anything is mounted or pinned. */
static int resolve_ifaces(void)
{
	for (int i = 0; i < D.niface; i++) {
		D.ifindex[i] = (int)if_nametoindex(D.iface[i]);
		if (!D.ifindex[i]) {
			pr_err("no interface '%s'%s%s", D.iface[i], D.netns ? " in netns " : "",
			       D.netns ? D.netns : "");
			return -ENODEV;
		}
	}
	return 0;
}

#define MAX_ATTACHMENTS 256

static const char *mode_name(enum chlb_attach_mode m)
{
	return m == CHLB_ATTACH_XDP	      ? "xdp"
	       : m == CHLB_ATTACH_XDP_GENERIC ? "xdp-generic"
	       : m == CHLB_ATTACH_TC	      ? "tc"
					      : "none";
}

static const char *ifname_of(int ifindex, char *buf)
{
	if (!if_indextoname((unsigned int)ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "#%d", ifindex);
	return buf;
}

static bool asked_for(int ifindex)
{
	for (int i = 0; i < D.niface; i++)
		if (D.ifindex[i] == ifindex)
			return true;
	return false;
}

/* Interfaces this start attached that carried nothing of ours: undone if it fails. */
static int fresh_ifindex[CHLBD_MAX_IFACES], nfresh;

/*
 * Before anything is pinned: an interface that carries another chlbd's
 * program (XDP, or TC at chlb's handle) is refused, never taken over.
 */
static int check_ifaces(void)
{
	char err[768];

	for (int i = 0; i < D.niface; i++) {
		if (chlb_dp_check_iface(D.pin_dir, D.ifindex[i], D.mode, err, sizeof(err))) {
			pr_err("%s", err);
			return -1;
		}
	}
	return 0;
}

/*
 * Attach as asked (-i, -m), moving what a previous chlbd of this pin
 * directory attached in another mode (chlb_dp_attach() moves it without a
 * gap), then detach what it attached where this one is not asked to be.
 */
static int attach_all(void)
{
	struct chlb_dp_attachment att[MAX_ATTACHMENTS];
	char err[768], name[IF_NAMESIZE];
	int n, rc;

	n = chlb_dp_attachments(D.dp, att, MAX_ATTACHMENTS);
	for (int i = 0; i < D.niface; i++) {
		enum chlb_attach_mode was = CHLB_ATTACH_NONE;

		for (int j = 0; j < n && j < MAX_ATTACHMENTS; j++)
			if (att[j].ifindex == D.ifindex[i] && att[j].live && was != D.mode)
				was = att[j].mode;
		rc = chlb_dp_attach(D.dp, D.ifindex[i], D.mode, err, sizeof(err));
		if (rc) {
			pr_err("%s", err);
			return rc;
		}
		D.nattached = i + 1;
		if (!was)
			fresh_ifindex[nfresh++] = D.ifindex[i];
		if (was && was != D.mode)
			pr_info("moved %s (ifindex %d) from %s to %s", D.iface[i], D.ifindex[i],
				mode_name(was), mode_name(D.mode));
		else
			pr_info("attached to %s (ifindex %d, %s)", D.iface[i], D.ifindex[i],
				mode_name(D.mode));
	}
	n = chlb_dp_attachments(D.dp, att, MAX_ATTACHMENTS);
	for (int j = 0; j < n && j < MAX_ATTACHMENTS; j++) {
		if (asked_for(att[j].ifindex) && att[j].mode == D.mode)
			continue;
		if (chlb_dp_detach(D.dp, att[j].ifindex, att[j].mode, err, sizeof(err)))
			pr_warn("%s", err);
		else
			pr_info(
			    "detached from %s (ifindex %d, %s): not asked for by -i/-m any more",
			    att[j].live ? ifname_of(att[j].ifindex, name) : "a removed interface",
			    att[j].ifindex, mode_name(att[j].mode));
	}
	/*
	 * Health probes `via vip` leave by the route to the VIP, usually an -i
	 * interface: steer them there (docs/design.md, "Probes through the data
	 * path"). Not fatal: without it such probes fail, the traffic does not.
	 */
	for (int i = 0; i < D.niface; i++)
		if (chlb_dp_probe_attach(D.dp, D.ifindex[i], err, sizeof(err)))
			pr_warn("%s: health probes via vip leaving by it are not steered", err);
	return 0;
}

/* A resized connection table (--ct-size): what the old program wrote meanwhile, then the log. */
static void finish_resize(void)
{
	struct chlb_dp_resize rs;
	int rc;

	if (!chlb_dp_conns_resized(D.dp, &rs))
		return;
	rc = chlb_dp_conns_resize_finish(D.dp);
	if (rc)
		pr_warn("connection table: copying the entries written during the restart: %s",
			chlb_strerror(rc));
	chlb_dp_conns_resized(D.dp, &rs);
	pr_info("connection table resized from %u to %u entries (--ct-size): %llu of %llu "
		"entries copied, %llu more written during the restart",
		rs.old_max, rs.new_max, (unsigned long long)rs.copied,
		(unsigned long long)rs.entries, (unsigned long long)rs.late);
	if (rs.copied < rs.entries)
		pr_warn("connection table: %llu entries did not fit in %u: kept those of "
			"connections that had not ended, the most recently refreshed first",
			(unsigned long long)(rs.entries - rs.copied), rs.new_max);
}

/* Every attachment of this data plane (links, TC records, our TC filters), then the pins. */
static void detach_unpin(void)
{
	struct chlb_dp_attachment att[MAX_ATTACHMENTS];
	char err[768], name[IF_NAMESIZE];
	int n = chlb_dp_attachments(D.dp, att, MAX_ATTACHMENTS), probe_if[MAX_ATTACHMENTS];
	int np = chlb_dp_probe_attachments(D.dp, probe_if, MAX_ATTACHMENTS);

	for (int j = 0; j < np && j < MAX_ATTACHMENTS; j++)
		if (chlb_dp_probe_detach(D.dp, probe_if[j], err, sizeof(err)))
			pr_warn("%s", err);
	for (int j = 0; j < n && j < MAX_ATTACHMENTS; j++) {
		if (chlb_dp_detach(D.dp, att[j].ifindex, att[j].mode, err, sizeof(err)))
			pr_warn("%s", err);
		else
			pr_info("detached from %s (ifindex %d, %s)",
				att[j].live ? ifname_of(att[j].ifindex, name)
					    : "a removed interface",
				att[j].ifindex, mode_name(att[j].mode));
	}
	if (chlb_dp_unpin(D.dp, err, sizeof(err)))
		pr_warn("%s", err);
}

static void teardown(void)
{
	detach_unpin();
	pr_info("detached and unpinned");
}

/*
 * A start that failed must not leave a half-made data plane behind: maps
 * this start loaded and pinned, links it pinned, the pin directory it
 * made. Adopted pins stay: they belong to the previous chlbd's program,
 * which still forwards; only interfaces this start newly attached are
 * detached again.
 */
static void undo_start(void)
{
	char err[768];

	if (D.dp && !chlb_dp_adopted(D.dp)) {
		detach_unpin();
		pr_info("start failed: removed the pins it made in %s", D.pin_dir);
	} else if (D.dp) {
		for (int i = 0; i < nfresh; i++)
			if (chlb_dp_detach(D.dp, fresh_ifindex[i], D.mode, err, sizeof(err)))
				pr_warn("%s", err);
		if (nfresh)
			pr_info("start failed: detached from the %d interfaces it attached",
				nfresh);
	}
	if (D.made_pin_dir)
		rmdir(D.pin_dir); /* fails, as it should, while adopted pins are in it */
}

/* One chlbd per pin directory: a second one would fight over the same maps. */
static int lock_pin_dir(const char *dir)
{
	int fd;

	D.made_pin_dir = access(dir, F_OK) != 0;
	fd = chlb_mkdir_p(dir, 0755, 0700);
	if (fd) {
		pr_err("couldn't create pin directory '%s': %s", dir, chlb_strerror(fd));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("couldn't open pin directory '%s': %s", dir, chlb_strerror(-errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		pid_t holder = own_lock_holder(fd);

		if (holder)
			pr_err("pin directory '%s' is in use by another chlbd (pid %d)", dir,
			       (int)holder);
		else
			pr_err("pin directory '%s' is in use by another chlbd", dir);
		close(fd);
		D.made_pin_dir = false;
		return -1;
	}
	return fd; /* held until exit */
}

/* Load (or adopt) the data plane and restore `next` into it. */
static int open_dataplane(struct chlb_state *next)
{
	struct chlb_dp_opts dopts = { 0 };
	struct chlb_adopt_ops aops;
	struct chlb_dp_ops ops;
	char err[CHLB_ERR_MAX * 2];
	int stale;

	dopts.conn_max = D.ct_size;
	dopts.udp_idle_ms = D.udp_timeout_ms;
	dopts.tcp_idle_ms = D.tcp_timeout_ms;
	dopts.pin_dir = D.pin_dir;
	dopts.sync_ring_bytes = sync_configured() ? CHLB_DP_SYNC_RING_BYTES : 0;
	dopts.verbose = D.verbose > 1;
	if (chlb_dp_open(&dopts, &D.dp, err, sizeof(err))) {
		pr_err("data plane: %s", err);
		return -1;
	}
	if (chlb_dp_syn_clock_hz(D.dp))
		pr_debug("SYN stamps count jiffies (HZ %u)", chlb_dp_syn_clock_hz(D.dp));
	else
		pr_info("no kernel config found (/boot/config-*, /proc/config.gz): SYN stamps "
			"read the coarse time, a helper call per SYN");
	chlbd_dp_ops(D.dp, &ops, &aops);
	D.rt = chlb_rt_new(&ops, D.history_ms, D.grace_ms);
	if (!D.rt)
		return -1;
	D.rt->log = chlbd_log;
	/* a UDP service's history: one UDP idle timeout and a second (apply.c, history_of()) */
	D.rt->udp_history_ns =
	    ((__u64)(D.udp_timeout_ms ? D.udp_timeout_ms : CHLB_DP_DEFAULT_UDP_IDLE_MS) + 1000) *
	    1000000ull;
	if (chlb_dp_adopted(D.dp)) {
		stale = chlbd_drop_stale_views(D.dp, next);
		if (stale) {
			/* their tables' slots may be rewritten below: let readers finish */
			pr_info("removed %d pinned services the state no longer has", stale);
			usleep((useconds_t)D.grace_ms * 1000);
		}
		pr_info("adopted pinned maps in %s: %d services", D.pin_dir,
			chlb_rt_adopt(D.rt, &aops, next));
		if (chlb_dp_counters_restarted(D.dp))
			pr_warn("counters restart at zero: the pinned ones had another layout "
				"(a chlbd of another release pinned them)");
	}
	/* adopted services keep serving their pinned tables; the loop verifies them */
	D.rt->defer_adopted = true;
	if (chlbd_commit(next, err, sizeof(err)))
		pr_err("restoring state: %s", err);
	D.rt->defer_adopted = false;
	return 0;
}

/* STATE.lock, in a directory the state may be kept in (chlb_state_dir_open()) */
static int lock_state(void)
{
	char err[CHLB_ERR_MAX + 128];
	int fd = chlb_state_dir_open(D.state_path, err, sizeof(err));

	if (fd < 0) {
		pr_err("state: %s; refusing to start", err);
		return -1;
	}
	close(fd);
	return own_lock_beside(D.state_path, "state file") == -1 ? -1 : 0;
}

/*
 * Everything up to "ready", cheapest checks first: a bad interface, a bad
 * state file, a state file, socket or pin directory another chlbd holds, or
 * an interface another chlbd's program is on, is refused before anything
 * is mounted, created or pinned. The locks are held until exit.
 */
static int start(struct chlb_state *next)
{
	int rc;

	if (resolve_ifaces() || own_check_socket_path())
		return -1;
	rc = mkdir_parent(D.state_path);
	if (rc) {
		pr_err("couldn't create the directory of '%s': %s", D.state_path, strerror(-rc));
		return -1;
	}
	if (lock_state() || initial_state(next))
		return -1;
	if (metrics_open() || loop_init() || server_open(D.socket_path) ||
	    chlbd_bpffs_ensure(D.pin_dir))
		return -1;
	D.lock_fd = lock_pin_dir(D.pin_dir);
	if (D.lock_fd < 0 || check_ifaces() || open_dataplane(next) || attach_all())
		return -1;
	finish_resize();
	/* the peers' entries start coming in now, mapped onto the restored state */
	if (sync_open())
		return -1;
	if (D.pid_file) {
		rc = chlbd_pidfile_write(D.pid_file);
		if (rc) {
			pr_err("couldn't write pid file '%s': %s", D.pid_file, chlb_strerror(rc));
			return -1;
		}
	}
	/* attached and serving: a previous chlbd's routes adopted; new ones once ready (ready.h) */
	chlbd_routes_sync();
	/* logged before the parent returns, so the log has it when `chlbd` has returned */
	pr_info("ready: %u services, socket %s, %.1f ms after start", D.state.nsvc, D.socket_path,
		(double)(chlb_now_ns() - D.started_ns) / 1e6);
	rc = chlbd_daemon_ready();
	if (rc) {
		pr_err("daemonizing: %s", chlb_strerror(rc));
		return -1;
	}
	/* systemd (Type=notify): started; 0 without NOTIFY_SOCKET */
	rc = chlbd_ready_notify("READY=1\n");
	if (rc < 0)
		pr_warn("couldn't notify systemd (NOTIFY_SOCKET): %s", chlb_strerror(rc));
	return 0;
}

static void cleanup(struct chlb_state *next)
{
	server_close_all();
	health_close_all();
	sync_close();
	chlb_state_free(next);
	chlb_state_free(&D.state);
	chlb_state_free(&D.config_state);
	chlb_rt_free(D.rt);
	if (D.dp)
		chlb_dp_close(D.dp);
	chlbd_pidfile_remove();
	if (D.lock_fd >= 0)
		close(D.lock_fd); /* the next chlbd may take the pin directory now */
	/* a `chlbctl shutdown` is still connected: exiting closes it (server.c) */
}

int main(int argc, char **argv)
{
	struct chlb_state next;
	int rc = 1;

	D.started_ns = chlb_now_ns();
	D.log_level = -1; /* --log-level not given */
	chlbd_log_init();
	/*
	 * Tables are megabytes (a 1000-backend ring is 2.2 MiB). glibc would
	 * mmap each one fresh and unmap it on free, so every swap page-faulted
	 * its table in again; keeping freed memory in the heap lets the next
	 * build reuse pages that are already mapped.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	if (parse_args(argc, argv))
		return 2;
	rc = chlbd_absolute_paths();
	if (rc) {
		pr_err("paths: %s", chlb_strerror(rc));
		return 1;
	}
	if (D.netns && join_netns(D.netns))
		return 1;
	/* daemon mode: fork now, before any fd exists (daemon.c says why) */
	rc = D.foreground ? 0 : chlbd_daemon_fork();
	if (rc) {
		pr_err("daemonizing: %s", chlb_strerror(rc));
		return 1;
	}
	chlb_state_init(&next);
	chlb_state_init(&D.state);
	if (start(&next)) {
		undo_start();
		rc = 1;
	} else {
		rc = loop_run() ? 1 : 0;
		sd_notify(0, "STOPPING=1");
		/* TERM, INT, `chlbctl shutdown`: BIRD withdraws; a KILL leaves the routes */
		chlbd_routes_withdraw_all();
		if (D.detach)
			teardown();
	}
	cleanup(&next);
	return rc;
}
