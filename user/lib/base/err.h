/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Errors across user/lib, one convention:
 *   - a function that can fail returns 0 (or a count, an index, a file
 *     descriptor: >= 0) or a negative errno; -EINVAL for what the caller
 *     got wrong, -E2BIG for a limit, -ENOENT / -EEXIST for what does not
 *     fit the state, -ENOMEM, or what the system call said;
 *   - when it takes an error buffer (char *err, size_t errlen; NULL or 0:
 *     no message) it writes one message there, built by chlb_err() or
 *     chlb_syserr() below and nowhere else, naming what failed.
 * Both return rc, so error paths read
 *   return chlb_err(err, errlen, -EINVAL, "'%s': unknown algorithm", name);
 *   return chlb_syserr(err, errlen, -errno, "couldn't open '%s'", path);
 */
#ifndef CHLB_BASE_ERR_H
#define CHLB_BASE_ERR_H

#include <stddef.h>

/* The message as given: for what was asked wrong, or a limit ("at most 1000"). */
int chlb_err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * The message, then ": <strerror(-rc)> (<rc>)": for what the system refused,
 * "couldn't open 'x': No such file or directory (-2)".
 */
int chlb_syserr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * That suffix alone, "No such file or directory (-2)" for rc -2, for a
 * message built elsewhere (chlbd's log lines, chlbctl's p_err()). A
 * per-thread buffer: one call per message.
 */
const char *chlb_strerror(int rc);

#endif /* CHLB_BASE_ERR_H */
