// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb-probe: feeds packets through the program chlbd ATTACHED (found through
 * its pinned XDP link), with bpf_prog_test_run, for the daemon tests.
 *
 *   chlb-probe which PIN_DIR IFINDEX VIP PORT N SEED
 *       N random TCP SYNs to VIP:PORT; prints "SRC:SPORT DST:DPORT BACKEND" per flow
 *       (BACKEND = outer IPv4 destination of the IPIP packet, or "verdict=V").
 *   chlb-probe connect PIN_DIR IFINDEX VIP PORT N SEED [fin]
 *       the same flows as `which`, each a SYN then the handshake ACK (which
 *       writes the flow's connection entry), and with `fin` a FIN after it
 *       (which marks the entry ended); prints what the ACK was sent to.
 *   chlb-probe ack PIN_DIR IFINDEX VIP PORT N SEED
 *       the same flows as `which`, each a lone ACK with no SYN before it: an
 *       established flow this LB has no entry for (decided by the view's
 *       oldest table; given an entry when the view's tables disagree).
 *   chlb-probe torture PIN_DIR IFINDEX STOPFILE VIP:PORT=LO-HI...
 *       until STOPFILE exists: random flows (SYN and non-SYN) to every VIP; each
 *       packet must be forwarded (never passed or dropped) to a backend of that
 *       VIP's pool (last octet LO..HI) that was LIVE just before or just after
 *       it (never to one removed before it was sent). Prints a summary; exit 1
 *       on any violation.
 *
 * Run it in the daemon's network namespace with `nsenter --net=...` (not ip
 * netns exec: that hides the host's /sys/fs/bpf).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include "chlb_maps.h"

#define PKT_LEN 74 /* eth 14 + ip 20 + tcp 20 + 20 payload */

static __u64 rng = 88172645463325252ull;

static __u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (__u32)(rng >> 11);
}

static __u16 csum(const void *p, int len)
{
	const __u8 *b = p;
	__u32 s = 0;

	for (int i = 0; i + 1 < len; i += 2)
		s += (__u32)(b[i] << 8 | b[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((__u16)~s);
}

#define TCP_SYN 0x02
#define TCP_ACK 0x10
#define TCP_FIN 0x01

static void make_tcp(__u8 *p, __u32 src, __u16 sport, __u32 dst, __u16 dport, __u8 flags)
{
	memset(p, 0, PKT_LEN);
	memcpy(p, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00", 14);
	__u8 *ip = p + 14, *tcp = ip + 20;

	ip[0] = 0x45;
	ip[2] = 0;
	ip[3] = PKT_LEN - 14;
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	*(__u16 *)(ip + 10) = csum(ip, 20);
	*(__u16 *)tcp = htons(sport);
	*(__u16 *)(tcp + 2) = htons(dport);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
}

static void make_pkt(__u8 *p, __u32 src, __u16 sport, __u32 dst, __u16 dport, bool syn)
{
	make_tcp(p, src, sport, dst, dport, syn ? TCP_SYN : TCP_ACK);
}

static int attached_prog(const char *pin_dir, int ifindex)
{
	struct bpf_link_info info = { 0 };
	__u32 len = sizeof(info);
	char path[512];
	int lfd, pfd;

	snprintf(path, sizeof(path), "%s/link_%d", pin_dir, ifindex);
	lfd = bpf_obj_get(path);
	if (lfd < 0 || bpf_obj_get_info_by_fd(lfd, &info, &len)) {
		fprintf(stderr, "chlb-probe: no pinned link '%s': %s\n", path, strerror(errno));
		return -1;
	}
	close(lfd);
	pfd = bpf_prog_get_fd_by_id(info.prog_id);
	if (pfd < 0)
		fprintf(stderr, "chlb-probe: prog %u: %s\n", info.prog_id, strerror(errno));
	return pfd;
}

/* Runs one packet: 0 and the outer IPv4 destination, or the verdict when not forwarded. */
static int run(int pfd, const __u8 *pkt, __u32 *backend, __u32 *verdict)
{
	__u8 out[512];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = PKT_LEN, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);

	if (bpf_prog_test_run_opts(pfd, &o))
		return -errno;
	*verdict = o.retval;
	if ((o.retval != XDP_TX && o.retval != XDP_REDIRECT) || o.data_size_out < 34 + 20 ||
	    out[14 + 9] != IPPROTO_IPIP)
		return 1;
	memcpy(backend, out + 14 + 16, 4);
	return 0;
}

/*
 * which: one SYN per flow; connect: SYN, then ACK (and FIN when fin); ack:
 * a lone ACK (an entry-less established flow: decided by the view's oldest table)
 */
static int do_which(int pfd, const char *vip, int port, int n, bool connect, bool fin, bool ack)
{
	__u32 dst, be, v;
	__u8 pkt[PKT_LEN];
	char a[32], b[32];

	inet_pton(AF_INET, vip, &dst);
	for (int i = 0; i < n; i++) {
		__u32 src = htonl(0xc0000000u | (rnd() & 0xffffff));
		__u16 sport = (__u16)(1024 + rnd() % 60000);
		int r;

		make_pkt(pkt, src, sport, dst, (__u16)port, !ack);
		r = run(pfd, pkt, &be, &v);
		if (r >= 0 && connect) {
			make_tcp(pkt, src, sport, dst, (__u16)port, TCP_ACK);
			r = run(pfd, pkt, &be, &v);
		}
		if (r >= 0 && fin) {
			__u32 be2;

			make_tcp(pkt, src, sport, dst, (__u16)port, TCP_FIN | TCP_ACK);
			r = run(pfd, pkt, &be2, &v) < 0 ? -1 : r;
		}
		if (r < 0)
			return 1;
		inet_ntop(AF_INET, &src, a, sizeof(a));
		if (r == 0)
			printf("%s:%u %s:%d %s\n", a, sport, vip, port,
			       inet_ntop(AF_INET, &be, b, sizeof(b)));
		else
			printf("%s:%u %s:%d verdict=%u\n", a, sport, vip, port, v);
	}
	return 0;
}

/* LIVE IPv4 backends, as a sorted set of addresses. */
static int live_set(int bfd, __u32 *set)
{
	int n = 0;

	for (__u32 i = 0; i < CHLB_MAX_BACKENDS; i++) {
		struct chlb_backend b;

		if (bpf_map_lookup_elem(bfd, &i, &b))
			break;
		if (b.state == CHLB_BE_LIVE && b.family == CHLB_AF_INET)
			memcpy(&set[n++], b.addr, 4);
		if (!b.family && !b.gen && i > 64)
			break; /* slots are handed out from 0: past the used ones */
	}
	return n;
}

static bool in_set(const __u32 *set, int n, __u32 a)
{
	for (int i = 0; i < n; i++)
		if (set[i] == a)
			return true;
	return false;
}

static int do_torture(int pfd, const char *pin_dir, const char *stop, int nvip, char **vips)
{
	static __u32 before[CHLB_MAX_BACKENDS], after[CHLB_MAX_BACKENDS];
	unsigned long pkts = 0, bad = 0, notfwd = 0;
	__u32 dst[16], be, v;
	int port[16], lo[16], hi[16], nb, na, bfd;
	__u8 pkt[PKT_LEN];
	char path[512], a[32];

	snprintf(path, sizeof(path), "%s/backends", pin_dir);
	bfd = bpf_obj_get(path);
	if (bfd < 0) {
		fprintf(stderr, "chlb-probe: '%s': %s\n", path, strerror(errno));
		return 2;
	}
	for (int i = 0; i < nvip && i < 16; i++) {
		char *c = strchr(vips[i], ':'), *eq = strchr(vips[i], '=');

		if (!c || !eq || sscanf(eq + 1, "%d-%d", &lo[i], &hi[i]) != 2) {
			fprintf(stderr, "chlb-probe: '%s': expected VIP:PORT=LO-HI\n", vips[i]);
			return 2;
		}
		*c = '\0';
		inet_pton(AF_INET, vips[i], &dst[i]);
		port[i] = atoi(c + 1);
	}
	nb = live_set(bfd, before);
	while (access(stop, F_OK)) {
		__u32 got[64];
		int ng = 0, gv[64];

		for (int k = 0; k < 64; k++, pkts++) {
			int i = (int)(rnd() % (__u32)nvip), r;

			make_pkt(pkt, htonl(0xc0000000u | (rnd() & 0xffffff)),
				 (__u16)(1024 + rnd() % 60000), dst[i], (__u16)port[i], rnd() & 1);
			r = run(pfd, pkt, &be, &v);
			if (r) {
				if (notfwd++ < 10)
					fprintf(stderr,
						"packet %lu not forwarded: verdict %u (%d)\n", pkts,
						v, r);
				continue;
			}
			gv[ng] = i;
			got[ng++] = be;
		}
		na = live_set(bfd, after);
		for (int k = 0; k < ng; k++) {
			int octet = (int)(ntohl(got[k]) & 0xff);

			if (octet >= lo[gv[k]] && octet <= hi[gv[k]] &&
			    (in_set(before, nb, got[k]) || in_set(after, na, got[k])))
				continue;
			if (bad++ < 10)
				fprintf(stderr,
					"packet to %s, a backend not LIVE before or after\n",
					inet_ntop(AF_INET, &got[k], a, sizeof(a)));
		}
		memcpy(before, after, (size_t)na * sizeof(*after));
		nb = na;
	}
	printf("packets %lu not_forwarded %lu bad_backend %lu\n", pkts, notfwd, bad);
	return notfwd || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	int pfd;

	/* which, ack and connect: the same flows, as SYNs, lone ACKs or handshakes */
	if (argc >= 8 &&
	    (!strcmp(argv[1], "which") || !strcmp(argv[1], "ack") || !strcmp(argv[1], "connect"))) {
		bool connect = !strcmp(argv[1], "connect");

		rng ^= strtoull(argv[7], NULL, 0) * 0x9e3779b97f4a7c15ull;
		pfd = attached_prog(argv[2], atoi(argv[3]));
		return pfd < 0 ? 2
			       : do_which(pfd, argv[4], atoi(argv[5]), atoi(argv[6]), connect,
					  connect && argc >= 9 && !strcmp(argv[8], "fin"),
					  !strcmp(argv[1], "ack"));
	}
	if (argc >= 6 && !strcmp(argv[1], "torture")) {
		pfd = attached_prog(argv[2], atoi(argv[3]));
		return pfd < 0 ? 2 : do_torture(pfd, argv[2], argv[4], argc - 5, argv + 5);
	}
	fprintf(stderr, "usage: chlb-probe which PIN_DIR IFINDEX VIP PORT N SEED\n"
			"       chlb-probe connect PIN_DIR IFINDEX VIP PORT N SEED [fin]\n"
			"       chlb-probe ack PIN_DIR IFINDEX VIP PORT N SEED\n"
			"       chlb-probe torture PIN_DIR IFINDEX STOPFILE VIP:PORT=LO-HI...\n");
	return 2;
}
