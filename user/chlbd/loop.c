// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event loop: epoll over the control socket, its clients, a signalfd
 * (TERM/INT stop, HUP re-reads the config) and one timerfd armed for the
 * earliest deadline (history retirement, slot grace, next-hop refresh,
 * client timeouts, health probes), and the health probes' sockets.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "chlbd.h"
#include "ctl/ctl.h"
#include "conns.h"
#include "health/health.h"
#include "loop_ev.h"
#include "metrics/metrics.h"
#include "ready.h"
#include "routes.h"
#include "sync/sync.h"

#define HOUSEKEEPING_NS 1000000000ull /* client timeouts, at least once a second */

static struct loop_ev sig_ev = { .type = LOOP_EV_SIGNAL };
static struct loop_ev timer_ev = { .type = LOOP_EV_TIMER };

/*
 * Only in the process that runs the loop: epoll reports a signalfd ready for
 * the signals of the process that registered it (so daemon.c forks first).
 */
int loop_init(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t set;

	D.epfd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	D.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	D.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (D.epfd < 0 || D.sig_fd < 0 || D.timer_fd < 0)
		return -errno;
	ev.data.ptr = &sig_ev;
	if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, D.sig_fd, &ev))
		return -errno;
	ev.data.ptr = &timer_ev;
	if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, D.timer_fd, &ev))
		return -errno;
	return metrics_watch();
}

/*
 * The engine's timers, when due or when a change may have brought one
 * nearer (chlb_rt.changes): a tick scans every slot, and health probes
 * wake the loop far more often than the engine has anything to do.
 */
static __u64 rt_tick(__u64 now)
{
	static __u64 due, seen = ~0ull;

	if (now >= due || D.rt->changes != seen) {
		seen = D.rt->changes;
		due = chlb_rt_tick(D.rt, now);
		if (!due)
			due = now + HOUSEKEEPING_NS;
	}
	return due;
}

/* Runs due timers and re-arms the timerfd for the next deadline. */
static void loop_kick_timer(void)
{
	__u64 now = chlb_now_ns(), next, snext;
	struct itimerspec its = { 0 };

	/*
	 * Probes due, timeouts, and the swap a probe result asked for (within
	 * this iteration); first, so the engine's tick sees that swap's deadlines.
	 */
	snext = health_tick(now);
	chlbd_routes_follow(); /* a health swap may have made a VIP servable or not */
	next = rt_tick(now);
	if (snext && (!next || snext < next))
		next = snext;
	snext = sync_tick(now); /* reconnects to sync peers */
	if (snext && (!next || snext < next))
		next = snext;
	snext = chlbd_routes_tick(now); /* readiness, after sync's: routes added once ready */
	if (snext && (!next || snext < next))
		next = snext;

	/* a step of the connection table's background count (conns.h), or when the next pass starts */
	snext = conns_tally_step(now);
	if (snext && (!next || snext < next))
		next = snext;

	server_expire(now);
	metrics_expire(now);
	ct_maintain(now);
	if (chlb_rt_verify_next(D.rt, health_applied()))
		next = now; /* one adopted service per loop iteration: requests interleave */
	if (!next || next > now + HOUSEKEEPING_NS)
		next = now + HOUSEKEEPING_NS;
	if (next <= now)
		next = now + 1000;
	/* absolute CLOCK_MONOTONIC, same clock as chlb_now_ns() */
	its.it_value.tv_sec = (time_t)(next / 1000000000ull);
	its.it_value.tv_nsec = (long)(next % 1000000000ull);
	timerfd_settime(D.timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/*
 * SIGHUP: converge to -c FILE. The log says what that changes, a line per
 * service and backend added, changed or removed (chlb_state_diff()), and
 * marks what undoes a change made over the socket since the file was last
 * applied (D.config_state).
 */
static void reload_config(void)
{
	struct chlb_state next, applied;
	char err[CHLB_ERR_MAX + 64];
	char *text;

	if (!D.config_path) {
		pr_warn("SIGHUP: no config file (-c) to re-read");
		return;
	}
	text = chlb_read_file(D.config_path, CHLB_STATE_MAX_BYTES, err, sizeof(err));
	if (!text) {
		pr_err("SIGHUP: %s; nothing changed", err);
		return;
	}
	chlb_state_init(&next);
	if (chlb_state_exec_text(&next, text, D.config_path, err, sizeof(err))) {
		pr_err("SIGHUP: %s; nothing from the file applied", err);
		chlb_state_free(&next);
		free(text);
		return;
	}
	free(text);
	chlb_state_inherit(&next, &D.state);
	/*
	 * Guarded as an `apply` without --force: an empty or truncated file (a
	 * config tool that wrote nothing) must not delete every service; a
	 * reload has no --force, `chlbctl apply -f FILE --force` has.
	 */
	if (chlbd_refuse(&D.state, &next, true, false, err, sizeof(err))) {
		pr_err("SIGHUP: %s: %s; nothing from the file applied", D.config_path, err);
		chlb_state_free(&next);
		return;
	}
	chlbd_log_diff("SIGHUP: ", &D.state, &next, &D.config_state);
	if (chlb_state_copy(&applied, &next))
		chlb_state_init(&applied); /* out of memory: no marks next time */
	chlb_state_free(&D.config_state);
	D.config_state = applied;
	if (chlbd_commit(&next, err, sizeof(err))) {
		pr_err("SIGHUP: %s", err);
	} else {
		pr_info("SIGHUP: converged to %s", D.config_path);
		chlbd_ready_loaded(CHLBD_LOADED_SIGHUP);
	}
}

static void on_signal(void)
{
	struct signalfd_siginfo si;

	while (read(D.sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_config();
		} else {
			pr_info("signal %u: stopping; the program stays attached, maps stay pinned",
				si.ssi_signo);
			D.stop = true;
		}
	}
}

int loop_run(void)
{
	struct epoll_event evs[32];

	loop_kick_timer();
	while (!D.stop) {
		int n = epoll_wait(D.epfd, evs, 32, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int i = 0; i < n && !D.stop; i++) {
			struct loop_ev *e = evs[i].data.ptr;

			switch (e->type) {
			case LOOP_EV_LISTEN:
				server_accept();
				break;
			case LOOP_EV_CLIENT:
				server_client_event(e, evs[i].events);
				break;
			case LOOP_EV_METRICS_LISTEN:
				metrics_accept();
				break;
			case LOOP_EV_METRICS_CLIENT:
				metrics_client_event(e, evs[i].events);
				break;
			case LOOP_EV_HEALTH:
				health_event(e, evs[i].events);
				break;
			case LOOP_EV_SYNC:
				sync_event(e, evs[i].events);
				break;
			case LOOP_EV_SIGNAL:
				on_signal();
				break;
			case LOOP_EV_TIMER: {
				__u64 exp;

				if (read(D.timer_fd, &exp, sizeof(exp)) < 0)
					(void)0; /* spurious wakeup: re-arm anyway */
				break;
			}
			}
			/* a change answered clients meanwhile: the rest of evs may be stale */
			if (server_polled())
				break;
		}
		server_run_deferred(); /* requests that arrived during a change */
		/* every iteration: due timers, then the next deadline (requests may add some) */
		loop_kick_timer();
	}
	return 0;
}
