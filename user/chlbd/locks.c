// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Locks held for chlbd's lifetime (locks.h). A lock file beside the state
 * file and beside the socket, not the files themselves: the state file is
 * replaced by a rename on every write (a lock on it would stay on the old
 * inode), and a socket can't be flocked before it exists. Lock files are
 * left in place at exit: removing one would let a starting chlbd lock an
 * unlinked inode while a third creates and locks a new one.
 *
 * The holder's pid comes from /proc/locks (the kernel's table: right even
 * when the holder was killed and its pid reused, as the lock went with
 * it), so nothing is ever written into a lock file. Writing would truncate
 * whatever a planted hard link points at.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "chlbd.h"
#include "locks.h"

/*
 * Released at exit() before the kernel closes the rest: `chlbctl shutdown`
 * returns when its connection closes, and a chlbd started right after must
 * find every lock free by then.
 */
static int held[4], nheld;

static void release_all(void)
{
	while (nheld)
		close(held[--nheld]);
}

static void hold(int fd)
{
	if (!nheld)
		atexit(release_all);
	if (nheld < (int)(sizeof(held) / sizeof(held[0])))
		held[nheld++] = fd;
}

pid_t lock_holder(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], kind[16];
	struct stat st;
	pid_t pid = 0;
	int p;
	FILE *f;

	if (fstat(fd, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	/* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters' lines have "->" */
	while (!pid && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", kind, &p, &maj, &min, &ino) != 5)
			continue;
		if (ino == st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev) && p > 0)
			pid = p;
	}
	fclose(f);
	return pid;
}

int lock_beside(const char *path, const char *what)
{
	char lock[PATH_MAX];
	pid_t holder;
	int fd;

	if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock)) {
		pr_err("%s '%s': path too long", what, path);
		return -ENAMETOOLONG;
	}
	fd = open(lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EROFS) {
		/* a read-only directory: nothing can replace the file itself, so lock that */
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			pr_warn("couldn't create the lock file '%s' (read-only) nor open '%s': "
				"the %s is not locked",
				lock, path, what);
			return -EROFS;
		}
		snprintf(lock, sizeof(lock), "%s", path);
	}
	if (fd < 0) {
		fd = -errno;
		pr_err("couldn't open the lock file '%s' of the %s: %s", lock, what,
		       chlb_strerror(fd));
		return fd;
	}
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		hold(fd);
		return fd;
	}
	holder = errno == EWOULDBLOCK ? lock_holder(fd) : 0;
	if (holder)
		pr_err("%s '%s' is in use by another chlbd (pid %d, lock %s): one chlbd per %s",
		       what, path, (int)holder, lock, what);
	else
		pr_err("%s '%s' is in use by another chlbd (lock %s): one chlbd per %s", what, path,
		       lock, what);
	close(fd);
	return -EBUSY;
}

/* path made absolute against the cwd, for comparisons only. */
static void absolute(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)) ||
	    snprintf(out, len, "%s/%s", cwd, path) >= (int)len)
		snprintf(out, len, "%s", path);
}

/* Same file: the same path, or (both exist) the same inode. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return true;
	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int lock_check_socket_path(void)
{
	static const char *const suffixes[] = { "", ".prev", ".tmp", ".lock" };
	char sock[PATH_MAX], f[PATH_MAX + 8];

	absolute(D.socket_path, sock, sizeof(sock));
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(f, sizeof(f), "%s%s", D.state_path, suffixes[i]);
		if (same_file(sock, f)) {
			pr_err("socket '%s' is %s'%s': choose another -s", D.socket_path,
			       i ? "chlbd's own " : "the state file ", f);
			return -EINVAL;
		}
	}
	if ((D.config_path && same_file(sock, D.config_path)) ||
	    (D.pid_file && same_file(sock, D.pid_file))) {
		pr_err("socket '%s' is the %s file: choose another -s", D.socket_path,
		       D.config_path && same_file(sock, D.config_path) ? "config" : "pid");
		return -EINVAL;
	}
	return 0;
}
