// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One health probe on a non-blocking socket in chlbd's epoll loop:
 *   tcp   the connect completes (SO_ERROR 0 on writability);
 *   http  then "GET PATH HTTP/1.0" with a Host header is sent and the
 *         status line's code must be within the check's expect range.
 * The timeout (health.c's scan) covers the whole probe: a server that
 * accepts and never answers fails it. Every probe socket is closed with
 * SO_LINGER 0 (a reset): thousands of probes a minute leave no TIME_WAIT
 * behind on the load balancer.
 */
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sock.h"
#include "health/health.h"
#include "dp/nexthop.h"

#define NS_PER_MS	1000000ull
#define PATH_RECHECK_NS 5000000000ull /* routes change rarely: a lookup per 5 s per backend */

void health_probe_cancel(struct hc *h)
{
	if (h->fd >= 0)
		close(h->fd); /* leaves the epoll set with it */
	h->fd = -1;
	h->phase = HC_IDLE;
	h->req_off = h->blen = 0;
}

/* The probe is over: its result waits in h for the checker (health.c: probe_done()). */
static void finish(struct hc *h, bool ok, const char *text, __u64 now)
{
	(void)now;
	health_probe_cancel(h);
	h->done = true;
	h->res_ok = ok;
	snprintf(h->res, sizeof(h->res), "%s", text);
}

static void fail_errno(struct hc *h, const char *what, int e, __u64 now)
{
	char t[HC_TEXT_MAX];

	snprintf(t, sizeof(t), "%s: %s", what, strerror(e));
	finish(h, false, t, now);
}

/* The port probed: the check's, else the service's; via vip the service's (the VIP's key). */
static __u16 probe_port(const struct hc *h)
{
	if (h->via_vip && h->vip.port)
		return h->vip.port;
	return h->ck.port ? h->ck.port : h->vip.port;
}

/*
 * The probe's path: 1 via the VIP (*mark set), 0 direct, -1 neither (why
 * says it: `via vip` that cannot work). `via auto` is vip when the route to
 * the VIP for this backend's mark leaves by an interface that carries the
 * steering program (chlbd attaches it on its -i interfaces), else direct.
 */
/*
 * Not via the VIP, for a reason of this backend's own (why: "via vip:
 * ..."): `via vip` fails with it; `via auto` goes direct and keeps it for
 * backend list's via_why, as it keeps a failed route lookup's.
 */
static int not_via_vip(struct hc *h, __u64 now, const char *why)
{
	if (h->ck.via == CHLB_VIA_VIP)
		return -1;
	h->path_ns = now;
	h->path_rc = -EINVAL;
	snprintf(h->path_err, sizeof(h->path_err), "%s", why + strlen("via vip: "));
	return 0;
}

static int probe_path(struct hc *h, __u64 now, __u32 *mark, char *why, size_t len)
{
	int slot, ifindex = 0;
	struct hc_svc *hs;

	if (h->ck.via == CHLB_VIA_DIRECT)
		return 0;
	if (h->ck.port && h->vip.port && h->ck.port != h->vip.port) {
		/* the steering program forwards only what a service of the VIP would */
		snprintf(why, len,
			 "via vip: a probe to the VIP goes to its port %u, not check port %u "
			 "(use via direct)",
			 h->vip.port, h->ck.port);
		return not_via_vip(h, now, why);
	}
	slot = chlb_rt_be_slot(D.rt, chlb_rt_svc_id(D.rt, &h->vip), &h->addr);
	if (slot < 0) {
		snprintf(why, len, "via vip: the backend has no slot in the data plane yet");
		return not_via_vip(h, now, why);
	}
	*mark = CHLB_PROBE_MARK(slot);
	/*
	 * One lookup per service and PATH_RECHECK_NS (with the mark of the
	 * backend probed then): a route lookup and a TC query per probe would
	 * cost more than the probe. A connect that finds no route looks again.
	 */
	hs = health_svc(&h->vip);
	if (hs && (!hs->path_ns || now - hs->path_ns >= PATH_RECHECK_NS)) {
		hs->path_ns = now;
		hs->path_rc = chlb_nh_probe_route(&h->vip.addr, *mark, &ifindex, hs->path_err,
						  sizeof(hs->path_err));
		if (!hs->path_rc && !chlb_dp_probe_attached(D.dp, ifindex)) {
			char name[IF_NAMESIZE] = "?";

			if_indextoname((unsigned int)ifindex, name);
			hs->path_rc = -ENODEV;
			snprintf(hs->path_err, sizeof(hs->path_err),
				 "the route to the VIP leaves by %s, which has no probe steering "
				 "(chlbd puts it on its -i interfaces)",
				 name);
		}
	}
	if (hs) {
		h->path_ns = hs->path_ns;
		h->path_rc = hs->path_rc;
		memcpy(h->path_err, hs->path_err, sizeof(h->path_err));
	}
	if (!h->path_rc)
		return 1;
	snprintf(why, len, "via vip: %.100s", h->path_err);
	return h->ck.via == CHLB_VIA_VIP ? -1 : 0;
}

static socklen_t sockaddr_of(const struct chlb_addr *a, __u16 port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == CHLB_AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, a->a, 4);
		return sizeof(*s4);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	memcpy(&s6->sin6_addr, a->a, 16);
	return sizeof(*s6);
}

/* The request; the same bytes every time, so a partial send resumes at req_off. */
static int http_request(const struct hc *h, char *buf, size_t len)
{
	char host[CHLB_CHECK_HOST_MAX + CHLB_ADDRSTR + 8], a[CHLB_ADDRSTR];
	__u16 port = probe_port(h);

	if (h->ck.host[0]) {
		snprintf(host, sizeof(host), "%s", h->ck.host);
	} else {
		/* the address probed, as a client would write it */
		const struct chlb_addr *ad = h->via_vip ? &h->vip.addr : &h->addr;

		chlb_fmt_addr(ad, a, sizeof(a));
		snprintf(host, sizeof(host), ad->family == CHLB_AF_INET6 ? "[%s]" : "%s", a);
		if (port != 80)
			snprintf(host + strlen(host), sizeof(host) - strlen(host), ":%u", port);
	}
	return snprintf(buf, len,
			"GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: chlbd-health\r\n"
			"Connection: close\r\n\r\n",
			h->ck.path[0] ? h->ck.path : "/", host);
}

static int watch(struct hc *h, unsigned int events, int op)
{
	struct epoll_event ev = { .events = events, .data.ptr = &h->ev };

	return epoll_ctl(D.epfd, op, h->fd, &ev);
}

/*
 * A probe's socket: closed with a RST (no TIME_WAIT per probe); via the VIP,
 * marked with the backend (mark != NULL): the TC egress program steers the
 * probe to it.
 */
static int probe_socket_setup(int fd, void *mark, const char **step)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	*step = "via vip: SO_MARK";
	if (mark && setsockopt(fd, SOL_SOCKET, SO_MARK, mark, sizeof(__u32)))
		return -errno;
	return 0;
}

void health_probe_start(struct hc *h, __u64 now)
{
	struct sockaddr_storage ss;
	const char *step;
	char why[HC_TEXT_MAX];
	__u32 mark = 0;
	__u16 port;
	socklen_t sl;
	int path, fd;

	health_probe_cancel(h);
	h->sent++;
	h->t0 = now;
	h->deadline = now + (__u64)h->ck.timeout_ms * NS_PER_MS;
	path = probe_path(h, now, &mark, why, sizeof(why));
	if (path < 0) {
		finish(h, false, why, now);
		return;
	}
	h->via_vip = path == 1;
	port = probe_port(h);
	if (!port) {
		finish(h, false, "no port to probe: the service has none; set `check port N`", now);
		return;
	}
	sl = sockaddr_of(h->via_vip ? &h->vip.addr : &h->addr, port, &ss);
	fd = sock_connect((struct sockaddr *)&ss, sl, NULL, 0, probe_socket_setup,
			  h->via_vip ? &mark : NULL, &step);
	if (fd < 0 && strcmp(step, "connect")) {
		fail_errno(h, step, -fd, now);
		return;
	}
	h->phase = HC_CONNECTING;
	h->fd = fd < 0 ? -1 : fd;
	if (fd < 0) {
		int e = -fd;

		if (h->via_vip && (e == ENETUNREACH || e == EHOSTUNREACH)) {
			/* the route to the VIP went away since the last lookup: look again */
			struct hc_svc *hs = health_svc(&h->vip);

			h->path_rc = -e;
			h->path_ns = now;
			snprintf(h->path_err, sizeof(h->path_err), "no route to the VIP (%s)",
				 strerror(e));
			if (hs) { /* for the whole service: its other probes go direct too */
				hs->path_rc = h->path_rc;
				hs->path_ns = now;
				memcpy(hs->path_err, h->path_err, sizeof(hs->path_err));
			}
			if (h->ck.via == CHLB_VIA_AUTO) {
				h->sent--; /* the same probe, direct */
				health_probe_start(h, now);
				return;
			}
		}
		fail_errno(h, h->via_vip ? "via vip: connect" : "connect", e, now);
		return;
	}
	if (watch(h, EPOLLOUT, EPOLL_CTL_ADD))
		fail_errno(h, "epoll", errno, now);
}

static void ok_text(struct hc *h, const char *what, __u64 now)
{
	char t[HC_TEXT_MAX];

	snprintf(t, sizeof(t), "%s%s%.2f ms", what, *what ? " in " : "ok ",
		 (double)(now - h->t0) / 1e6);
	finish(h, true, t, now);
}

static void connected(struct hc *h, __u64 now)
{
	char req[512];
	int n;
	ssize_t w;

	if (h->ck.type != CHLB_CHECK_HTTP) {
		ok_text(h, "", now);
		return;
	}
	h->phase = HC_EXCHANGING;
	n = http_request(h, req, sizeof(req));
	if (n <= 0 || (size_t)n >= sizeof(req)) {
		finish(h, false, "http: request too long (path and host)", now);
		return;
	}
	h->req_len = (__u32)n;
	w = send(h->fd, req + h->req_off, h->req_len - h->req_off, MSG_NOSIGNAL);
	if (w < 0 && errno != EAGAIN) {
		fail_errno(h, "send", errno, now);
		return;
	}
	if (w > 0)
		h->req_off += (__u32)w;
	if (watch(h, h->req_off < h->req_len ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD))
		fail_errno(h, "epoll", errno, now);
}

/* A status line in buf? 1: decided (finished), 0: need more. */
static int status_line(struct hc *h, bool eof, __u64 now)
{
	char t[HC_TEXT_MAX], *nl = memchr(h->buf, '\n', h->blen), *sp;
	unsigned int code;

	if (!nl && h->blen < sizeof(h->buf) - 1 && !eof)
		return 0;
	h->buf[h->blen] = 0;
	sp = strchr(h->buf, ' ');
	if (sp)
		while (*sp == ' ')
			sp++;
	/* the status code is exactly 3 digits: "2000", "-1" or "+20" are not a 200 */
	if (strncmp(h->buf, "HTTP/", 5) || !sp || !isdigit((unsigned char)sp[0]) ||
	    !isdigit((unsigned char)sp[1]) || !isdigit((unsigned char)sp[2]) ||
	    (sp[3] && !strchr(" \r\n", sp[3]))) {
		if (!h->blen) {
			finish(h, false, "http: closed before a status line", now);
			return 1;
		}
		/* what came instead, printable, so the operator sees the mistake */
		for (char *p = h->buf; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				*p = *p == '\r' || *p == '\n' ? 0 : '?';
		snprintf(t, sizeof(t), "http: not an HTTP status line: '%.40s'", h->buf);
		finish(h, false, t, now);
		return 1;
	}
	code = (unsigned int)(sp[0] - '0') * 100 + (unsigned int)(sp[1] - '0') * 10 +
	       (unsigned int)(sp[2] - '0');
	if (code >= h->ck.expect_lo && code <= h->ck.expect_hi) {
		snprintf(t, sizeof(t), "HTTP %u", code);
		ok_text(h, t, now);
	} else {
		snprintf(t, sizeof(t), "HTTP %u (expect %u-%u) in %.2f ms", code, h->ck.expect_lo,
			 h->ck.expect_hi, (double)(now - h->t0) / 1e6);
		finish(h, false, t, now);
	}
	return 1;
}

void health_probe_event(struct hc *h, unsigned int events, __u64 now)
{
	int e = 0;
	socklen_t el = sizeof(e);
	ssize_t r;

	if (h->fd < 0)
		return; /* cancelled within this batch of events */
	if (h->phase == HC_CONNECTING) {
		if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &e, &el))
			e = errno;
		if (e) {
			fail_errno(h, "connect", e, now);
			return;
		}
		if (!(events & EPOLLOUT))
			return;
		connected(h, now);
		return;
	}
	if (h->req_off < h->req_len) { /* the rest of the request */
		connected(h, now);
		return;
	}
	r = recv(h->fd, h->buf + h->blen, sizeof(h->buf) - 1 - h->blen, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r < 0) {
		fail_errno(h, "recv", errno, now);
		return;
	}
	h->blen += (__u32)r;
	status_line(h, r == 0, now);
}
