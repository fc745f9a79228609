// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Small helpers shared across user/lib (see util.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include "util.h"

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

void chlb_stream_copy(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	__m128i *d = dst;
	const __m128i *s = src;
	size_t i, n = len / sizeof(*d);

	for (i = 0; i < n; i++)
		_mm_stream_si128(&d[i], _mm_loadu_si128(&s[i]));
	memcpy((char *)dst + n * sizeof(*d), (const char *)src + n * sizeof(*d),
	       len - n * sizeof(*d));
#else
	memcpy(dst, src, len);
#endif
}

void chlb_stream_fence(void)
{
#if defined(__x86_64__)
	_mm_sfence();
#endif
}
