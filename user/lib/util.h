/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small helpers shared across user/lib; not an API. */
#ifndef CHLB_UTIL_H
#define CHLB_UTIL_H

#include <stddef.h>

/*
 * printf into err (skipped when err is NULL or errlen 0) and return rc, so
 * error paths read `return chlb_err(err, errlen, -EINVAL, "...")`.
 */
int chlb_err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The common case: the callers only test for failure, so -1 is enough. */
#define chlb_fail(err, errlen, ...) chlb_err(err, errlen, -1, __VA_ARGS__)

/*
 * memcpy that bypasses the cache on x86 (non-temporal stores) for memory
 * written whole and not read again soon: no read of each line before it is
 * overwritten. dst must be 16-byte aligned. Stores are ordered before later
 * ones only after chlb_stream_fence().
 */
void chlb_stream_copy(void *dst, const void *src, size_t len);
void chlb_stream_fence(void);

#endif /* CHLB_UTIL_H */
