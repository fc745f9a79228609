// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Addresses and VIPs (see addr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "base/addr.h"

int chlb_parse_addr(const char *s, struct chlb_addr *a)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t len = strlen(s);

	memset(a, 0, sizeof(*a));
	if (len >= sizeof(buf))
		return -EINVAL;
	if (len > 2 && s[0] == '[' && s[len - 1] == ']') {
		memcpy(buf, s + 1, len - 2);
		buf[len - 2] = '\0';
		if (inet_pton(AF_INET6, buf, a->a) != 1)
			return -EINVAL;
		a->family = CHLB_AF_INET6;
		return 0;
	}
	if (inet_pton(AF_INET, s, a->a) == 1) {
		a->family = CHLB_AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->a) == 1) {
		a->family = CHLB_AF_INET6;
		return 0;
	}
	return -EINVAL;
}

const char *chlb_proto_name(__u8 proto)
{
	return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : "?";
}

const char *chlb_fmt_addr(const struct chlb_addr *a, char *buf, size_t len)
{
	if (!inet_ntop(a->family == CHLB_AF_INET6 ? AF_INET6 : AF_INET, a->a, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

const char *chlb_fmt_vip(const struct chlb_vip *v, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	char port[8] = "*"; /* port 0: every port of the address, written as the grammar takes it */

	chlb_fmt_addr(&v->addr, a, sizeof(a));
	if (v->port)
		snprintf(port, sizeof(port), "%u", v->port);
	if (v->addr.family == CHLB_AF_INET6)
		snprintf(buf, len, "[%s]:%s/%s", a, port, chlb_proto_name(v->proto));
	else
		snprintf(buf, len, "%s:%s/%s", a, port, chlb_proto_name(v->proto));
	return buf;
}

int chlb_parse_prefix(const char *s, struct chlb_prefix *p, const char **why)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *slash = strchr(s, '/');
	size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned int max, plen;
	char *end;

	memset(p, 0, sizeof(*p));
	*why = "not an address";
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (chlb_parse_addr(host, &p->addr))
		return -EINVAL;
	max = p->addr.family == CHLB_AF_INET ? 32 : 128;
	plen = max;
	if (slash) {
		*why = p->addr.family == CHLB_AF_INET ? "bad length (0-32)" : "bad length (0-128)";
		if (slash[1] < '0' || slash[1] > '9' || strlen(slash + 1) > 3)
			return -EINVAL;
		plen = (unsigned int)strtoul(slash + 1, &end, 10);
		if (*end || plen > max)
			return -EINVAL;
	}
	p->plen = (__u8)plen;
	for (unsigned int b = plen; b < max; b++)
		if (p->addr.a[b / 8] & (0x80 >> (b % 8))) {
			*why = "bits set past the length";
			return -EINVAL;
		}
	return 0;
}

const char *chlb_fmt_prefix(const struct chlb_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s/%u", chlb_fmt_addr(&p->addr, a, sizeof(a)), p->plen);
	return buf;
}

bool chlb_prefix_contains(const struct chlb_prefix *a, const struct chlb_prefix *b)
{
	if (a->addr.family != b->addr.family || a->plen > b->plen)
		return false;
	for (unsigned int i = 0; i < a->plen; i++) {
		__u8 m = 0x80 >> (i % 8);

		if ((a->addr.a[i / 8] & m) != (b->addr.a[i / 8] & m))
			return false;
	}
	return true;
}

int chlb_addr_cmp(const struct chlb_addr *a, const struct chlb_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->a, b->a, 16);
}

int chlb_vip_cmp(const struct chlb_vip *a, const struct chlb_vip *b)
{
	int r = chlb_addr_cmp(&a->addr, &b->addr);

	if (r)
		return r;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	return 0;
}

void chlb_vip_to_key(const struct chlb_vip *v, struct chlb_vip_key *k)
{
	memset(k, 0, sizeof(*k));
	if (v->addr.family == CHLB_AF_INET6) {
		memcpy(k->addr, v->addr.a, 16);
	} else {
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		memcpy(k->addr + 12, v->addr.a, 4);
	}
	k->port = htons(v->port);
	k->proto = v->proto;
}

void chlb_flow_dst_vip(const struct chlb_flow *f, struct chlb_vip *v)
{
	memset(v, 0, sizeof(*v));
	v->addr.family = f->family;
	/* IPv4 flows keep the address in the first 4 bytes, the rest zero, as chlb_addr */
	memcpy(v->addr.a, f->dst, f->family == CHLB_AF_INET6 ? 16 : 4);
	v->port = ntohs(f->dport);
	v->proto = f->proto;
}

int chlb_parse_sockaddr(const char *arg, struct sockaddr_storage *ss, unsigned int *len, char *name,
			size_t nlen, const char **why)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	const char *host, *colon;
	char buf[INET6_ADDRSTRLEN + 1];
	size_t hlen;
	bool v6 = arg[0] == '[';
	unsigned long p = 0;

	if (v6) {
		const char *end = strchr(arg, ']');

		if (!end) {
			*why = "no ']' after the IPv6 address ([ADDR]:PORT)";
			return -EINVAL;
		}
		host = arg + 1;
		hlen = (size_t)(end - host);
		colon = end[1] == ':' ? end + 1 : NULL;
		if (!colon && end[1]) {
			*why = "expected ':PORT' after ']'";
			return -EINVAL;
		}
	} else {
		host = arg;
		colon = strrchr(arg, ':');
		hlen = colon ? (size_t)(colon - arg) : strlen(arg);
		if (colon && memchr(arg, ':', hlen)) {
			*why = "an IPv6 address goes in brackets: [ADDR]:PORT";
			return -EINVAL;
		}
	}
	if (!colon || !colon[1]) {
		*why = "no port (ADDR:PORT, or [ADDR]:PORT for IPv6)";
		return -EINVAL;
	}
	for (const char *c = colon + 1; *c; c++) {
		if (*c < '0' || *c > '9' || p > 65535) {
			*why = "the port is not a number from 1 to 65535";
			return -EINVAL;
		}
		p = p * 10 + (unsigned long)(*c - '0');
	}
	if (!p || p > 65535) {
		*why = "the port is not a number from 1 to 65535";
		return -EINVAL;
	}
	if (!hlen) {
		*why = "no address (0.0.0.0:PORT or [::]:PORT listen on every address)";
		return -EINVAL;
	}
	if (hlen >= sizeof(buf)) {
		*why = "not an IP address";
		return -EINVAL;
	}
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((__u16)p);
		if (inet_pton(AF_INET6, buf, &s6->sin6_addr) != 1) {
			*why = "not an IPv6 address";
			return -EINVAL;
		}
		*len = sizeof(*s6);
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((__u16)p);
		if (inet_pton(AF_INET, buf, &s4->sin_addr) != 1) {
			*why = "not an IPv4 address (IPv6: [ADDR]:PORT)";
			return -EINVAL;
		}
		*len = sizeof(*s4);
	}
	snprintf(name, nlen, v6 ? "[%s]:%lu" : "%s:%lu", buf, p);
	return 0;
}
