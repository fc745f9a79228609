// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbd: load (or adopt) the data plane, restore the desired state, attach,
 * serve the control socket. SIGTERM leaves the program attached and the maps
 * pinned, so traffic flows while chlbd is down and the next chlbd adopts
 * them without moving a flow; `chlbctl shutdown --detach` tears down.
 *
 * This file is the start sequence (start(): cheapest checks first), the
 * undoing of a failed start, and the way out; its steps are elsewhere:
 * options.c (the command line), start_state.c (the desired state at
 * start), attach.c (interfaces), locks.c, bpffs.c, daemon.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "chlbd.h"
#include "ctl/ctl.h"
#include "health/health.h"
#include "metrics/metrics.h"
#include "sync/sync.h"
#include "locks.h"
#include "ready.h"
#include "routes.h"
#include "base/util.h"

/* Only the network namespace: the mount namespace (and so the host bpffs) stays ours. */
static int join_netns(const char *name)
{
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		pr_err("couldn't open netns '%s' (%s): %s", name, path, chlb_strerror(rc));
		return rc;
	}
	if (setns(fd, CLONE_NEWNET)) {
		rc = -errno;
		pr_err("couldn't join netns '%s': %s", name, chlb_strerror(rc));
		close(fd);
		return rc;
	}
	close(fd);
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

static void teardown(void)
{
	chlbd_detach_unpin();
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
	if (D.dp && !chlb_dp_adopted(D.dp)) {
		chlbd_detach_unpin();
		pr_info("start failed: removed the pins it made in %s", D.pin_dir);
	} else if (D.dp) {
		chlbd_attach_undo();
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
		return fd;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		pr_err("couldn't open pin directory '%s': %s", dir, chlb_strerror(fd));
		return fd;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		pid_t holder = lock_holder(fd);

		if (holder)
			pr_err("pin directory '%s' is in use by another chlbd (pid %d)", dir,
			       (int)holder);
		else
			pr_err("pin directory '%s' is in use by another chlbd", dir);
		close(fd);
		D.made_pin_dir = false;
		return -EBUSY;
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
	int stale, rc;

	dopts.conn_max = D.ct_size;
	dopts.persist_max = D.persist_size;
	dopts.udp_idle_ms = D.udp_timeout_ms;
	dopts.tcp_idle_ms = D.tcp_timeout_ms;
	dopts.pin_dir = D.pin_dir;
	dopts.sync_ring_bytes = sync_configured() ? CHLB_DP_SYNC_RING_BYTES : 0;
	dopts.verbose = D.verbose > 1;
	/* the entry point the mode attaches; both while a link changes XDP mode (dp.h) */
	dopts.entry = D.mode == CHLB_ATTACH_TC ? CHLB_DP_ENTRY_TC : CHLB_DP_ENTRY_XDP;
	for (int i = 0; i < D.niface && dopts.entry == CHLB_DP_ENTRY_XDP; i++)
		if (chlb_dp_xdp_bridges(D.pin_dir, D.ifindex[i], D.mode))
			dopts.entry = CHLB_DP_ENTRY_ALL;
	rc = chlb_dp_open(&dopts, &D.dp, err, sizeof(err));
	if (rc) {
		pr_err("data plane: %s", err);
		return rc;
	}
	if (chlb_dp_syn_clock_hz(D.dp))
		pr_debug("SYN stamps count jiffies (HZ %u)", chlb_dp_syn_clock_hz(D.dp));
	else
		pr_info("no kernel config found (/boot/config-*, /proc/config.gz): SYN stamps "
			"read the coarse time, a helper call per SYN");
	chlbd_dp_ops(D.dp, &ops, &aops);
	D.rt = chlb_rt_new(&ops, D.history_ms, D.grace_ms);
	if (!D.rt)
		return -ENOMEM;
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
		if (chlb_dp_persist_restarted(D.dp))
			pr_warn("client affinity entries start afresh: the pinned table had "
				"another size (--persist-size %u)",
				D.persist_size);
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

/*
 * Everything up to "ready", cheapest checks first: a bad interface, a bad
 * state file, a state file, socket or pin directory another chlbd holds, or
 * an interface another chlbd's program is on, is refused before anything
 * is mounted, created or pinned. The locks are held until exit.
 */
static int start(struct chlb_state *next)
{
	int rc;

	if ((rc = chlbd_ifaces_resolve()) || (rc = lock_check_socket_path()))
		return rc;
	if ((rc = chlbd_state_lock()) || (rc = chlbd_state_initial(next)))
		return rc;
	if ((rc = metrics_open()) || (rc = loop_init()) || (rc = server_open(D.socket_path)) ||
	    (rc = chlbd_bpffs_ensure(D.pin_dir)))
		return rc;
	D.lock_fd = lock_pin_dir(D.pin_dir);
	if (D.lock_fd < 0)
		return D.lock_fd;
	if ((rc = chlbd_ifaces_check()) || (rc = open_dataplane(next)) || (rc = chlbd_attach_all()))
		return rc;
	finish_resize();
	/* the peers' entries start coming in now, mapped onto the restored state */
	if ((rc = sync_open()))
		return rc;
	if (D.pid_file) {
		rc = chlbd_pidfile_write(D.pid_file);
		if (rc) {
			pr_err("couldn't write pid file '%s': %s", D.pid_file, chlb_strerror(rc));
			return rc;
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
		return rc;
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
	/* a `chlbctl shutdown` is still connected: exiting closes it (ctl/ctl_server.c) */
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
	if (chlbd_options_parse(argc, argv))
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
