// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cost of authenticating entry sync (user/chlbd/sync/sync_auth.c), one CPU:
 * records per second through what each side does to a full message (256
 * records) - the sender encodes and tags it, the receiver checks the tag
 * and decodes it - with and without sealing (sync_session_seal/_open: ChaCha20-Poly1305),
 * and the handshake's cost. Prints JSON.
 *
 *   sync_auth [MESSAGES]
 *
 * The data plane's side of a record (the map write on the receiver) is
 * not in it: tests/bench/sync.sh times a whole dump between two chlbds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sodium.h>
#include "wire/sync_wire.h"
#include "sync/sync_auth.h" /* chlbd's own, measured here */

/* sync_auth.c logs through chlbd's logger: stderr here */
void chlbd_log(int level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __u8 msg[SYNC_WIRE_MSG_MAX];

/* n messages of 256 records through both sides: the seconds it took; -1 on a failure. */
static double run(long n, bool tag)
{
	struct sync_key k;
	struct sync_session tx, rx;
	__u8 nc[SYNC_NONCE_LEN], na[SYNC_NONCE_LEN];
	size_t len = SYNC_WIRE_HDR + SYNC_WIRE_BATCH * SYNC_WIRE_REC;
	struct sync_entry e = { 0 };
	double t0;

	randombytes_buf(k.key, sizeof(k.key));
	sync_nonce(nc);
	sync_nonce(na);
	sync_session_start(&tx, &k, nc, na);
	sync_session_start(&rx, &k, nc, na);
	e.vip.addr.family = e.flow.family = e.backend.family = CHLB_AF_INET;
	e.vip.proto = e.flow.proto = 6;
	e.vip.port = 80;
	e.flow.dport = htons(80);
	t0 = now_s();
	for (long m = 0; m < n; m++) {
		sync_wire_hdr(msg, SYNC_MSG_RECORDS, SYNC_WIRE_BATCH);
		for (int i = 0; i < SYNC_WIRE_BATCH; i++) {
			e.flow.sport = (__u16)i;
			sync_wire_put(msg + SYNC_WIRE_HDR + (size_t)i * SYNC_WIRE_REC, &e);
		}
		if (tag)
			sync_session_seal(&tx, msg, len, msg + len);
		if (tag && !sync_session_open(&rx, msg, len, msg + len))
			return -1;
		for (__u16 i = 0; i < SYNC_WIRE_BATCH; i++) {
			struct sync_entry got;
			const char *why;

			if (sync_wire_get(msg, i, &got, &why))
				return -1;
		}
	}
	return now_s() - t0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	struct sync_key k;
	__u8 nc[SYNC_NONCE_LEN], na[SYNC_NONCE_LEN], p[SYNC_PROOF_LEN];
	double plain, authed, t0, hs;
	int hsn = 20000;

	if (sodium_init() < 0 || n <= 0)
		return 1;
	plain = run(n, false);
	authed = run(n, true);
	if (plain < 0 || authed < 0) {
		fprintf(stderr, "sync_auth: a record or tag did not come back\n");
		return 1;
	}
	/* a handshake: both proofs made and checked, the session keys derived */
	randombytes_buf(k.key, sizeof(k.key));
	t0 = now_s();
	for (int i = 0; i < hsn; i++) {
		struct sync_session s;

		sync_nonce(nc);
		sync_nonce(na);
		sync_proof(&k, SYNC_ROLE_ACCEPTOR, nc, na, p);
		if (!sync_proof_ok(&k, SYNC_ROLE_ACCEPTOR, nc, na, p))
			return 1;
		sync_proof(&k, SYNC_ROLE_CONNECTOR, nc, na, p);
		if (!sync_proof_ok(&k, SYNC_ROLE_CONNECTOR, nc, na, p))
			return 1;
		sync_session_start(&s, &k, nc, na);
		sync_session_start(&s, &k, nc, na);
	}
	hs = (now_s() - t0) / hsn;
	printf("{\n  \"sync_records_per_s_plain\": %.0f,\n  \"sync_records_per_s_sealed\": %.0f,\n"
	       "  \"sync_seal_ns_per_record\": %.1f,\n  \"sync_wire_bytes_per_record\": %.2f,\n"
	       "  \"sync_handshake_us\": %.1f\n}\n",
	       (double)n * SYNC_WIRE_BATCH / plain, (double)n * SYNC_WIRE_BATCH / authed,
	       (authed - plain) * 1e9 / ((double)n * SYNC_WIRE_BATCH),
	       (double)(SYNC_WIRE_HDR + SYNC_WIRE_BATCH * SYNC_WIRE_REC + SYNC_TAG_LEN) /
		   SYNC_WIRE_BATCH,
	       hs * 1e6);
	return 0;
}
