/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * chlbd: one process, one event loop (epoll): the control socket, signals
 * (signalfd) and timers (timerfd: history retirement, slot grace periods,
 * next-hop refresh, client timeouts, health probes and slow-start steps:
 * health/health.h), and the health probes' sockets.
 */
#ifndef CHLBD_H
#define CHLBD_H

#include <stdbool.h>
#include <syslog.h>
#include <json-c/json.h>
#include "base/err.h"
#include "engine/apply.h"
#include "dp/dp.h"
#include "config/state.h"

#define CHLBD_MAX_IFACES      16
#define CHLBD_REQ_MAX	      (8u << 20) /* largest request (an `apply` file) */
#define CHLBD_CLIENT_TIMEOUT  5000	 /* ms without progress before a client is dropped */
#define CHLBD_DEFAULT_SOCKET  "/run/chlb/chlb.sock"
#define CHLBD_DEFAULT_PIN_DIR "/sys/fs/bpf/chlb"
#define CHLBD_DEFAULT_STATE   "/var/lib/chlb/state"
#define CHLBD_DEFAULT_HISTORY 300000 /* ms a replaced table stays in the view */
#define CHLBD_DEFAULT_GRACE   100    /* ms before a slot that left the view is rewritten */

struct chlbd {
	/* options */
	const char *iface[CHLBD_MAX_IFACES];
	int ifindex[CHLBD_MAX_IFACES];
	int niface;
	const char *netns, *socket_path, *pin_dir, *state_path, *config_path, *pid_file;
	enum chlb_attach_mode mode;
	__u32 ct_size, udp_timeout_ms, tcp_timeout_ms;
	__u32 persist_size; /* --persist-size: client affinity entries (0: pinned or default) */
	__u64 history_ms, grace_ms;
	bool foreground;
	int verbose;
	int log_level;	/* --log-level (LOG_ERR..LOG_DEBUG), or -1: info, debug with -v */
	int socket_gid; /* --socket-group, or -1 */
	/* --route-table: table the VIP routes are exported to (routes.c); 0: off */
	__u32 route_table;
	/* runtime */
	struct chlb_dp *dp;
	struct chlb_rt *rt;
	struct chlb_state state;	/* what serves */
	struct chlb_state config_state; /* what -c FILE said when last applied (SIGHUP's log) */
	int epfd, listen_fd, sig_fd, timer_fd;
	int lock_fd;	   /* flock on the pin directory */
	int nattached;	   /* iface[0..nattached) carry our program */
	bool made_pin_dir; /* this start created the pin directory */
	bool stop, detach;
	/* route export: the table is emptied and kept empty */
	bool routes_withdrawn;
	__u64 started_ns;
	/* between the services of a long change: answer read-only requests (ctl/ctl_server.c sets it) */
	void (*answer_readonly)(void);
};
extern struct chlbd D; /* global.c */

/* log.c */
void chlbd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* syslog from now on; problems_to_stderr: warnings and errors to stderr too */
void chlbd_log_to_syslog(bool problems_to_stderr);
/* "<N>" priority prefixes when stderr is the journal (JOURNAL_STREAM) */
void chlbd_log_init(void);
/* err|warning|info|debug -> LOG_*, or -1 */
int chlbd_log_level_parse(const char *name);
#define pr_err(...)   chlbd_log(LOG_ERR, __VA_ARGS__)
#define pr_warn(...)  chlbd_log(LOG_WARNING, __VA_ARGS__)
#define pr_info(...)  chlbd_log(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) chlbd_log(LOG_DEBUG, __VA_ARGS__)

/* options.c: the command line into D and the rooms' settings; 0 or -1 (usage error, printed) */
int chlbd_options_parse(int argc, char **argv);

/* start_state.c: the state file's directory and lock, then the desired state at start; 0 or -1 */
int chlbd_state_lock(void);
int chlbd_state_initial(struct chlb_state *st);

/* attach.c: the -i interfaces; 0 or -errno/-1, the reason logged */
int chlbd_ifaces_resolve(void); /* every -i exists (in --netns) */
int chlbd_ifaces_check(void);	/* none carries another chlbd's program */
int chlbd_attach_all(void);	/* attach as -m asks; detach where no longer asked */
void chlbd_attach_undo(void);	/* a failed start: detach what it newly attached */
void chlbd_detach_unpin(void);	/* every attachment, then the pins */

/* bpffs.c: mount a bpffs for the pin directory if none is there; 0 or -errno */
int chlbd_bpffs_ensure(const char *pin_dir);

/* daemon.c: daemon mode and the pid file; 0 or -errno */
int chlbd_daemon_fork(void);  /* returns in the child; the parent exits with its verdict */
int chlbd_daemon_ready(void); /* no-op in the foreground */
int chlbd_absolute_paths(void);
int chlbd_pidfile_write(const char *path);
void chlbd_pidfile_remove(void);

/* version.c: the build's version and BPF build id (`chlbd --version`, a `version` request) */
void chlbd_print_version(void);
bool chlbd_is_version_request(const char *req);
json_object *chlbd_version_json(void); /* the `version` reply */

/* dpops.c: the data plane behind apply.c's ops */
void chlbd_dp_ops(struct chlb_dp *dp, struct chlb_dp_ops *ops, struct chlb_adopt_ops *aops);
int chlbd_drop_stale_views(struct chlb_dp *dp, const struct chlb_state *st);

/*
 * commit.c: converge to `next` (consumed) durably: capacity checked, written
 * to STATE.tmp, applied, renamed over STATE; any failure leaves (or puts
 * back) the old state in the data plane and the file (commit.c says how).
 * 0 or -1 with err ("...: nothing changed").
 */
int chlbd_commit(struct chlb_state *next, char *err, size_t errlen);
/* Would next find every backend slot and service id it needs? (chlb_rt_capacity) */
int chlbd_check_capacity(const struct chlb_state *next, char *err, size_t errlen);

/*
 * refuse.c: 0, or -EPERM with why when chlbd refuses to go from cur to next: a
 * service next adds whose VIP is an address of this host (unless the service
 * has `force`); with apply, deleting every service of cur (unless force).
 */
int chlbd_refuse(const struct chlb_state *cur, const struct chlb_state *next, bool apply,
		 bool force, char *why, size_t len);
/* change_log.c: logs what going from cur to next changes, a line each, then a summary */
void chlbd_log_diff(const char *prefix, const struct chlb_state *cur, const struct chlb_state *next,
		    const struct chlb_state *base);

/* ctmaint.c: connection filter upkeep, from the timer */
void ct_maintain(__u64 now);

/* loop.c */
int loop_init(void);
int loop_run(void);

#endif /* CHLBD_H */
