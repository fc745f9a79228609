#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A second, independent implementation of chlb's entry-sync protocol v2
(user/lib/wire/sync_wire.h, user/chlbd/sync/sync_auth.h), from Python's hmac and hashlib and
python3-cryptography's ChaCha20Poly1305, for the tests to play a peer -
honest, without the key, or misbehaving.

    sync_peer.py listen HOST PORT KEYFILE|- SCRIPT
        Accept connections at HOST:PORT (as a chlbd's --sync-listen would)
        and, for each, run the next step of SCRIPT (';'-separated), then
        close it. KEYFILE '-' means no key: the handshake is answered with
        a made-up proof. Steps:
          records:VIP,BE,SPORT[,FAM][/VIP,BE,SPORT...]  one tagged message, DUMP_END
          flood:VIP,BE,N        N records (256 a message), DUMP_END
          flip                  one record message with a byte flipped after tagging
          replay                one record message, then the same bytes again
          garbage               bytes that are no message
          v1                    an unauthenticated v1 dump (no handshake)
          truncated             half a record message
          badfamily             a tagged record with address family 5
        Prints "sent STEP" after each.

    sync_peer.py connect SRC HOST PORT KEYFILE|- MODE
        Connect from SRC to a chlbd's --sync-listen as a receiving peer.
        MODE: honest (handshake with the key, then print "records N" for
        the records received before DUMP_END, each message opened), nokey (a made-up key id),
        wrongkey (the right key id, proofs from another key), replay
        (an honest handshake recorded, then replayed on a new connection).
        Prints what it got: "refused" when the chlbd closed the connection
        without sending a record, "records N" otherwise.
"""
import hashlib
import hmac
import os
import socket
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

MAGIC = b"CHS2"
RECORDS, DUMP_END, HELLO, CHALLENGE, PROOF = 1, 2, 3, 4, 5
TAG = 16
REC = 80


def mac(key, *parts):
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def key_id(key):
    return mac(key, b"chlb sync v2 key id")[:8]


def proof(key, role, nc, na):
    return mac(key, b"chlb sync v2 " + role, key_id(key), nc, na)


def read_key(path):
    if path == "-":
        return None
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            return bytes.fromhex(line)
    raise SystemExit("no key in " + path)


def hdr(t, count=0):
    return MAGIC + struct.pack("!BBH", t, 0, count)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


class Session:
    """Messages sealed with ChaCha20-Poly1305: the header authenticated, the
    records encrypted, the nonce the message's number in the session."""

    def __init__(self, key, nc, na):
        self.aead = ChaCha20Poly1305(mac(key, b"chlb sync v2 session", key_id(key), nc, na))
        self.seq = 0

    def nonce(self):
        n = bytes(4) + struct.pack("!Q", self.seq)
        self.seq += 1
        return n

    def seal(self, m):
        return m[:8] + self.aead.encrypt(self.nonce(), m[8:], m[:8])

    def open(self, m):
        """The message's records, or None when it fails its tag."""
        try:
            return self.aead.decrypt(self.nonce(), m[8:], m[:8])
        except Exception:  # cryptography's InvalidTag
            return None


def a16(addr, fam):
    if fam == 4 or fam == 5:
        return socket.inet_aton(addr) + bytes(12)
    return socket.inet_pton(socket.AF_INET6, addr)


def record(vip, be, sport, fam=4, flags=0, client="10.0.1.2", port=80):
    return (struct.pack("!BBH", fam, 6, port) + a16(vip, fam) + a16(client, fam) +
            a16(vip, fam) + struct.pack("!HHBBBB", sport, port, 6, fam, flags, fam) +
            a16(be, fam) + bytes(4))


def records_msg(recs):
    return hdr(RECORDS, len(recs)) + b"".join(recs)


# ---- the accepting side (a fake --sync-listen) ----

def accept_handshake(c, key):
    """HELLO read, CHALLENGE sent, PROOF read: the session (None without a key)."""
    m = recv_exact(c, 8 + 40)
    kid, nc = m[8:16], m[16:48]
    na = os.urandom(32)
    if key is None:
        c.sendall(hdr(CHALLENGE) + na + os.urandom(32))
        return None
    if kid != key_id(key):
        raise SystemExit("the chlbd's key id is not ours")
    c.sendall(hdr(CHALLENGE) + na + proof(key, b"acceptor", nc, na))
    p = recv_exact(c, 8 + 32)[8:]
    if not hmac.compare_digest(p, proof(key, b"connector", nc, na)):
        raise SystemExit("the chlbd's proof is wrong")
    return Session(key, nc, na)


def tagged(ses, m):
    return ses.seal(m) if ses else m + os.urandom(TAG)


def parse_recs(spec):
    out = []
    for r in spec.split("/"):
        f = r.split(",")
        fam = int(f[3]) if len(f) > 3 else 4
        out.append(record(f[0], f[1], int(f[2]), fam))
    return out


def step(c, ses, st):
    name, _, arg = st.partition(":")
    if name == "records":
        c.sendall(tagged(ses, records_msg(parse_recs(arg))) + tagged(ses, hdr(DUMP_END)))
    elif name == "flood":
        vip, be, n = arg.split(",")
        n = int(n)
        out = []  # made first: what is timed is the chlbd taking them, not Python making them
        for sent in range(0, n, 256):
            recs = [record(vip, be, 1024 + i % 60000, client="100.64.%d.%d" % (
                i // 60000 // 256 % 256, i // 60000 % 256))
                for i in range(sent, min(n, sent + 256))]
            out.append(tagged(ses, records_msg(recs)))
        out.append(tagged(ses, hdr(DUMP_END)))
        c.sendall(b"".join(out))
    elif name == "flip":
        m = tagged(ses, records_msg([record("10.0.0.10", "10.0.2.11", 9010)]))
        m = bytearray(m)
        m[8 + 60 + 3] ^= 0x01  # (what was) the backend address's last byte
        c.sendall(bytes(m))
    elif name == "replay":
        m = tagged(ses, records_msg([record("10.0.0.10", "10.0.2.11", 9011)]))
        c.sendall(m + m)
    elif name == "garbage":
        c.sendall(b"GET / HTTP/1.0\r\n\r\n")
    elif name == "v1":
        c.sendall(b"CHS1" + struct.pack("!BBH", 1, 0, 1) + record("10.0.0.10", "10.0.2.11", 9012))
    elif name == "truncated":
        c.sendall(records_msg([record("10.0.0.10", "10.0.2.11", 9003)])[:8 + 40])
    elif name == "badfamily":
        c.sendall(tagged(ses, records_msg([record("10.0.0.10", "10.0.2.11", 9004, fam=5)])))
    else:
        raise SystemExit("unknown step " + st)


def listen(host, port, keyfile, script):
    key = read_key(keyfile)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(4)
    print("listening", flush=True)
    for st in script.split(";"):
        c, _ = s.accept()
        try:
            ses = None if st == "v1" else accept_handshake(c, key)
            step(c, ses, st)
            c.shutdown(socket.SHUT_WR)
            c.settimeout(5)
            while c.recv(4096):  # until the chlbd closes: it has read it all
                pass
        except (EOFError, OSError):
            pass  # the chlbd closed it: what it refuses
        c.close()
        print("sent", st.partition(":")[0], flush=True)


# ---- the connecting side (a fake --sync-peer that receives) ----

def dial(src, host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam)
    s.settimeout(8)
    s.bind((src, 0))
    s.connect((host, int(port)))
    return s


def receive(s, ses):
    """Records until DUMP_END, each message's tag checked."""
    n = 0
    while True:
        h = recv_exact(s, 8)
        if h[:4] != MAGIC:
            raise SystemExit("bad magic from the chlbd")
        t, cnt = h[4], struct.unpack("!H", h[6:8])[0]
        body = recv_exact(s, cnt * REC + TAG)
        if ses.open(h + body) is None:
            raise SystemExit("a message from the chlbd failed its tag")
        if t == DUMP_END:
            return n
        n += cnt


def connect(src, host, port, keyfile, mode):
    key = read_key(keyfile)
    other = os.urandom(32)
    s = dial(src, host, port)
    nc = os.urandom(32)
    kid = os.urandom(8) if mode == "nokey" else key_id(key)
    hello = hdr(HELLO) + kid + nc
    try:
        s.sendall(hello)
        ch = recv_exact(s, 8 + 64)
        na, pa = ch[8:40], ch[40:72]
        use = other if mode == "wrongkey" else key
        if mode != "wrongkey" and not hmac.compare_digest(pa, proof(key, b"acceptor", nc, na)):
            raise SystemExit("the chlbd's proof is wrong")
        pr = hdr(PROOF) + proof(use, b"connector", nc, na)
        s.sendall(pr)
        if mode == "replay":
            s.close()
            s = dial(src, host, port)
            s.sendall(hello + pr)  # the same bytes, on a new connection
            recv_exact(s, 8 + 64)
        print("records", receive(s, Session(key, nc, na)), flush=True)
    except (EOFError, ConnectionError):
        print("refused", flush=True)
    except socket.timeout:
        print("timeout", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "listen":
        listen(*sys.argv[2:])
    elif len(sys.argv) == 7 and sys.argv[1] == "connect":
        connect(*sys.argv[2:])
    else:
        sys.exit(__doc__)
