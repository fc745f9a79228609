// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl stats [--watch [SECONDS]] [--reset]
 *
 * chlbd answers `stats` with counters and the time it read them, never
 * rates (stats_rates.h): this reader computes them from its own previous
 * reply, so two readers (two --watch, a script, Prometheus) never corrupt
 * each other's rates and chlbd keeps nothing per reader. A plain `stats`
 * is one read: counters only. --watch reads every SECONDS (default 1) and
 * prints a frame per interval with the rates over that interval (text:
 * redrawn like top on a terminal; --json: one object a line); SIGINT or
 * SIGTERM ends it (exit 0). --reset has chlbd zero the data plane's
 * counters first (all but ct_insert: see chlb_dp_reset_counters).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "chlbctl.h"
#include "client.h"
#include "show.h"
#include "base/stats_rates.h"

#define WATCH_MIN_S 0.1
#define WATCH_MAX_S 86400.0

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* SECONDS: a number in [WATCH_MIN_S, WATCH_MAX_S], fractions allowed ("0.5"). */
static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < WATCH_MIN_S || v > WATCH_MAX_S)
		return -1;
	*out = v;
	return 0;
}

static bool is_flag(const char *w)
{
	return !strcmp(w, "--watch") || !strcmp(w, "-w") || !strcmp(w, "--reset") ||
	       !strcmp(w, "reset") || !strncmp(w, "--watch=", 8);
}

static void print_reply(json_object *r)
{
	if (ctl.json) {
		ctl_print_json(r);
	} else {
		show_stats(r);
	}
	fflush(stdout);
}

static void ts_add(struct timespec *t, double s)
{
	long long ns = t->tv_nsec + (long long)(s * 1e9);

	t->tv_sec += (time_t)(ns / 1000000000);
	t->tv_nsec = (long)(ns % 1000000000);
}

static int watch(double every, bool reset)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: sleeps end */
	bool tty = !ctl.json && isatty(STDOUT_FILENO);
	json_object *prev, *cur;
	struct timespec next, now;
	int rc;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = ctl_request(reset ? "stats reset" : "stats", &prev);
	if (rc)
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long frame = 1; !stop; frame++) {
		ts_add(&next, every);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now; /* a slow round: no burst of frames to catch up */
		while (!stop &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		if (stop)
			break;
		rc = ctl_request("stats", &cur);
		if (rc) {
			json_object_put(prev);
			return rc;
		}
		chlb_stats_rates(prev, cur);
		json_object_object_add(cur, "frame", json_object_new_int64(frame));
		json_object_object_add(cur, "every_s", json_object_new_double(every));
		if (tty)
			fputs("\033[H\033[2J", stdout); /* redraw in place, as top does */
		if (!ctl.json)
			printf("stats every %g s, frame %ld (Ctrl-C ends)\n", every, frame);
		print_reply(cur);
		json_object_put(prev);
		prev = cur;
	}
	json_object_put(prev);
	return CHLBCTL_EXIT_OK;
}

int do_stats(int argc, char **argv)
{
	bool reset = false, watching = false;
	double every = 1;
	json_object *r;
	int rc;

	for (int i = 0; i < argc; i++) {
		const char *w = argv[i], *v = NULL;

		if (!strcmp(w, "--reset") || !strcmp(w, "reset")) {
			reset = true;
			continue;
		}
		if (strcmp(w, "--watch") && strcmp(w, "-w") && strncmp(w, "--watch=", 8))
			return p_usage(
			    "stats: unexpected argument '%s' (expected --watch [SECONDS] "
			    "or --reset)",
			    w);
		if (watching)
			return p_usage("stats: --watch given twice");
		watching = true;
		if (w[1] == '-' && w[7] == '=')
			v = w + 8;
		else if (i + 1 < argc && !is_flag(argv[i + 1]))
			v = argv[++i];
		if (v && parse_seconds(v, &every))
			return p_usage("stats --watch: '%s': not a number of seconds from %g to %g "
				       "(the time between frames; default 1)",
				       v, WATCH_MIN_S, WATCH_MAX_S);
	}
	if (watching)
		return watch(every, reset);
	rc = ctl_request(reset ? "stats reset" : "stats", &r);
	if (rc)
		return rc;
	print_reply(r);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}
