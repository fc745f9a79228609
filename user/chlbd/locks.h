/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Lock files (locks.c): what one chlbd holds for its whole life, so that a second one
 * sharing any of it is refused with the holder named: the state file, the
 * control socket (a lock file beside each) and the pin directory (a lock on
 * the directory itself, main.c).
 */
#ifndef CHLBD_LOCKS_H
#define CHLBD_LOCKS_H

#include <sys/types.h>

/*
 * flock(LOCK_EX | LOCK_NB) on PATH.lock (created 0600, never followed
 * through a symlink, never written): the fd, held until exit, or a
 * negative errno after logging why (-EBUSY: "WHAT 'PATH' is in use by
 * chlbd pid N"). `what` names the thing locked ("state file", "control
 * socket"). On a read-only file system, where PATH.lock can't be created,
 * PATH itself is locked (nothing can replace it there); if it does not
 * exist either, -EROFS after a warning: not locked, carry on.
 */
int lock_beside(const char *path, const char *what);

/* The pid holding a lock on fd's file (/proc/locks), or 0 when unknown. */
pid_t lock_holder(int fd);

/*
 * -s must name none of chlbd's files (the state file, its .prev, .tmp and
 * .lock, the config, the pid file): 0, or -1 after logging.
 */
int lock_check_socket_path(void);

#endif /* CHLBD_LOCKS_H */
