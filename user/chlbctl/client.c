// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One request over chlbd's control socket (protocol: see user/chlbd/server.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "chlbctl.h"
#include "client.h"
#include "grammar.h"

#define REPLY_MAX (64u << 20)

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ctl_request(const char *text, json_object **reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 0;
	char *buf = NULL;
	json_object *o, *e;
	int fd;

	*reply = NULL;
	if (strlen(ctl.socket) >= sizeof(sa.sun_path)) {
		p_err("socket path '%s' too long", ctl.socket);
		return CHLBCTL_EXIT_USAGE;
	}
	strcpy(sa.sun_path, ctl.socket);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		p_err("couldn't connect to chlbd at '%s': %s (-%d)", ctl.socket, strerror(errno),
		      errno);
		if (fd >= 0)
			close(fd);
		return CHLBCTL_EXIT_UNREACHABLE;
	}
	if (send_all(fd, text, strlen(text)) || shutdown(fd, SHUT_WR)) {
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
				p_err("reply from chlbd too large");
				return CHLBCTL_EXIT_PROTOCOL;
			}
			buf = p;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf || !len) {
		free(buf);
		p_err("chlbd closed the connection without a reply");
		return CHLBCTL_EXIT_PROTOCOL;
	}
	buf[len] = '\0';
	o = json_tokener_parse(buf);
	free(buf);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		p_err("unparsable reply from chlbd");
		return CHLBCTL_EXIT_PROTOCOL;
	}
	if (json_object_object_get_ex(o, "error", &e)) {
		json_object *k;
		const char *kind =
		    json_object_object_get_ex(o, "kind", &k) ? json_object_get_string(k) : NULL;
		/* a bad value is a usage error, whoever finds it */
		int rc = kind && !strcmp(kind, "usage") ? CHLBCTL_EXIT_USAGE : CHLBCTL_EXIT_FAIL;

		p_err_kind(kind, "%s", json_object_get_string(e));
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
