// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Error messages (see err.h). */
#include <stdarg.h>
#include <stdio.h>
#include "base/err.h"

int chlb_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
