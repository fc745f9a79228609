// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Error messages (see err.h): built here only. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base/err.h"

const char *chlb_strerror(int rc)
{
	static __thread char buf[128];

	snprintf(buf, sizeof(buf), "%s (%d)", strerror(rc < 0 ? -rc : rc), rc);
	return buf;
}

static int verr(char *err, size_t errlen, int rc, int sys, const char *fmt, va_list ap)
{
	int n;

	if (!err || !errlen)
		return rc;
	n = vsnprintf(err, errlen, fmt, ap);
	if (sys && n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, ": %s", chlb_strerror(rc));
	return rc;
}

int chlb_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(err, errlen, rc, 0, fmt, ap);
	va_end(ap);
	return rc;
}

int chlb_syserr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(err, errlen, rc, 1, fmt, ap);
	va_end(ap);
	return rc;
}
