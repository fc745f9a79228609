/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Authentication of the entry-sync channel (docs/design.md, "Entry sync:
 * authentication"): the shared keys (--sync-key FILE), the challenge-
 * response both ends prove the key with, and the sealing of a session's
 * messages. HMAC-SHA256 and ChaCha20-Poly1305 from libsodium; nothing
 * hand-written but the framing.
 *
 * Handshake (C connects and receives records, A accepts and sends them):
 *   C -> A  HELLO      key id (8) | nonce_c (32)
 *   A -> C  CHALLENGE  nonce_a (32) | HMAC(K, "chlb sync v2 acceptor" | id | nonce_c | nonce_a)
 *   C -> A  PROOF      HMAC(K, "chlb sync v2 connector" | id | nonce_c | nonce_a)
 * Each side checks the other's proof before anything else flows; both
 * nonces are fresh, so a recorded handshake proves nothing in another
 * one. The session key is HMAC(K, "chlb sync v2 session" | id | nonce_c |
 * nonce_a); every message after is sealed with ChaCha20-Poly1305 (IETF)
 * under it: the header (SYNC_SEAL_CLEAR bytes) authenticated, the records
 * encrypted, the nonce the message's number in the session (0, 1, ...).
 * A changed, dropped, reordered or replayed message fails its tag, and
 * the back segment no longer shows the 5-tuples. Only the acceptor sends
 * sealed messages, so a nonce is never used twice under a key.
 */
#ifndef CHLBD_SYNC_AUTH_H
#define CHLBD_SYNC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "wire/sync_wire.h" /* the sizes */

#define SYNC_KEY_LEN	32
#define SYNC_KEYID_LEN	8
#define SYNC_NONCE_LEN	32
#define SYNC_PROOF_LEN	32
#define SYNC_TAG_LEN	16
#define SYNC_SEAL_CLEAR 8 /* a sealed message's header: authenticated, not encrypted */
#define SYNC_KEYS_MAX	2 /* the one this host signs with, and one more it accepts (rotation) */

struct sync_key {
	__u8 key[SYNC_KEY_LEN];
	__u8 id[SYNC_KEYID_LEN]; /* HMAC(key, "chlb sync v2 key id"): names the key, not it */
};

enum sync_role {
	SYNC_ROLE_ACCEPTOR,
	SYNC_ROLE_CONNECTOR
};

struct sync_session {
	__u8 key[SYNC_KEY_LEN];
	__u64 seq; /* of the next message */
};

/*
 * --sync-key FILE at startup: the file read and checked (sync_key_reload
 * says how). 0, or -1 with a precise message on stderr.
 */
int sync_key_option(const char *path);
/* Was --sync-key given? */
bool sync_key_configured(void);
/*
 * The key file read again if it changed since (checked at each handshake):
 * key rotation on a running host. A file that went bad keeps the keys
 * last read, with a warning once per minute.
 */
void sync_key_refresh(void);
/* The key this host proves itself with (the file's first). */
const struct sync_key *sync_key_own(void);
/* The key named id, if this host has it; NULL if not. */
const struct sync_key *sync_key_find(const __u8 id[SYNC_KEYID_LEN]);

/* A fresh random nonce. */
void sync_nonce(__u8 nonce[SYNC_NONCE_LEN]);
/* The proof the side in `role` sends for the handshake (nonce_c, nonce_a). */
void sync_proof(const struct sync_key *k, enum sync_role role, const __u8 *nonce_c,
		const __u8 *nonce_a, __u8 proof[SYNC_PROOF_LEN]);
/* Is proof what the side in `role` must have sent? (constant time) */
bool sync_proof_ok(const struct sync_key *k, enum sync_role role, const __u8 *nonce_c,
		   const __u8 *nonce_a, const __u8 *proof);
/* The session both sides derive once the handshake is done. */
void sync_session_start(struct sync_session *s, const struct sync_key *k, const __u8 *nonce_c,
			const __u8 *nonce_a);
/* The session's next message msg[0..len) sealed in place, its tag into tag; the sequence moves on. */
void sync_session_seal(struct sync_session *s, __u8 *msg, size_t len, __u8 tag[SYNC_TAG_LEN]);
/*
 * The session's next message msg[0..len) with tag opened in place: true,
 * and the sequence moves on; false (msg unusable) when it fails its tag.
 */
bool sync_session_open(struct sync_session *s, __u8 *msg, size_t len, const __u8 *tag);
void sync_session_end(struct sync_session *s);

#endif /* CHLBD_SYNC_AUTH_H */
