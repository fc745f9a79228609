// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Daemon mode (no -f) and the pid file.
 *
 * chlbd forks before it creates anything: the child does the whole start
 * (BPF load, pins, socket, signalfd) and the parent waits on a pipe for its
 * verdict. So `chlbd` returns once the daemon answers its socket, with exit
 * status 0, or with the child's status, its error messages on the caller's
 * stderr, when the start failed (no silent failure after a fork).
 *
 * Why before, not after, the start: a signalfd added to an epoll set is
 * woken by the signals of the process that added it. daemon() after
 * loop_init() left the child's epoll watching the parent's signal queue,
 * and SIGTERM/SIGHUP stayed pending in the child for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "chlbd.h"

static int ready_fd = -1; /* the child's end of the pipe; -1 in the foreground */
static const char *pid_file;

/* The parent: wait for "ready" or for the child's exit, then exit alike. */
static void __attribute__((noreturn)) parent_wait(int fd, pid_t child)
{
	int status;
	ssize_t n;
	char c;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	/* EOF before "ready": the child failed and said why on our stderr */
	if (waitpid(child, &status, 0) < 0)
		_exit(1);
	if (WIFSIGNALED(status))
		fprintf(stderr, "chlbd: the daemon was killed by signal %d while starting\n",
			WTERMSIG(status));
	_exit(WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1);
}

int chlbd_daemon_fork(void)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int rc = -errno;

		close(p[0]);
		close(p[1]);
		return rc;
	}
	if (pid > 0) {
		close(p[1]);
		parent_wait(p[0], pid);
	}
	close(p[0]);
	ready_fd = p[1];
	chlbd_log_to_syslog(true);
	/* our own session: no controlling terminal, no SIGHUP when it closes */
	return setsid() < 0 ? -errno : 0;
}

/* Does a syslog daemon listen on /dev/log? syslog(3) drops messages silently when none does. */
static bool syslog_listens(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/dev/log" };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return true; /* can't tell: don't cry wolf */
	ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return ok;
}

/* Started: let go of the terminal and the cwd, log to syslog, release the parent. */
int chlbd_daemon_ready(void)
{
	int fd;

	if (ready_fd < 0)
		return 0;
	/* said while stderr is still the starting terminal: a host without syslog lost every line */
	if (!syslog_listens())
		pr_warn(
		    "no syslog daemon listens on /dev/log: the daemon's messages from now on "
		    "are lost; run chlbd -f under a supervisor (systemd: its unit) to keep them");
	if (chdir("/"))
		return -errno; /* don't keep the start directory's mount busy */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* dup2 clears O_CLOEXEC on 0-2: children (none today) would get /dev/null too */
	if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	chlbd_log_to_syslog(false); /* stderr is /dev/null now */
	if (write(ready_fd, "R", 1) != 1)
		pr_warn("couldn't tell the starting process we are ready: %s", strerror(errno));
	close(ready_fd);
	ready_fd = -1;
	return 0;
}

/* path against the cwd (malloc'd, kept for the process's life); NULL stays NULL. */
static int absolute(const char **path)
{
	char cwd[PATH_MAX], *abs;
	size_t len;

	if (!*path || **path == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	len = strlen(cwd) + strlen(*path) + 2;
	abs = malloc(len);
	if (!abs)
		return -ENOMEM;
	snprintf(abs, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", *path);
	*path = abs;
	return 0;
}

/*
 * Relative paths made absolute: the daemon runs in /, SIGHUP re-reads the
 * config long after the start, and the bpffs mount point is chosen from the
 * pin dir's absolute path. The socket stays as given in the foreground: an
 * absolute path could pass the 107 bytes an AF_UNIX address holds.
 */
int chlbd_absolute_paths(void)
{
	char *pin;
	size_t n;
	int rc = absolute(&D.pin_dir) ?: absolute(&D.state_path) ?: absolute(&D.config_path) ?:
		 absolute(&D.pid_file);

	if (!rc && !D.foreground)
		rc = absolute(&D.socket_path);
	if (rc)
		return rc;
	pin = strdup(D.pin_dir);
	if (!pin)
		return -ENOMEM;
	for (n = strlen(pin); n > 1 && pin[n - 1] == '/'; n--)
		pin[n - 1] = '\0';
	D.pin_dir = pin;
	return 0;
}

/* Written whole (temporary file + rename): a reader never sees half a pid. */
int chlbd_pidfile_write(const char *path)
{
	char tmp[PATH_MAX], buf[32];
	int fd, len, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, (size_t)len) != len)
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	else
		pid_file = path;
	return rc;
}

/* Remove the pid file if it still names us (a newer chlbd may have taken it over). */
void chlbd_pidfile_remove(void)
{
	char buf[32] = "";
	FILE *f;

	if (!pid_file)
		return;
	f = fopen(pid_file, "re");
	if (f && fgets(buf, sizeof(buf), f) && atoi(buf) == (int)getpid())
		unlink(pid_file);
	if (f)
		fclose(f);
	pid_file = NULL;
}
