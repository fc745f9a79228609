// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The entry-sync wire format: encode and strictly decode (sync_wire.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "wire/sync_wire.h"

static const __u8 magic[4] = { 'C', 'H', 'S', '2' };
static const __u8 magic_v1[4] = { 'C', 'H', 'S', '1' };

void sync_wire_hdr(__u8 *buf, enum sync_msg_type type, __u16 count)
{
	memcpy(buf, magic, 4);
	buf[4] = (__u8)type;
	buf[5] = 0;
	buf[6] = (__u8)(count >> 8);
	buf[7] = (__u8)count;
}

static __u8 fam(__u8 chlb_family)
{
	return chlb_family == CHLB_AF_INET6 ? 6 : 4;
}

void sync_wire_put(__u8 *b, const struct sync_entry *e)
{
	memset(b, 0, SYNC_WIRE_REC);
	b[0] = fam(e->vip.addr.family);
	b[1] = e->vip.proto;
	b[2] = (__u8)(e->vip.port >> 8);
	b[3] = (__u8)e->vip.port;
	memcpy(b + 4, e->vip.addr.a, 16);
	memcpy(b + 20, e->flow.src, 16);
	memcpy(b + 36, e->flow.dst, 16);
	memcpy(b + 52, &e->flow.sport, 2);
	memcpy(b + 54, &e->flow.dport, 2);
	b[56] = e->flow.proto;
	b[57] = fam(e->flow.family);
	b[58] = e->flags;
	b[59] = fam(e->backend.family);
	memcpy(b + 60, e->backend.a, 16);
}

/* A message of type's length beyond its header and records; 0: no such type. */
static size_t trailer(enum sync_msg_type type)
{
	switch (type) {
	case SYNC_MSG_RECORDS:
	case SYNC_MSG_DUMP_END:
		return SYNC_TAG_LEN;
	case SYNC_MSG_HELLO:
		return SYNC_WIRE_HELLO - SYNC_WIRE_HDR;
	case SYNC_MSG_CHALLENGE:
		return SYNC_WIRE_CHALL - SYNC_WIRE_HDR;
	case SYNC_MSG_PROOF:
		return SYNC_WIRE_PROOF - SYNC_WIRE_HDR;
	}
	return 0;
}

int sync_wire_msg(const __u8 *buf, size_t len, enum sync_msg_type *type, __u16 *count,
		  const char **why)
{
	size_t need;

	/* a bad magic is refused as soon as its bytes are in */
	if (memcmp(buf, magic, len < 4 ? len : 4)) {
		*why = len >= 4 && !memcmp(buf, magic_v1, 4)
			   ? "the peer speaks sync v1, unauthenticated: upgrade it"
			   : "not a sync message (bad magic)";
		return -EBADMSG;
	}
	if (len < SYNC_WIRE_HDR)
		return 0;
	*type = buf[4];
	*count = (__u16)(buf[6] << 8 | buf[7]);
	if (buf[5]) {
		*why = "non-zero header padding";
		return -EBADMSG;
	}
	if (!trailer(*type)) {
		*why = "unknown message type";
		return -EBADMSG;
	}
	if (*type == SYNC_MSG_RECORDS) {
		if (!*count || *count > SYNC_WIRE_BATCH) {
			*why = "record count out of range (1-256)";
			return -EBADMSG;
		}
	} else if (*count) {
		*why = "records in a message that has none";
		return -EBADMSG;
	}
	need = SYNC_WIRE_HDR + (size_t)*count * SYNC_WIRE_REC + trailer(*type);
	return len < need ? 0 : (int)need;
}

static bool zero(const __u8 *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* A wire family (4/6) and 16 address bytes: IPv4 keeps its tail zero. */
static int addr_of(__u8 wf, const __u8 *a, __u8 *family)
{
	if (wf == 4 && zero(a + 4, 12))
		*family = CHLB_AF_INET;
	else if (wf == 6)
		*family = CHLB_AF_INET6;
	else
		return -1;
	return 0;
}

int sync_wire_get(const __u8 *msg, __u16 i, struct sync_entry *e, const char **why)
{
	const __u8 *b = msg + SYNC_WIRE_HDR + (size_t)i * SYNC_WIRE_REC;

	memset(e, 0, sizeof(*e));
	if (addr_of(b[0], b + 4, &e->vip.addr.family) || addr_of(b[57], b + 20, &e->flow.family) ||
	    addr_of(b[57], b + 36, &e->flow.family) || addr_of(b[59], b + 60, &e->backend.family)) {
		*why = "bad address family or address";
		return -EBADMSG;
	}
	if ((b[1] != IPPROTO_TCP && b[1] != IPPROTO_UDP) || b[56] != b[1]) {
		*why = "bad protocol";
		return -EBADMSG;
	}
	if (b[58] & ~CHLB_CONN_F_ENDED) {
		*why = "unknown flags";
		return -EBADMSG;
	}
	if (!zero(b + 76, 4)) {
		*why = "non-zero record padding";
		return -EBADMSG;
	}
	e->vip.proto = b[1];
	e->vip.port = (__u16)(b[2] << 8 | b[3]);
	memcpy(e->vip.addr.a, b + 4, 16);
	memcpy(e->flow.src, b + 20, 16);
	memcpy(e->flow.dst, b + 36, 16);
	memcpy(&e->flow.sport, b + 52, 2);
	memcpy(&e->flow.dport, b + 54, 2);
	e->flow.proto = b[56];
	e->flags = b[58];
	memcpy(e->backend.a, b + 60, 16);
	if (e->flow.family != e->vip.addr.family || memcmp(e->flow.dst, e->vip.addr.a, 16) ||
	    (e->vip.port && e->vip.port != ntohs(e->flow.dport))) {
		*why = "the connection's destination is not its VIP";
		return -EBADMSG;
	}
	return 0;
}
