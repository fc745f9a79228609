// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Levelled logging: stderr in the foreground; syslog in daemon mode, from
 * the fork on, so the log tells the whole start. While a daemon starts its
 * stderr is still the terminal (or the caller's pipe) of the `chlbd` that
 * waits for it: warnings and errors go there too, so a failed start says
 * why where it was started, while a good one stays quiet.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include "chlbd.h"

static bool use_syslog, tee_stderr;

void chlbd_log_to_syslog(bool problems_to_stderr)
{
	if (!use_syslog)
		openlog("chlbd", LOG_PID, LOG_DAEMON);
	use_syslog = true;
	tee_stderr = problems_to_stderr;
}

static void to_stderr(int level, const char *msg)
{
	static const char *const names[] = { "emerg", "alert", "crit", "error",
					     "warn",  "note",  "info", "debug" };
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld chlbd %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, names[level & 7], msg);
}

void chlbd_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level == LOG_DEBUG && D.verbose < 1)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (use_syslog)
		syslog(level, "%s", msg);
	if (!use_syslog || (tee_stderr && level <= LOG_WARNING))
		to_stderr(level, msg);
}
