// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Levelled logging: stderr in the foreground; syslog in daemon mode, from
 * the fork on, so the log tells the whole start. While a daemon starts its
 * stderr is still the terminal (or the caller's pipe) of the `chlbd` that
 * waits for it: warnings and errors go there too, so a failed start says
 * why where it was started, while a good one stays quiet.
 *
 * Under systemd stderr is a stream to the journal (it says so in
 * JOURNAL_STREAM, "DEV:INODE" of that stream): lines then carry their
 * priority as a "<N>" prefix (sd-daemon(3)) and no timestamp, which the
 * journal adds. --log-level drops messages below a level.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "chlbd.h"

static bool use_syslog, tee_stderr, journal;

int chlbd_log_level_parse(const char *name)
{
	static const char *const names[] = { [LOG_ERR] = "err",
					     [LOG_WARNING] = "warning",
					     [LOG_INFO] = "info",
					     [LOG_DEBUG] = "debug" };

	for (int i = 0; i <= LOG_DEBUG; i++)
		if (names[i] && !strcmp(name, names[i]))
			return i;
	return -1;
}

/* stderr is the journal's stream only if JOURNAL_STREAM names it (not just inherited) */
void chlbd_log_init(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && !fstat(STDERR_FILENO, &st) &&
		  st.st_dev == dev && st.st_ino == ino;
}

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

	if (journal) {
		fprintf(stderr, "<%d>%s\n", level & 7, msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld chlbd %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, names[level & 7], msg);
}

void chlbd_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	/* --log-level, else info (-v: debug) */
	if (level > (D.log_level >= 0 ? D.log_level : D.verbose ? LOG_DEBUG : LOG_INFO))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (use_syslog)
		syslog(level, "%s", msg);
	if (!use_syslog || (tee_stderr && level <= LOG_WARNING))
		to_stderr(level, msg);
}
