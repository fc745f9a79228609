// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The entry-sync keys and the handshake's and messages' MACs (sync_auth.h).
 *
 * The key file: one key per line, 64 hex digits (32 random bytes, e.g.
 * `head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n'`); blank lines and
 * lines starting with '#' are skipped. The first key is the one this host
 * proves itself with; a second one is also accepted from peers, so a key
 * can be rotated on a running cluster (docs/operations.md). The file must
 * be a regular file nobody but its owner can read or write (like ssh's
 * private keys): a key others can read authenticates nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sodium.h>
#include "chlbd.h"
#include "sync/sync_auth.h"

#define KEY_FILE_MAX  4096
#define WARN_EVERY_NS 60000000000ull /* a key file gone bad: one line a minute */

static char key_path[PATH_MAX];
static struct sync_key keys[SYNC_KEYS_MAX];
static int nkeys;
static struct stat key_stat; /* of the file the keys were read from */
static __u64 warned_at;

static const char *const role_label[] = {
	[SYNC_ROLE_ACCEPTOR] = "chlb sync v2 acceptor",
	[SYNC_ROLE_CONNECTOR] = "chlb sync v2 connector",
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void key_id(struct sync_key *k)
{
	static const char label[] = "chlb sync v2 key id";
	__u8 mac[crypto_auth_hmacsha256_BYTES];

	crypto_auth_hmacsha256(mac, (const __u8 *)label, sizeof(label) - 1, k->key);
	memcpy(k->id, mac, SYNC_KEYID_LEN);
}

/* The keys in text[0..len) into out: their number, or -1 with why in err. */
static int parse_keys(const char *text, size_t len, struct sync_key *out, char *err, size_t errlen)
{
	int n = 0, line = 0;
	size_t i = 0;

	while (i < len) {
		size_t e = i, hex = 0;

		while (e < len && text[e] != '\n')
			e++;
		line++;
		while (i < e && (text[i] == ' ' || text[i] == '\t'))
			i++;
		while (e > i && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r'))
			e--;
		if (i == e || text[i] == '#')
			goto next;
		if (n == SYNC_KEYS_MAX) {
			snprintf(err, errlen,
				 "line %d: more than %d keys (the one to sign with, and one more "
				 "accepted while a key is rotated)",
				 line, SYNC_KEYS_MAX);
			return -EINVAL;
		}
		hex = e - i;
		if (hex != 2 * SYNC_KEY_LEN) {
			snprintf(err, errlen, "line %d: a key is %d hex digits, not %zu", line,
				 2 * SYNC_KEY_LEN, hex);
			return -EINVAL;
		}
		for (size_t j = 0; j < SYNC_KEY_LEN; j++) {
			int hi = hexval(text[i + 2 * j]), lo = hexval(text[i + 2 * j + 1]);

			if (hi < 0 || lo < 0) {
				snprintf(err, errlen, "line %d: '%c' is not a hex digit", line,
					 hi < 0 ? text[i + 2 * j] : text[i + 2 * j + 1]);
				return -EINVAL;
			}
			out[n].key[j] = (__u8)(hi << 4 | lo);
		}
		key_id(&out[n]);
		n++;
	next:
		/* the rest of the line, past the trimmed end */
		while (e < len && text[e] != '\n')
			e++;
		i = e + 1;
	}
	if (!n) {
		snprintf(err, errlen, "no key in it (a line of %d hex digits)", 2 * SYNC_KEY_LEN);
		return -EINVAL;
	}
	return n;
}

/* Read and check the key file: the keys and the file's stat, or a negative errno and why. */
static int read_keys(struct sync_key *out, struct stat *st, char *err, size_t errlen)
{
	char text[KEY_FILE_MAX + 1];
	ssize_t len;
	int fd = open(key_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), n;

	if (fd < 0) {
		n = -errno;
		snprintf(err, errlen, "%s", strerror(-n));
		return n;
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "not a regular file");
		close(fd);
		return -EINVAL;
	}
	if (st->st_mode & 077) {
		snprintf(err, errlen,
			 "mode %04o: others can read or change it (chmod 600 it, owned by the "
			 "user chlbd runs as)",
			 (unsigned int)(st->st_mode & 07777));
		close(fd);
		return -EINVAL;
	}
	len = read(fd, text, sizeof(text));
	n = len < 0 ? -errno : 0; /* before close() can change errno */
	close(fd);
	if (n) {
		snprintf(err, errlen, "%s", strerror(-n));
		return n;
	}
	if (len > KEY_FILE_MAX) {
		snprintf(err, errlen, "larger than %d bytes: not a key file", KEY_FILE_MAX);
		return -EINVAL;
	}
	n = parse_keys(text, (size_t)len, out, err, errlen);
	sodium_memzero(text, sizeof(text));
	return n;
}

int sync_key_option(const char *path)
{
	char err[160];

	if (sodium_init() < 0) {
		fprintf(stderr, "chlbd: libsodium failed to initialise\n");
		return -EIO;
	}
	/* absolute: a daemonized chlbd reads it again from another directory */
	if (!realpath(path, key_path)) {
		fprintf(stderr, "chlbd: --sync-key '%s': %s\n", path, strerror(errno));
		return -EINVAL;
	}
	nkeys = read_keys(keys, &key_stat, err, sizeof(err));
	if (nkeys < 0) {
		fprintf(stderr, "chlbd: --sync-key '%s': %s\n", path, err);
		nkeys = 0;
		key_path[0] = '\0';
		return -EINVAL;
	}
	return 0;
}

bool sync_key_configured(void)
{
	return nkeys > 0;
}

void sync_key_refresh(void)
{
	struct sync_key fresh[SYNC_KEYS_MAX];
	struct stat st;
	char err[160];
	int n;

	if (!nkeys)
		return;
	if (!stat(key_path, &st) && st.st_ino == key_stat.st_ino && st.st_dev == key_stat.st_dev &&
	    st.st_size == key_stat.st_size && st.st_mtim.tv_sec == key_stat.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == key_stat.st_mtim.tv_nsec && st.st_mode == key_stat.st_mode)
		return;
	n = read_keys(fresh, &st, err, sizeof(err));
	if (n < 0) {
		__u64 now = chlb_now_ns();

		if (!warned_at || now - warned_at >= WARN_EVERY_NS) {
			pr_warn("sync: key file %s: %s; keeping the keys read before", key_path,
				err);
			warned_at = now;
		}
		return;
	}
	if (memcmp(fresh[0].id, keys[0].id, SYNC_KEYID_LEN) || n != nkeys ||
	    (n > 1 && memcmp(fresh[1].id, keys[1].id, SYNC_KEYID_LEN)))
		pr_info("sync: key file %s read again: %d key%s", key_path, n, n > 1 ? "s" : "");
	sodium_memzero(keys, sizeof(keys));
	memcpy(keys, fresh, sizeof(keys));
	sodium_memzero(fresh, sizeof(fresh));
	nkeys = n;
	key_stat = st;
	warned_at = 0;
}

const struct sync_key *sync_key_own(void)
{
	return nkeys ? &keys[0] : NULL;
}

const struct sync_key *sync_key_find(const __u8 id[SYNC_KEYID_LEN])
{
	for (int i = 0; i < nkeys; i++)
		if (!sodium_memcmp(keys[i].id, id, SYNC_KEYID_LEN))
			return &keys[i];
	return NULL;
}

void sync_nonce(__u8 nonce[SYNC_NONCE_LEN])
{
	randombytes_buf(nonce, SYNC_NONCE_LEN);
}

/* HMAC(key, label | id | nonce_c | nonce_a) */
static void handshake_mac(const struct sync_key *k, const char *label, const __u8 *nonce_c,
			  const __u8 *nonce_a, __u8 out[crypto_auth_hmacsha256_BYTES])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, k->key, SYNC_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const __u8 *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, k->id, SYNC_KEYID_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_c, SYNC_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_a, SYNC_NONCE_LEN);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

void sync_proof(const struct sync_key *k, enum sync_role role, const __u8 *nonce_c,
		const __u8 *nonce_a, __u8 proof[SYNC_PROOF_LEN])
{
	handshake_mac(k, role_label[role], nonce_c, nonce_a, proof);
}

bool sync_proof_ok(const struct sync_key *k, enum sync_role role, const __u8 *nonce_c,
		   const __u8 *nonce_a, const __u8 *proof)
{
	__u8 want[SYNC_PROOF_LEN];
	bool ok;

	handshake_mac(k, role_label[role], nonce_c, nonce_a, want);
	ok = !crypto_verify_32(want, proof);
	sodium_memzero(want, sizeof(want));
	return ok;
}

void sync_session_start(struct sync_session *s, const struct sync_key *k, const __u8 *nonce_c,
			const __u8 *nonce_a)
{
	handshake_mac(k, "chlb sync v2 session", nonce_c, nonce_a, s->key);
	s->seq = 0;
}

/* The nonce of the session's message number seq: 4 zero bytes, then seq big-endian. */
static void seq_nonce(__u64 seq, __u8 nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES])
{
	memset(nonce, 0, 4);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (__u8)(seq >> (56 - 8 * i));
}

void sync_session_seal(struct sync_session *s, __u8 *msg, size_t len, __u8 tag[SYNC_TAG_LEN])
{
	__u8 nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];

	seq_nonce(s->seq++, nonce);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(
	    msg + SYNC_SEAL_CLEAR, tag, NULL, msg + SYNC_SEAL_CLEAR, len - SYNC_SEAL_CLEAR, msg,
	    SYNC_SEAL_CLEAR, NULL, nonce, s->key);
}

bool sync_session_open(struct sync_session *s, __u8 *msg, size_t len, const __u8 *tag)
{
	__u8 nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];

	seq_nonce(s->seq, nonce);
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		msg + SYNC_SEAL_CLEAR, NULL, msg + SYNC_SEAL_CLEAR, len - SYNC_SEAL_CLEAR, tag, msg,
		SYNC_SEAL_CLEAR, nonce, s->key))
		return false;
	s->seq++;
	return true;
}

void sync_session_end(struct sync_session *s)
{
	sodium_memzero(s, sizeof(*s));
}
