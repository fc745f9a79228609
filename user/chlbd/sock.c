// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Non-blocking listeners, accepts and connects for every socket of chlbd's
 * event loop (sock.h).
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sock.h"

static int fail(int fd, int rc)
{
	if (fd >= 0)
		close(fd);
	return rc;
}

int sock_bind(const struct sockaddr *addr, socklen_t len)
{
	int one = 1, fd, r;

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (addr->sa_family == AF_UNIX) {
		mode_t old = umask(0177);

		r = bind(fd, addr, len);
		umask(old);
	} else {
		r = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(fd, addr, len);
	}
	return r ? fail(fd, -errno) : fd;
}

int sock_listen_start(int fd, int backlog)
{
	return listen(fd, backlog) ? -errno : 0;
}

int sock_listen(const struct sockaddr *addr, socklen_t len, int backlog)
{
	int fd = sock_bind(addr, len), r;

	if (fd < 0)
		return fd;
	r = sock_listen_start(fd, backlog);
	return r ? fail(fd, r) : fd;
}

int sock_accept(int lfd, struct sockaddr_storage *from, socklen_t *flen)
{
	for (;;) {
		int fd = accept4(lfd, (struct sockaddr *)from, flen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0)
			return fd;
		if (errno != EINTR && errno != ECONNABORTED)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
}

int sock_connect(const struct sockaddr *addr, socklen_t len, const struct sockaddr *src,
		 socklen_t srclen, int (*setup)(int fd, void *arg, const char **step), void *arg,
		 const char **step)
{
	const char *unused;
	int fd, r;

	if (!step)
		step = &unused;
	*step = "socket";
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	*step = "bind";
	if (src && srclen && bind(fd, src, srclen))
		return fail(fd, -errno);
	*step = "setup";
	if (setup && (r = setup(fd, arg, step)) < 0)
		return fail(fd, r);
	*step = "connect";
	if (connect(fd, addr, len) && errno != EINPROGRESS)
		return fail(fd, -errno);
	return fd;
}
