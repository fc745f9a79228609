// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-client: the load client of the end-to-end tests (pairs with chlb-echo).
 *
 *   chlb-client once  -t ADDR [-p PORT] [-n CONNS] [-k CONCURRENCY] [-u]
 *   chlb-client hold  -t ADDR [-p PORT] [-n CONNS] [-u]
 *   chlb-client churn -t ADDR [-p PORT] [-d SECONDS | -n CONNS] [-k CONCURRENCY]
 *   chlb-client icmp  -t VIP  [-p PORT] -s SPORT
 *
 * once:  CONNS connections (UDP: flows), each from its own source port, each
 *        does one request and closes. Prints "conn IDX SPORT BACKEND" per
 *        connection.
 * hold:  opens CONNS connections and keeps them; round 0 runs at once, then
 *        one more round on every line read from stdin, until EOF. A round
 *        exchanges one request on every connection and prints "moved IDX
 *        SPORT OLD NEW" for a connection answered by another backend than in
 *        round 0, and "fail IDX SPORT WHY" for one that broke. Round 0
 *        prints "conn" lines like once.
 * churn: open/request/close continuously with CONCURRENCY in flight, for
 *        SECONDS or until CONNS connections are done, or until SIGTERM /
 *        SIGINT / SIGUSR1 (in-flight exchanges finish, then the report).
 * icmp:  sends an ICMP fragmentation-needed (IPv4) / packet-too-big (IPv6)
 *        to VIP quoting the reply packet VIP:PORT -> us:SPORT, as a router
 *        between the backend and this client would.
 *
 * Every round (and once/churn at the end) ends with "backend NAME COUNT"
 * lines and one "summary round R total N ok N fail N moved N" line; failures
 * are also counted by cause ("failcause WHY COUNT"). Every wait has a
 * deadline (-T ms, default 3000): the tool never hangs. -b SRC binds every
 * connection to the source address SRC (allow-list tests). -P BYTES pads every
 * request (and so its echo) to BYTES, up to 8192: full-size packets. -H
 * speaks HTTP/1.1 instead of lines: "GET /req-I-round-R" on a kept-alive
 * connection, the body names the backend and echoes the path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/icmp6.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN 32
#define MAX_BE	 64
#define PAD_MAX	 8192 /* -P: largest request padding */
#define REQ_MAX	 (PAD_MAX + 64)

enum st {
	S_FREE,
	S_CONNECTING,
	S_WAIT,
	S_IDLE,
	S_DONE
};
enum why {
	W_CONNECT,
	W_TIMEOUT,
	W_RESET,
	W_BADREPLY,
	W_SOCKET,
	W_MAX
};
static const char *why_names[W_MAX] = { "connect", "timeout", "reset", "badreply", "socket" };

struct conn {
	int fd;
	enum st st;
	int idx;
	unsigned sport;
	long long deadline;
	int tries;    /* UDP resends */
	long long t0; /* start, ms: a failure says how long into its life */
	size_t len;
	char buf[REQ_MAX + NAME_LEN + 8];
	char req[REQ_MAX];
	char want[REQ_MAX];   /* what the echo must carry after "NAME " */
	char first[NAME_LEN]; /* backend of round 0 (hold) */
	char cur[NAME_LEN];
};

static struct sockaddr_storage dst;
static socklen_t dst_len;
static struct sockaddr_storage src; /* -b: the source address, else the kernel's choice */
static socklen_t src_len;
static int udp, timeout_ms = 3000, ep;
static long long total, ok, failed, moved, fails[W_MAX];
static char be_name[MAX_BE][NAME_LEN];
static long long be_count[MAX_BE];
static int nbe, verbose_conns = 1, pad, http;
static volatile sig_atomic_t stop_flag; /* SIGTERM/SIGINT/SIGUSR1: finish and report */

static void on_stop(int sig)
{
	stop_flag = 1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void count_backend(const char *name)
{
	int i;

	for (i = 0; i < nbe; i++)
		if (!strcmp(be_name[i], name))
			break;
	if (i == nbe) {
		if (nbe == MAX_BE)
			return;
		snprintf(be_name[nbe++], NAME_LEN, "%s", name);
	}
	be_count[i]++;
}

static void report(int round)
{
	for (int i = 0; i < nbe; i++)
		printf("backend %s %lld\n", be_name[i], be_count[i]);
	for (int w = 0; w < W_MAX; w++)
		if (fails[w])
			printf("failcause %s %lld\n", why_names[w], fails[w]);
	printf("summary round %d total %lld ok %lld fail %lld moved %lld\n", round, total, ok,
	       failed, moved);
	fflush(stdout);
	nbe = 0;
	memset(be_count, 0, sizeof(be_count));
	memset(fails, 0, sizeof(fails));
	total = ok = failed = moved = 0;
}

static void drop(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->st = S_FREE;
}

/*
 * Failures are rare, so each is printed even with -q, with what a packet
 * capture needs to find it: the wall-clock time, the source port, the
 * socket error, how long the connection lived and how often TCP retransmitted
 * (a SYN or a request lost on the way), and the TCP state it ended in.
 */
static void fail(struct conn *c, enum why w)
{
	struct tcp_info ti = { 0 };
	socklen_t tl = sizeof(ti);
	struct timespec ts;
	int err = errno, soerr = 0;
	socklen_t el = sizeof(soerr);

	failed++;
	fails[w]++;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (c->fd >= 0 && !udp) {
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &el);
		getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
	}
	printf("fail %d %u %s at %lld.%06ld stage %d age_ms %lld errno %d soerr %d tcp_state %u "
	       "retrans %u total_retrans %u rtt_us %u\n",
	       c->idx, c->sport, why_names[w], (long long)ts.tv_sec, ts.tv_nsec / 1000, c->st,
	       now_ms() - c->t0, err, soerr, ti.tcpi_state, ti.tcpi_retransmits,
	       ti.tcpi_total_retrans, ti.tcpi_rtt);
	fflush(stdout);
	drop(c);
}

static int watch(struct conn *c, unsigned events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		return 0;
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void send_req(struct conn *c, int round)
{
	int n = snprintf(c->want, sizeof(c->want), "req %d round %d ", c->idx, round);

	/* -P: pad the request (and so the echoed reply) to exercise big packets */
	for (; n < pad && n < (int)sizeof(c->want) - 2; n++)
		c->want[n] = 'x';
	c->want[n++] = '\n';
	c->want[n] = 0;
	if (http) {
		/* GET /req-I-round-R HTTP/1.1; the body echoes the path. */
		n = snprintf(c->want, sizeof(c->want), "/req-%d-round-%d\n", c->idx, round);
		n = snprintf(c->req, sizeof(c->req), "GET %.*s HTTP/1.1\r\nHost: chlb\r\n\r\n",
			     n - 1, c->want);
	} else {
		memcpy(c->req, c->want, n + 1);
	}

	c->len = 0;
	c->st = S_WAIT;
	c->tries = 0;
	c->deadline = now_ms() + timeout_ms;
	if (send(c->fd, c->req, n, MSG_NOSIGNAL) != n) {
		fail(c, W_RESET);
		return;
	}
	watch(c, EPOLLIN);
}

static void start(struct conn *c, int idx)
{
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);

	memset(c, 0, sizeof(*c));
	c->idx = idx;
	c->st = S_CONNECTING;
	c->t0 = now_ms();
	c->deadline = c->t0 + timeout_ms;
	total++;
	c->fd = socket(dst.ss_family, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		fail(c, W_SOCKET);
		return;
	}
	if (src_len && bind(c->fd, (struct sockaddr *)&src, src_len) < 0) {
		fail(c, W_SOCKET);
		return;
	}
	if (connect(c->fd, (struct sockaddr *)&dst, dst_len) < 0 && errno != EINPROGRESS) {
		fail(c, W_CONNECT);
		return;
	}
	getsockname(c->fd, (struct sockaddr *)&me, &ml);
	c->sport = ntohs(((struct sockaddr_in *)&me)->sin_port); /* same offset in sin6 */
	if (udp) {
		send_req(c, 0);
		return;
	}
	watch(c, EPOLLOUT);
}

/* A reply line arrived (or not yet); returns 1 when the exchange is over. */
static int on_event(struct conn *c, int round)
{
	ssize_t r;
	char *nl, *sp, *body;

	if (c->st == S_CONNECTING) {
		int err = 0;
		socklen_t l = sizeof(err);

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
		if (err) {
			errno = err; /* reading SO_ERROR cleared it */
			fail(c, W_CONNECT);
			return 1;
		}
		send_req(c, round);
		return c->st == S_FREE;
	}
	r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
	if (r < 0 && errno == EAGAIN)
		return 0;
	if (r <= 0) {
		if (!r)
			errno = 0; /* an orderly close before the reply */
		fail(c, W_RESET);
		return 1;
	}
	c->len += r;
	c->buf[c->len] = 0;
	body = c->buf;
	if (http) {
		/* Wait for the headers and Content-Length bytes of body. */
		char *eoh = strstr(c->buf, "\r\n\r\n"), *cl = strstr(c->buf, "Content-Length:");

		if (!eoh || !cl)
			return 0;
		body = eoh + 4;
		if (c->len - (body - c->buf) < strtoul(cl + 15, NULL, 10))
			return 0;
		if (strncmp(c->buf, "HTTP/1.1 200 ", 13)) {
			fail(c, W_BADREPLY);
			return 1;
		}
	}
	nl = strchr(body, '\n');
	if (!nl && !udp)
		return 0;
	sp = strchr(body, ' ');
	if (!sp || sp - body >= NAME_LEN || strcmp(sp + 1, c->want)) {
		fail(c, W_BADREPLY);
		return 1;
	}
	*sp = 0;
	snprintf(c->cur, NAME_LEN, "%.31s", body);
	c->st = S_IDLE;
	ok++;
	count_backend(c->cur);
	return 1;
}

static void expire(struct conn *cs, int n, int round)
{
	long long t = now_ms();

	for (int i = 0; i < n; i++) {
		struct conn *c = &cs[i];

		if (c->st != S_CONNECTING && c->st != S_WAIT)
			continue;
		/* UDP may lose a datagram (a neighbour still resolving): resend twice. */
		if (udp && c->tries < 2 &&
		    t > c->deadline - timeout_ms + (c->tries + 1) * timeout_ms / 3) {
			c->tries++;
			send(c->fd, c->req, strlen(c->req), MSG_NOSIGNAL);
		}
		if (t > c->deadline)
			fail(c, c->st == S_CONNECTING ? W_CONNECT : W_TIMEOUT);
	}
}

/* once / churn: keep @k exchanges in flight until @n done or @until_ms. */
static void run_flow(int n, int k, long long until_ms)
{
	struct conn *cs = calloc(k, sizeof(*cs));
	struct epoll_event evs[256];
	int started = 0, inflight = 0;

	for (int i = 0; i < k; i++)
		cs[i].fd = -1;
	for (;;) {
		for (int i = 0; i < k; i++) {
			if (cs[i].st != S_FREE)
				continue;
			if ((n && started >= n) || (until_ms && now_ms() >= until_ms) || stop_flag)
				break;
			start(&cs[i], started++);
			inflight++;
			if (cs[i].st == S_FREE)
				inflight--;
		}
		if (!inflight)
			break;
		int m = epoll_wait(ep, evs, 256, 20);

		for (int i = 0; i < m; i++) {
			struct conn *c = evs[i].data.ptr;

			if (c->st == S_FREE || !on_event(c, 0))
				continue;
			if (c->st == S_IDLE && verbose_conns)
				printf("conn %d %u %s\n", c->idx, c->sport, c->cur);
			drop(c);
			inflight--;
		}
		expire(cs, k, 0);
		inflight = 0;
		for (int i = 0; i < k; i++)
			inflight += cs[i].st != S_FREE;
	}
	free(cs);
	report(0);
}

/* hold: wait for every conn not yet idle/free to finish its exchange. */
static void settle(struct conn *cs, int n, int round)
{
	struct epoll_event evs[256];
	int busy;

	do {
		int m = epoll_wait(ep, evs, 256, 20);

		for (int i = 0; i < m; i++) {
			struct conn *c = evs[i].data.ptr;

			if (c->st == S_FREE || c->st == S_IDLE)
				continue;
			on_event(c, round);
		}
		expire(cs, n, round);
		busy = 0;
		for (int i = 0; i < n; i++)
			busy += cs[i].st == S_CONNECTING || cs[i].st == S_WAIT;
	} while (busy);
}

static void run_hold(int n)
{
	struct conn *cs = calloc(n, sizeof(*cs));
	char line[64];
	int round = 0;

	for (int i = 0; i < n; i++) {
		start(&cs[i], i);
		/* Spread the SYNs a little: no listen-queue overflow at the backend. */
		if (i % 64 == 63)
			usleep(2000);
	}
	settle(cs, n, 0);
	for (int i = 0; i < n; i++) {
		if (cs[i].st != S_IDLE)
			continue;
		snprintf(cs[i].first, NAME_LEN, "%s", cs[i].cur);
		printf("conn %d %u %s\n", cs[i].idx, cs[i].sport, cs[i].cur);
	}
	report(0);
	while (fgets(line, sizeof(line), stdin)) {
		round++;
		for (int i = 0; i < n; i++) {
			if (cs[i].st != S_IDLE)
				continue;
			total++;
			send_req(&cs[i], round);
		}
		settle(cs, n, round);
		for (int i = 0; i < n; i++) {
			if (cs[i].st != S_IDLE || !strcmp(cs[i].first, cs[i].cur))
				continue;
			moved++;
			printf("moved %d %u %s %s\n", cs[i].idx, cs[i].sport, cs[i].first,
			       cs[i].cur);
		}
		report(round);
	}
	for (int i = 0; i < n; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(cs);
}

static uint16_t csum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (b[i] << 8) | b[i + 1];
	if (n & 1)
		s += b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons(~s);
}

/* Our address toward @dst, as the kernel picks it. */
static int local_addr(struct sockaddr_storage *me)
{
	socklen_t l = sizeof(*me);
	int fd = socket(dst.ss_family, SOCK_DGRAM, 0);
	int err = fd < 0 || connect(fd, (struct sockaddr *)&dst, dst_len) < 0 ||
		  getsockname(fd, (struct sockaddr *)me, &l) < 0;

	if (fd >= 0)
		close(fd);
	return err ? -1 : 0;
}

static int send_icmp(unsigned sport, unsigned dport)
{
	struct sockaddr_storage me;
	uint8_t pkt[128] = { 0 };
	size_t n;
	int fd;

	if (local_addr(&me) < 0)
		return -1;
	if (dst.ss_family == AF_INET) {
		struct icmphdr *ic = (void *)pkt;
		struct iphdr *in = (void *)(ic + 1);
		uint16_t *ports = (void *)(in + 1);

		ic->type = ICMP_DEST_UNREACH;
		ic->code = ICMP_FRAG_NEEDED;
		ic->un.frag.mtu = htons(1200);
		in->version = 4;
		in->ihl = 5;
		in->ttl = 64;
		in->protocol = IPPROTO_TCP;
		in->tot_len = htons(1500);
		in->saddr = ((struct sockaddr_in *)&dst)->sin_addr.s_addr; /* the VIP */
		in->daddr = ((struct sockaddr_in *)&me)->sin_addr.s_addr;  /* us */
		in->check = csum(in, sizeof(*in));
		ports[0] = htons(dport);
		ports[1] = htons(sport);
		n = sizeof(*ic) + sizeof(*in) + 8;
		ic->checksum = csum(pkt, n);
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	} else {
		struct icmp6_hdr *ic = (void *)pkt;
		struct ip6_hdr *in = (void *)(ic + 1);
		uint16_t *ports = (void *)(in + 1);

		ic->icmp6_type = ICMP6_PACKET_TOO_BIG;
		ic->icmp6_mtu = htonl(1280);
		in->ip6_flow = htonl(6 << 28);
		in->ip6_nxt = IPPROTO_TCP;
		in->ip6_hlim = 64;
		in->ip6_plen = htons(1440);
		in->ip6_src = ((struct sockaddr_in6 *)&dst)->sin6_addr;
		in->ip6_dst = ((struct sockaddr_in6 *)&me)->sin6_addr;
		ports[0] = htons(dport);
		ports[1] = htons(sport);
		n = sizeof(*ic) + sizeof(*in) + 8;
		fd = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6); /* kernel sums it */
	}
	/* Raw IPv6 sockets take the port field as the protocol: zero it. */
	((struct sockaddr_in *)&dst)->sin_port = 0;
	if (fd < 0 || sendto(fd, pkt, n, 0, (struct sockaddr *)&dst, dst_len) != (ssize_t)n) {
		perror("chlb-client: icmp");
		return -1;
	}
	close(fd);
	printf("icmp sent quoting %u -> %u\n", dport, sport);
	return 0;
}

static int parse_addr(const char *a, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (void *)ss;
	struct sockaddr_in6 *s6 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, a, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return 0;
	}
	return -1;
}

static int parse_dst(const char *a, int port)
{
	return parse_addr(a, port, &dst, &dst_len);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: chlb-client once|hold|churn|icmp -t ADDR [-p PORT] [-n CONNS] "
		"[-k CONCURRENCY] [-d SECONDS] [-s SPORT] [-T TIMEOUT_MS] [-P BYTES] [-H | -u] "
		"[-q] [-b SRC]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int port = 80, n = 0, k = 32, secs = 0, sport = 0, opt;
	const char *target = NULL, *mode;
	struct rlimit rl = { 65536, 65536 };

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "t:p:n:k:d:s:T:P:Huqb:")) != -1) {
		switch (opt) {
		case 'b':
			if (parse_addr(optarg, 0, &src, &src_len) < 0)
				usage();
			break;
		case 't':
			target = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'k':
			k = atoi(optarg);
			break;
		case 'd':
			secs = atoi(optarg);
			break;
		case 's':
			sport = atoi(optarg);
			break;
		case 'T':
			timeout_ms = atoi(optarg);
			break;
		case 'u':
			udp = 1;
			break;
		case 'q':
			verbose_conns = 0;
			break;
		case 'P':
			pad = atoi(optarg);
			break;
		case 'H':
			http = 1;
			break;
		default:
			usage();
		}
	}
	if (!target || parse_dst(target, port) < 0 || k < 1 || timeout_ms < 100 || pad < 0 ||
	    pad > PAD_MAX || (http && udp))
		usage();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	signal(SIGUSR1, on_stop);
	setvbuf(stdout, NULL, _IOLBF, 0);
	setrlimit(RLIMIT_NOFILE, &rl);
	ep = epoll_create1(0);
	if (!strcmp(mode, "icmp"))
		return sport > 0 && send_icmp(sport, port) == 0 ? 0 : 1;
	if (!strcmp(mode, "once"))
		run_flow(n ? n : 100, k, 0);
	else if (!strcmp(mode, "churn") && (n || secs))
		run_flow(n, k, secs ? now_ms() + secs * 1000LL : 0);
	else if (!strcmp(mode, "hold"))
		run_hold(n ? n : 100);
	else
		usage();
	return 0;
}
