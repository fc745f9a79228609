/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Addresses and VIPs as the control plane holds them, and their helpers:
 * parsing one address, canonical text, ordering, and the data plane's key
 * and flow forms (include/chlb_maps.h). Everything above base/ names a
 * backend or a service with these.
 */
#ifndef CHLB_BASE_ADDR_H
#define CHLB_BASE_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>
#include "chlb_common.h"
#include "chlb_maps.h"

#define CHLB_ADDRSTR 64 /* "[v6]:port/proto" fits */

struct chlb_addr {
	__u8 family; /* CHLB_AF_INET / CHLB_AF_INET6; 0 = unset */
	__u8 a[16];  /* IPv4 in the first 4 bytes, rest zero */
};

struct chlb_vip {
	struct chlb_addr addr;
	__u16 port; /* host order; 0 = all ports */
	__u8 proto; /* IPPROTO_TCP / IPPROTO_UDP */
};

/* A source prefix (allow-lists): addr with the bits past plen zero. */
struct chlb_prefix {
	struct chlb_addr addr;
	__u8 plen; /* 0..32 (IPv4), 0..128 (IPv6) */
};

/* "10.1.0.2", "2001:db8::2", "[2001:db8::2]": 0, or -EINVAL (not an address). */
int chlb_parse_addr(const char *s, struct chlb_addr *a);

struct sockaddr_storage;
/*
 * A socket address as options give it: "ADDR:PORT", "[ADDR]:PORT" for
 * IPv6, port 1-65535. 0 with *ss, *len and its canonical text in name
 * (nlen >= INET6_ADDRSTRLEN + 8), or -EINVAL and *why (static text: what is wrong,
 * for the option's error message). --metrics and the sync options.
 */
int chlb_parse_sockaddr(const char *arg, struct sockaddr_storage *ss, unsigned int *len, char *name,
			size_t nlen, const char **why);

/*
 * "10.0.0.0/8", "2001:db8::/32", a bare address (a host: /32, /128): 0, or
 * -EINVAL with *why (static text): not an address, a bad length, or bits
 * set past the length.
 */
int chlb_parse_prefix(const char *s, struct chlb_prefix *p, const char **why);
/* "10.0.0.0/8": always with its length. Returns buf. */
const char *chlb_fmt_prefix(const struct chlb_prefix *p, char *buf, size_t len);
/* Does a contain b (a's length <= b's, same bits up to it, same family)? */
bool chlb_prefix_contains(const struct chlb_prefix *a, const struct chlb_prefix *b);

/*
 * Canonical text (inet_ntop, v6 in brackets for VIPs; a VIP of every port
 * with the port written as a star); return buf.
 */
const char *chlb_fmt_addr(const struct chlb_addr *a, char *buf, size_t len);
const char *chlb_fmt_vip(const struct chlb_vip *v, char *buf, size_t len);
const char *chlb_proto_name(__u8 proto);

int chlb_addr_cmp(const struct chlb_addr *a, const struct chlb_addr *b);
/*
 * Equality alone, inlined, for every "same address / VIP?" test
 * (chlb_*_cmp() are for ordering): a change looks services up many times
 * (250 VIPs made chlb_vip_cmp()'s calls half of a change's 6 ms).
 */
static inline bool chlb_addr_eq(const struct chlb_addr *a, const struct chlb_addr *b)
{
	return a->family == b->family && !memcmp(a->a, b->a, sizeof(a->a));
}

static inline bool chlb_vip_eq(const struct chlb_vip *a, const struct chlb_vip *b)
{
	return a->port == b->port && a->proto == b->proto && chlb_addr_eq(&a->addr, &b->addr);
}
int chlb_vip_cmp(const struct chlb_vip *a, const struct chlb_vip *b);

/* The data plane's key for a VIP (IPv4 as v4-mapped IPv6, port in network order). */
void chlb_vip_to_key(const struct chlb_vip *v, struct chlb_vip_key *k);

/* A flow's destination as a VIP (ADDR:PORT/PROTO). */
void chlb_flow_dst_vip(const struct chlb_flow *f, struct chlb_vip *v);

#endif /* CHLB_BASE_ADDR_H */
