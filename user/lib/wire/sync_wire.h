/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The entry-sync wire format (docs/design.md, "Several LB hosts"): what one
 * chlbd sends another over TCP. Messages are an 8-byte header and `count`
 * fixed-size records or a handshake body (sync_auth.h):
 *
 *   header: "CHS2" | type (u8) | 0 (u8) | count (u16, big-endian)
 *   type 1 RECORDS: count records of SYNC_WIRE_REC bytes (1..SYNC_WIRE_BATCH),
 *                   then a tag (SYNC_TAG_LEN)
 *   type 2 DUMP_END: count 0, a tag; the sender's bulk dump of its entries is done
 *   type 3 HELLO: count 0; key id (8) | nonce (32)           (connector -> acceptor)
 *   type 4 CHALLENGE: count 0; nonce (32) | proof (32)       (acceptor -> connector)
 *   type 5 PROOF: count 0; proof (32)                        (connector -> acceptor)
 *
 * A tag seals its message (the header authenticated, the records
 * encrypted) in its session, at its place in the stream
 * (sync_session_seal). "CHS1" was the unauthenticated first version:
 * refused, and said so.
 *
 *   record: VIP family (u8) | VIP proto (u8) | VIP port (be16) | VIP addr[16]
 *           | the conns key: src[16] dst[16] sport dport (be16) proto family (u8)
 *           | flags (u8, CHLB_CONN_F_*) | backend family (u8) | backend addr[16]
 *           | 4 zero bytes
 *
 * Addresses are 16 bytes, IPv4 in the first 4 (the rest zero). A backend is
 * named by its address, never by a slot: slots differ between hosts.
 * Anything else - another magic or type, a count out of range, a family,
 * protocol or flag that does not exist, a key whose destination is not its
 * VIP, non-zero padding - is bad input: the connection is dropped.
 */
#ifndef CHLB_SYNC_WIRE_H
#define CHLB_SYNC_WIRE_H

#include <stddef.h>
#include <linux/types.h>
#include "base/addr.h"
#include "chlb_maps.h"

/* the handshake's and the seal's sizes (user/chlbd/sync/sync_auth.h says what they are) */
#define SYNC_KEYID_LEN 8
#define SYNC_NONCE_LEN 32
#define SYNC_PROOF_LEN 32
#define SYNC_TAG_LEN   16

#define SYNC_WIRE_HDR	  8
#define SYNC_WIRE_REC	  80
#define SYNC_WIRE_BATCH	  256 /* records per message at most */
#define SYNC_WIRE_MSG_MAX (SYNC_WIRE_HDR + SYNC_WIRE_BATCH * SYNC_WIRE_REC + SYNC_TAG_LEN)
#define SYNC_WIRE_HELLO	  (SYNC_WIRE_HDR + SYNC_KEYID_LEN + SYNC_NONCE_LEN)
#define SYNC_WIRE_CHALL	  (SYNC_WIRE_HDR + SYNC_NONCE_LEN + SYNC_PROOF_LEN)
#define SYNC_WIRE_PROOF	  (SYNC_WIRE_HDR + SYNC_PROOF_LEN)

enum sync_msg_type {
	SYNC_MSG_RECORDS = 1,
	SYNC_MSG_DUMP_END = 2,
	SYNC_MSG_HELLO = 3,
	SYNC_MSG_CHALLENGE = 4,
	SYNC_MSG_PROOF = 5,
};

/* One entry as peers exchange it. */
struct sync_entry {
	struct chlb_vip vip;
	struct chlb_flow flow;
	struct chlb_addr backend;
	__u8 flags; /* CHLB_CONN_F_* */
};

/* The header of a message of `count` records of `type` into buf (SYNC_WIRE_HDR bytes). */
void sync_wire_hdr(__u8 *buf, enum sync_msg_type type, __u16 count);
/* One record into buf (SYNC_WIRE_REC bytes). */
void sync_wire_put(__u8 *buf, const struct sync_entry *e);

/*
 * The message at buf[0..len): 0 when it is not complete yet; its length
 * (with its tag, if it has one), with *type and *count, when it is;
 * -EBADMSG (and why) when it cannot be one.
 */
int sync_wire_msg(const __u8 *buf, size_t len, enum sync_msg_type *type, __u16 *count,
		  const char **why);
/* Record i of a complete RECORDS message: 0, or -EBADMSG and why. */
int sync_wire_get(const __u8 *msg, __u16 i, struct sync_entry *e, const char **why);

#endif /* CHLB_SYNC_WIRE_H */
