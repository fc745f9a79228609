/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Non-blocking sockets, the one way chlbd makes them: the control socket
 * (ctl/), /metrics (metrics/), entry sync (sync/) and health probes
 * (health/) all listen, accept and connect through these, so every socket
 * of the event loop is non-blocking and close-on-exec, and every listener
 * is made the same way. The library's return convention: a descriptor
 * (>= 0) or a negative errno.
 */
#ifndef CHLBD_SOCK_H
#define CHLBD_SOCK_H

#include <sys/socket.h>

/*
 * A listening stream socket bound to addr: SO_REUSEADDR for TCP (a restart
 * rebinds while the old connections are in TIME_WAIT). An AF_UNIX address
 * is bound with umask 0177 (born 0600: no window where another user could
 * connect); the caller sets its owner and mode before sock_listen_start().
 */
int sock_bind(const struct sockaddr *addr, socklen_t len);
/* listen(fd, backlog): 0 or a negative errno. */
int sock_listen_start(int fd, int backlog);
/* sock_bind() then sock_listen_start(); the socket is closed on failure. */
int sock_listen(const struct sockaddr *addr, socklen_t len, int backlog);

/*
 * One connection from a listener, non-blocking: its descriptor, -EAGAIN
 * when none is waiting, or another negative errno (-EMFILE / -ENFILE: out
 * of descriptors, which the caller handles). Interrupted and aborted
 * accepts are retried here. from / flen may be NULL.
 */
int sock_accept(int lfd, struct sockaddr_storage *from, socklen_t *flen);

/*
 * A non-blocking TCP connect to addr, from src's address if src is given
 * (its port is ignored: the kernel picks one). The descriptor, connected or
 * still connecting (EPOLLOUT tells which), or a negative errno; then *step
 * (if step is given) names the call that failed: "socket", "bind", the
 * setup's own name, or "connect". setup, if given, runs on the socket
 * before connect (socket options): a negative errno from it fails the call,
 * and it may name itself in *step.
 */
int sock_connect(const struct sockaddr *addr, socklen_t len, const struct sockaddr *src,
		 socklen_t srclen, int (*setup)(int fd, void *arg, const char **step), void *arg,
		 const char **step);

#endif /* CHLBD_SOCK_H */
