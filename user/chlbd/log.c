// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Levelled logging: stderr in the foreground, syslog once daemonized. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include "chlbd.h"

static bool use_syslog;

void chlbd_log_to_syslog(void)
{
	openlog("chlbd", LOG_PID, LOG_DAEMON);
	use_syslog = true;
}

void chlbd_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "emerg", "alert", "crit", "error",
					     "warn",  "note",  "info", "debug" };
	char msg[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (level == LOG_DEBUG && D.verbose < 1)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (use_syslog) {
		syslog(level, "%s", msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld chlbd %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, names[level & 7], msg);
}
