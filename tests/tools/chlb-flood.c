// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-flood: spoofed TCP packets toward a VIP, for the e2e tests of
 * stickiness under attack (tests/e2e/test_guarantee.sh). Run it in the client
 * namespace; it sends through a raw IPv4 socket (IPPROTO_RAW, so we write the
 * IP header and any source address goes), routed like any other packet.
 *
 *   chlb-flood -t VIP [-p PORT] [--pps N] [--seed N] MODE
 *   MODE:
 *     --syn-fresh N --src-prefix A.B.C.D/LEN
 *         N SYNs, each from a different source address of the prefix (a
 *         random permutation of its addresses) and a random source port: a
 *         random-source SYN flood, every packet a new flow.
 *     --ack-fresh N --src-prefix A.B.C.D/LEN
 *         the same with bare ACKs (random sequence numbers): packets of
 *         flows the load balancer never saw a SYN of.
 *     --syn-ports ADDR LO HI
 *         one SYN from ADDR for each source port LO..HI: an off-path sender
 *         that knows a client's address tries every connection it may hold.
 *
 * Both checksums are computed here: the kernel never fills in the TCP
 * checksum of a raw packet, and a veth with TX offload off (the test client)
 * sends the bytes as they are. (It does redo the IPv4 header checksum; ours
 * is the same.) --pps paces the packets (default: as fast as the socket
 * takes them). A send the device refuses for lack of room (ENOBUFS) is
 * retried after a short pause, so "sent" counts packets handed to the
 * device; a veth without a qdisc may still drop them silently (the suite
 * gives the sender's veth one, and checks its drop counter).
 * Prints "sent N" (and "refused N" when the kernel dropped some for good);
 * exit 0 if all were sent, 1 on a send error, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PKT_LEN 40 /* IPv4 20 + TCP 20: no options, no payload */

static uint64_t rng_state;

/* xorshift64*: fast, and good enough to look like independent senders */
static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* One's-complement sum of @n bytes added to @s (not folded, not inverted). */
static uint32_t sum16(uint32_t s, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

/*
 * Build a 40-byte IPv4/TCP packet in @p (addresses and ports in network
 * order): a SYN, or a bare ACK with random sequence numbers.
 */
static void build(uint8_t *p, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, int syn)
{
	struct iphdr *ip = (struct iphdr *)p;
	struct tcphdr *tcp = (struct tcphdr *)(p + sizeof(*ip));
	struct {
		uint32_t src, dst;
		uint8_t zero, proto;
		uint16_t len;
	} pseudo = { src, dst, 0, IPPROTO_TCP, htons(sizeof(*tcp)) };

	memset(p, 0, PKT_LEN);
	ip->version = 4;
	ip->ihl = sizeof(*ip) / 4;
	ip->tot_len = htons(PKT_LEN);
	ip->id = (uint16_t)rnd();
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_TCP;
	ip->saddr = src;
	ip->daddr = dst;
	ip->check = fold(sum16(0, ip, sizeof(*ip)));
	tcp->source = sport;
	tcp->dest = dport;
	tcp->seq = htonl(rnd());
	tcp->doff = sizeof(*tcp) / 4;
	if (syn) {
		tcp->syn = 1;
	} else {
		tcp->ack = 1;
		tcp->ack_seq = htonl(rnd());
	}
	tcp->window = htons(64240);
	tcp->check = fold(sum16(sum16(0, &pseudo, sizeof(pseudo)), tcp, sizeof(*tcp)));
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(long long t)
{
	struct timespec ts = { .tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static long long sent, refused;

/* Send one packet; retry a full device queue for up to 1 s. 0 or -1 (errno). */
static int send_pkt(int fd, const uint8_t *p, const struct sockaddr_in *to)
{
	for (int tries = 0;; tries++) {
		if (sendto(fd, p, PKT_LEN, 0, (const struct sockaddr *)to, sizeof(*to)) ==
		    PKT_LEN) {
			sent++;
			return 0;
		}
		if (errno != ENOBUFS && errno != EAGAIN)
			return -1;
		if (tries == 10000) {
			refused++;
			return 0;
		}
		usleep(100);
	}
}

static void usage(const char *why)
{
	if (why)
		fprintf(stderr, "chlb-flood: %s\n", why);
	fprintf(stderr, "usage: chlb-flood -t VIP [-p PORT] [--pps N] [--seed N] MODE\n"
			"  MODE: --syn-fresh N --src-prefix A.B.C.D/LEN\n"
			"      | --ack-fresh N --src-prefix A.B.C.D/LEN\n"
			"      | --syn-ports ADDR LO HI\n"
			"  (IPv4 only; run as root in the sender's network namespace)\n");
	exit(2);
}

/* A decimal in [lo, hi], or a usage error naming @what. */
static long long num(const char *s, long long lo, long long hi, const char *what)
{
	char *end, msg[160];
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		snprintf(msg, sizeof(msg), "%s: '%s' is not a number in %lld..%lld", what, s, lo,
			 hi);
		usage(msg);
	}
	return v;
}

static uint32_t addr4(const char *s, const char *what)
{
	struct in_addr a;
	char msg[160];

	if (inet_pton(AF_INET, s, &a) != 1) {
		snprintf(msg, sizeof(msg), "%s: '%s' is not an IPv4 address", what, s);
		usage(msg);
	}
	return a.s_addr;
}

/* "A.B.C.D/LEN" -> first address (host order) and the number of addresses. */
static void prefix4(const char *s, uint32_t *base, uint64_t *size)
{
	char buf[64], *slash;
	int len;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (!slash)
		usage("--src-prefix: expected A.B.C.D/LEN");
	*slash = 0;
	len = (int)num(slash + 1, 1, 32, "--src-prefix length");
	*size = 1ull << (32 - len);
	*base = ntohl(addr4(buf, "--src-prefix")) & (uint32_t) ~(*size - 1);
}

enum mode {
	M_NONE,
	M_SYN_FRESH,
	M_ACK_FRESH,
	M_SYN_PORTS
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "syn-fresh", required_argument, NULL, 'S' },
		{ "ack-fresh", required_argument, NULL, 'A' },
		{ "syn-ports", required_argument, NULL, 'P' },
		{ "src-prefix", required_argument, NULL, 'x' },
		{ "pps", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	enum mode mode = M_NONE;
	const char *target = NULL, *prefix = NULL;
	long long n = 0, pps = 0, lo = 0, hi = 0, t0;
	uint32_t dst, spoof = 0, base = 0, start, stride;
	uint64_t size = 0;
	uint16_t dport = htons(80);
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint8_t pkt[PKT_LEN];
	int opt, fd;

	rng_state = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	while ((opt = getopt_long(argc, argv, "+t:p:", opts, NULL)) != -1) {
		if (strchr("SAP", opt) && mode != M_NONE)
			usage("give exactly one of --syn-fresh, --ack-fresh, --syn-ports");
		switch (opt) {
		case 't':
			target = optarg;
			break;
		case 'p':
			dport = htons((uint16_t)num(optarg, 1, 65535, "-p"));
			break;
		case 'S':
			mode = M_SYN_FRESH;
			n = num(optarg, 1, 1LL << 32, "--syn-fresh");
			break;
		case 'A':
			mode = M_ACK_FRESH;
			n = num(optarg, 1, 1LL << 32, "--ack-fresh");
			break;
		case 'P':
			/* ADDR LO HI: the argument and the next two words (the "+"
			 * in the option string keeps getopt from reordering them) */
			if (optind + 1 >= argc)
				usage("--syn-ports needs ADDR LO HI");
			mode = M_SYN_PORTS;
			spoof = addr4(optarg, "--syn-ports ADDR");
			lo = num(argv[optind], 1, 65535, "--syn-ports LO");
			hi = num(argv[optind + 1], 1, 65535, "--syn-ports HI");
			optind += 2;
			if (lo > hi)
				usage("--syn-ports: LO must not exceed HI");
			n = hi - lo + 1;
			break;
		case 'x':
			prefix = optarg;
			break;
		case 'r':
			pps = num(optarg, 1, 100000000, "--pps");
			break;
		case 's':
			rng_state = (uint64_t)num(optarg, 0, 1LL << 62, "--seed") + 1;
			break;
		default:
			usage(NULL);
		}
	}
	if (optind < argc) {
		char msg[128];

		snprintf(msg, sizeof(msg), "unexpected argument '%.64s'", argv[optind]);
		usage(msg);
	}
	if (!target)
		usage("-t VIP is required");
	if (mode == M_NONE)
		usage("give one of --syn-fresh, --ack-fresh, --syn-ports");
	dst = addr4(target, "-t");
	if (mode == M_SYN_PORTS && prefix)
		usage("--src-prefix goes with --syn-fresh / --ack-fresh, not --syn-ports");
	if (mode != M_SYN_PORTS) {
		if (!prefix)
			usage("--syn-fresh and --ack-fresh need --src-prefix A.B.C.D/LEN");
		prefix4(prefix, &base, &size);
		if ((uint64_t)n > size) {
			fprintf(stderr, "chlb-flood: %s has %llu addresses, fewer than %lld\n",
				prefix, (unsigned long long)size, n);
			exit(2);
		}
	}

	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("chlb-flood: raw socket (needs root)");
		return 1;
	}
	to.sin_addr.s_addr = dst;
	/*
	 * Fresh sources: address i is base + (start + i * stride) mod size; an
	 * odd stride makes that a permutation of the prefix, so no two packets
	 * share a source address.
	 */
	start = rnd();
	stride = rnd() | 1;
	t0 = now_ns();
	for (long long i = 0; i < n; i++) {
		uint32_t src;
		uint16_t sport;

		if (mode == M_SYN_PORTS) {
			src = spoof;
			sport = htons((uint16_t)(lo + i));
		} else {
			uint32_t host = (uint32_t)((start + (uint64_t)i * stride) & (size - 1));

			src = htonl(base + host);
			sport = htons((uint16_t)(1024 + rnd() % 64512));
		}
		build(pkt, src, sport, dst, dport, mode != M_ACK_FRESH);
		if (pps)
			sleep_until(t0 + i * 1000000000LL / pps);
		if (send_pkt(fd, pkt, &to) < 0) {
			fprintf(stderr, "chlb-flood: sendto: %s (after %lld packets)\n",
				strerror(errno), sent);
			printf("sent %lld\n", sent);
			return 1;
		}
	}
	printf("sent %lld\n", sent);
	if (refused)
		printf("refused %lld\n", refused);
	close(fd);
	return refused ? 1 : 0;
}
