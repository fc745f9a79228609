/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Error messages of user/lib: one reporter (see chlb_err()). */
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

#endif /* CHLB_UTIL_H */
