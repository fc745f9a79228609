// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One request over chlbd's control socket (protocol: see
 * user/chlbd/ctl/ctl_server.c), within --timeout: connecting, sending and reading
 * the whole reply together (a stopped or wedged chlbd accepts the
 * connection and the request, and never answers).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "chlbctl.h"
#include "client.h"
#include "config/grammar.h"

#define REPLY_MAX (64u << 20)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The request's deadline (0: none, --timeout 0). */
static long long deadline;

/* 0 when fd is ready for `events`, -ETIMEDOUT when the deadline passed first. */
static int wait_ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		long long left = deadline ? deadline - now_ms() : -1;

		if (deadline && left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, deadline ? (int)(left > 1 << 30 ? 1 << 30 : left) : -1);
	} while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : n == 0 ? -ETIMEDOUT : -errno;
}

static int timed_out(void)
{
	p_err_kind("unreachable",
		   "chlbd at '%s' did not answer within %g s (--timeout): is it stopped or wedged?",
		   ctl.socket, ctl.timeout_ms / 1000.0);
	return CHLBCTL_EXIT_UNREACHABLE;
}

/* 0, -ETIMEDOUT, or -1 (the daemon closed: read what it answered) */
static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n;
		int rc = wait_ready(fd, POLLOUT);

		if (rc)
			return rc == -ETIMEDOUT ? rc : -1;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A blocking connect (a full backlog waits) bounded by the deadline: SO_SNDTIMEO bounds it. */
static int connect_timed(int fd, const struct sockaddr_un *sa)
{
	long long left = deadline ? deadline - now_ms() : 0;
	struct timeval tv = { .tv_sec = (time_t)(left / 1000), .tv_usec = (left % 1000) * 1000 };

	if (deadline && left <= 0)
		return -ETIMEDOUT;
	if (deadline && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		return errno == EAGAIN && deadline ? -ETIMEDOUT : -errno;
	return 0;
}

int ctl_request(const char *text, json_object **reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 0;
	char *buf = NULL;
	json_object *o, *e;
	int fd, rc;

	*reply = NULL;
	if (strlen(ctl.socket) >= sizeof(sa.sun_path)) {
		p_err_kind("usage", "socket path '%s' too long", ctl.socket);
		return CHLBCTL_EXIT_USAGE;
	}
	strcpy(sa.sun_path, ctl.socket);
	deadline = ctl.timeout_ms ? now_ms() + ctl.timeout_ms : 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	rc = fd < 0 ? -errno : connect_timed(fd, &sa);
	if (rc) {
		if (fd >= 0)
			close(fd);
		if (rc == -ETIMEDOUT)
			return timed_out();
		p_err_kind("unreachable", "couldn't connect to chlbd at '%s': %s", ctl.socket,
			   chlb_strerror(rc));
		return CHLBCTL_EXIT_UNREACHABLE;
	}
	rc = send_all(fd, text, strlen(text));
	if (rc == -ETIMEDOUT) {
		close(fd);
		return timed_out();
	}
	if (rc || shutdown(fd, SHUT_WR)) {
		/* the daemon may have answered early (oversized request): read it anyway */
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 65536;
			char *p = cap > REPLY_MAX ? NULL : realloc(buf, cap + 1);

			if (!p) {
				free(buf);
				close(fd);
				p_err_kind("protocol", "reply from chlbd too large");
				return CHLBCTL_EXIT_PROTOCOL;
			}
			buf = p;
		}
		if (wait_ready(fd, POLLIN)) {
			free(buf);
			close(fd);
			return timed_out();
		}
		n = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf || !len) {
		free(buf);
		p_err_kind("protocol", "chlbd closed the connection without a reply");
		return CHLBCTL_EXIT_PROTOCOL;
	}
	buf[len] = '\0';
	o = json_tokener_parse(buf);
	free(buf);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		p_err_kind("protocol", "unparsable reply from chlbd");
		return CHLBCTL_EXIT_PROTOCOL;
	}
	if (json_object_object_get_ex(o, "error", &e)) {
		json_object *k;
		const char *kind =
		    json_object_object_get_ex(o, "kind", &k) ? json_object_get_string(k) : NULL;
		/* a bad value is a usage error, whoever finds it */
		int rc = kind && !strcmp(kind, "usage") ? CHLBCTL_EXIT_USAGE : CHLBCTL_EXIT_FAIL;
		const char *msg = json_object_get_string(e);

		/* chlbd numbers the lines of what it got; the user wrote a file */
		if (ctl.request_name && !strncmp(msg, "request:", 8))
			p_err_kind(kind, "%s:%s; nothing applied", ctl.request_name, msg + 8);
		else
			p_err_kind(kind, "%s", msg);
		json_object_put(o);
		return rc;
	}
	*reply = o;
	return CHLBCTL_EXIT_OK;
}

char *ctl_join(const char *head, int argc, char **argv)
{
	size_t len = strlen(head) + 2;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	strcpy(s, head);
	for (int i = 0; i < argc; i++) {
		strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

int ctl_check_words(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!argv[i][0] || argv[i][strcspn(argv[i], " \t\r\n")] || argv[i][0] == '#')
			return p_usage("'%s': %s", argv[i],
				       !argv[i][0] ? "an empty argument"
				       : argv[i][0] == '#'
					   ? "a word may not start with '#' (a comment)"
					   : "one word per argument: no spaces in it");
	}
	return CHLBCTL_EXIT_OK;
}

bool ctl_take_flag(int *argc, char **argv, const char *long_flag, const char *short_flag)
{
	bool found = false;
	int j = 0;

	for (int i = 0; i < *argc; i++) {
		if (!strcmp(argv[i], long_flag) || (short_flag && !strcmp(argv[i], short_flag))) {
			found = true;
			continue;
		}
		argv[j++] = argv[i];
	}
	*argc = j;
	return found;
}

int ctl_check_statement(const char *line)
{
	struct chlb_cmd c;
	char err[CHLB_ERR_MAX];

	if (chlb_parse_line(line, &c, err, sizeof(err)))
		return p_usage("%s", err);
	return CHLBCTL_EXIT_OK;
}
