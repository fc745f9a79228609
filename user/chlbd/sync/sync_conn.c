// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What entry sync's parts share (sync_int.h): the peers, the counters, socket helpers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include "sync/sync_int.h"

#define KEEPALIVE_IDLE	5 /* s: a silently dead peer's connection goes in ~11 s */
#define KEEPALIVE_INTVL 2
#define KEEPALIVE_CNT	3
#define USER_TIMEOUT_MS 11000 /* the same bound for a connection with data unacknowledged */

struct sync_listen sync_listen;
struct sync_peer sync_peers[SYNC_MAX_PEERS];
int sync_npeers;
struct sync_counters sync_c;

void sync_conn_watch(struct sync_conn *c, unsigned int events, int op)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	if (epoll_ctl(D.epfd, op, c->fd, &ev))
		pr_warn("sync: epoll: %s", strerror(errno));
}

void sync_conn_close(struct sync_conn *c)
{
	if (c->fd >= 0) {
		epoll_ctl(D.epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->off = c->cap = 0;
}

void sync_keepalive(int fd)
{
	int one = 1, idle = KEEPALIVE_IDLE, intvl = KEEPALIVE_INTVL, cnt = KEEPALIVE_CNT;
	/* keepalive finds a dead peer on an idle connection; this one with data unacked */
	unsigned int user_timeout = USER_TIMEOUT_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

bool sync_ratelog(struct sync_ratelog *l, __u64 now)
{
	if (l->at && now - l->at < SYNC_LOG_EVERY_NS) {
		l->suppressed++;
		return false;
	}
	l->at = now;
	return true;
}

void sync_auth_rejected(struct sync_peer *p, const char *side, const char *why)
{
	sync_c.auth_rejected++;
	if (!sync_ratelog(&p->auth_log, chlb_now_ns()))
		return;
	pr_warn("sync: %s: refused (%s side): %s (%llu more refused since the last such line)",
		p->name, side, why, (unsigned long long)p->auth_log.suppressed);
	p->auth_log.suppressed = 0;
}

int sync_send_now(int fd, const void *b, size_t n)
{
	ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	return w == (ssize_t)n ? 0 : -1;
}
