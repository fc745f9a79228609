/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Key and value layouts of every BPF map, stats records and reasons: the
 * contract between bpf/ and user/. Map definitions themselves live in
 * bpf/chlb_maps.bpf.h; their sizes come from chlb_common.h.
 */
#ifndef CHLB_MAPS_H
#define CHLB_MAPS_H

#include "chlb_common.h"
#include "chlb_hash.h"

/* vips (hash, BPF_F_NO_PREALLOC): key. Port 0 = every port of the address. */
struct chlb_vip_key {
	__u8 addr[16]; /* IPv6, or IPv4-mapped ::ffff:a.b.c.d */
	__be16 port;
	__u8 proto;
	__u8 pad;
} __attribute__((aligned(4))); /* its address is hashed a word at a time (chlb_vip_crc) */

/*
 * The service's view, replaced whole on every change, so a packet sees the
 * old view or the new one. Kept twice, both written by user/lib/dp/dp_state.c
 * and dp_views.c, the data plane's copy first:
 *  - vips (hash, key -> view): the registry userspace reads, iterates and
 *    adopts across restarts (NO_PREALLOC elements are freed after an RCU
 *    grace period, never reused under a reader);
 *  - vip_index + views (mmapable arrays): what the data plane reads, with
 *    inline lookups (looking up vips - a 20-byte jhash, a bucket walk, a
 *    memcmp call - costs more: docs/performance.md). vip_index is
 *    open-addressed: key K lives in one of the
 *    CHLB_VIP_PROBES slots from chlb_vip_hash(K), and holds 1 + the views
 *    slot of K's view (0: empty, ends a probe; CHLB_VIP_TOMB: removed, the
 *    probe goes on). A change writes the new view into a free views slot,
 *    then stores its number into the index with one release store; the
 *    old view slot is rewritten only after CHLB_VIEW_GRACE_MS, like a
 *    table slot (a program holds a view for nanoseconds). The key is kept
 *    beside the view and compared there.
 *
 * table[0] is the current table; table[1..ntables-1] are recent ones, newest
 * first, kept for stickiness without a per-flow insert (see bpf/chlb_stick.h).
 */
struct chlb_service {
	__u32 id;		       /* service id: stats index */
	__u8 fwd;		       /* enum chlb_fwd */
	__u8 hash_fields;	       /* enum chlb_hash_fields */
	__u8 ntables;		       /* 1..CHLB_HISTORY_MAX */
	__u8 flags;		       /* CHLB_SVC_F_* */
	__u32 table[CHLB_HISTORY_MAX]; /* slots in the tables outer map */
	__u8 encap_src[16];	       /* ipip outer source; all zero = derived per flow */
	__u16 mtu;		       /* ipip: egress MTU for the too-big check; 0 = no check */
	__u16 pad;
	__u32 vip_crc; /* IPv6 VIP: chlb_vip_crc(address), set by chlb_dp_set_service() */
};

/*
 * The service has a source allow-list (`allow`): a packet whose source is
 * in no prefix of the allow trie under the service's id is dropped
 * (CHLB_R_DROP_SOURCE) before any table or entry work. Without the flag
 * the trie is not looked up.
 */
#define CHLB_SVC_F_ALLOW   0x1
/*
 * The service keeps clients on their backend (`persist SECONDS`): new flows
 * look up the client's affinity entry (persist, below) first. Without the
 * flag neither persist map is looked up.
 */
#define CHLB_SVC_F_PERSIST 0x2

/*
 * Client persistence (IPVS -p, Cilium session affinity; docs/design.md,
 * "Client persistence"). persist_cfg (array, per service id): how long an
 * affinity entry holds and which source bits name a client (a netmask, as
 * four big-endian words; IPv4 in the first). persist (LRU hash): key
 * (service id, masked source) -> struct chlb_conn: the backend slot and
 * generation the client's first flow went to, last_ns its last use. A new
 * flow of a persist service follows the entry while it is younger than
 * timeout_ns and its backend LIVE, of that generation and taking new flows
 * (not CHLB_BE_F_NO_NEW); else the tables decide it by the hash of the
 * masked source - the same on every LB host - and the entry names that.
 */
struct chlb_persist_cfg {
	__u64 timeout_ns;
	__u32 mask[4];
};

struct chlb_persist_key {
	__u32 svc_id;
	__u8 addr[16]; /* the source & mask */
};
#define CHLB_PERSIST_REFRESH_NS (1000ull * 1000 * 1000) /* last_ns rewritten at most this often */

/*
 * allow (LPM trie, one for every service): key. The data are the service id
 * then the source address (IPv4 in the first 4 bytes, as struct
 * chlb_flow holds it), so prefixlen is 32 + the prefix's length: the id is
 * always matched whole. A service is of one family, and so are the
 * prefixes of its list (config/state.c refuses the other), so an IPv4 and
 * an IPv6 prefix never meet under one id.
 */
struct chlb_allow_key {
	__u32 prefixlen;
	__u32 svc_id;
	__u8 addr[16];
};
#define CHLB_ALLOW_PLEN(plen) (32u + (plen))

#define CHLB_VIP_TOMB	   0xffffffffu
#define CHLB_VIEW_GRACE_MS 100

/* A views element: the key beside its view (72 bytes: the array's element stride). */
struct chlb_vip_view {
	struct chlb_vip_key key;
	__u32 pad;
	struct chlb_service svc;
};
_Static_assert(sizeof(struct chlb_vip_view) % 8 == 0, "views are mmapped with this stride");

/* Where a key's probe starts in vip_index (BPF and userspace). */
static __always_inline __u32 chlb_vip_hash(const struct chlb_vip_key *k)
{
	const chlb_word_alias *w = (const chlb_word_alias *)k;
	__u32 a = w[0] * 0x9e3779b1u + w[1] * 0x85ebca77u + w[2] * 0xc2b2ae3du;
	__u32 b = w[3] * 0x27d4eb2fu + w[4] * 0x165667b1u;

	return chlb_fmix32(a ^ b);
}

enum chlb_backend_state {
	CHLB_BE_EMPTY = 0,
	CHLB_BE_LIVE = 1,
	CHLB_BE_DEAD = 2, /* removed; slot kept until nothing can name this generation */
};

#define CHLB_BE_F_NH_VALID  0x1 /* dmac/smac/ifindex resolved by the control plane */
/*
 * A slot belongs to one (service, backend address): flags bits 8..15 hold
 * the owning service's id, valid when CHLB_BE_F_OWNER is set. Control-plane
 * bookkeeping only (a restarted chlbd reads it back; the data plane never
 * looks at it): the value has no padding to spare, and its size must not
 * change, or pinned maps could not be adopted. Slots written by a chlbd
 * from before per-service slots have no owner.
 */
#define CHLB_BE_F_OWNER	    0x2
#define CHLB_BE_OWNER_SHIFT 8
/*
 * The backend takes no new flows: its effective weight is 0 (drained, or
 * down by its health check). Written with the table that leaves it out; the
 * data plane reads it only for client persistence, whose affinity entries
 * must not send new connections to such a backend.
 */
#define CHLB_BE_F_NO_NEW    0x4
_Static_assert(CHLB_MAX_SERVICES <= 256, "a service id fits the owner byte of a backend's flags");

/*
 * backends (array, CHLB_MAX_BACKENDS): value. One slot per (service, backend address).
 *
 * state and gen share one aligned 8-byte word, `check`: the data plane reads
 * it with one load (chlb_be_check_load), so it never pairs one occupant's
 * state with another's generation. Userspace writes a record with the
 * kernel's memcpy, which may store the word in pieces, so chlb_dp_set_backend
 * (user/lib/dp/dp_state.c) never changes state and the rest at once: a
 * record that becomes LIVE is written whole while not LIVE, then only its
 * state byte flips; one that stops being LIVE flips its state byte first.
 * The layout is the one pinned maps have always had (the union adds no byte).
 */
struct chlb_backend {
	__u8 addr[16]; /* IPv4 in the first 4 bytes */
	union {
		struct {
			__u8 family; /* CHLB_AF_INET / CHLB_AF_INET6; 0 = empty */
			__u8 state;  /* enum chlb_backend_state */
			__u16 flags; /* CHLB_BE_F_*; bits 8..15: the owning service id */
			__u32 gen;   /* bumped every time the slot gets a new occupant */
		};
		__u64 check; /* the four above as one word */
	};
	__u8 dmac[6];  /* next hop MAC */
	__u8 smac[6];  /* our MAC on the egress interface */
	__u32 ifindex; /* egress interface */
};
_Static_assert(sizeof(struct chlb_backend) == 40, "pinned backends maps keep their value size");
_Static_assert(__builtin_offsetof(struct chlb_backend, check) == 16, "the check word is aligned");

/*
 * conns (LRU hash): key is struct chlb_flow; value below. An entry is
 * written by the first non-SYN packet of a TCP connection whose SYN this LB
 * saw (and for other flows only when the view's tables disagree about them),
 * never by a SYN, and is never deleted by the data plane: only LRU eviction
 * removes one (chlbd deletes only held entries, CHLB_CONN_F_HELD). So
 * evictions = successful inserts (ct_insert) - entries.
 * 16 bytes, as before the flags: an entry pinned by an older data plane
 * reads as flags 0 (backend slots are < 2^16).
 */
struct chlb_conn {
	union {
		struct {
			__u16 backend; /* backend slot */
			__u16 flags;   /* CHLB_CONN_F_* */
			__u32 gen;     /* the slot's generation when the entry was written */
		};
		/*
		 * The three above as one word: the data plane rewrites an entry
		 * with one store of it and reads it with one load
		 * (bpf/chlb_stick.h), so another CPU never sees one backend with
		 * another's generation.
		 */
		__u64 word;
	};
	__u64 last_ns; /* coarse time of the last refresh: UDP, and TCP with a timeout */
};
_Static_assert(sizeof(struct chlb_conn) == 16, "pinned conns maps keep their value size");

/* The client sent FIN or RST: a later SYN for this 5-tuple is a reuse, decided afresh. */
#define CHLB_CONN_F_ENDED     0x1
/*
 * Held: a sync peer says this flow is a connection on a backend this host
 * does not have yet, and chlbd is waiting for it (user/lib/dp/dp_sync.c,
 * chlb_dp_sync_hold). The data plane drops the flow's packets (CHLB_R_HELD)
 * instead of deciding it from a partial table: TCP retransmits until chlbd
 * writes the real entry over this one, or deletes it when the wait ends.
 * A held entry names backend CHLB_CONN_HELD_SLOT, generation 0: a slot past
 * the backends array, which is never LIVE, so it never passes the data
 * plane's entry test and the held check costs only the stale-entry path.
 * last_ns is when it was written: one older than CHLB_CONN_HELD_MAX_NS is
 * not held any more (a stale entry, decided afresh), so a chlbd killed
 * while it waited leaves no flow dropped for good. It must exceed chlbd's
 * longest wait (60 s).
 */
#define CHLB_CONN_F_HELD      0x2
#define CHLB_CONN_HELD_SLOT   0xffffu
#define CHLB_CONN_HELD_MAX_NS (120ull * 1000000000ull)
_Static_assert(CHLB_MAX_BACKENDS <= CHLB_CONN_HELD_SLOT, "the held slot is past the backends");

/*
 * sync_ring (BPF ring buffer, only written when cfg_sync is set): a record
 * per entry the data plane inserts, rewrites or marks ENDED, for chlbd to
 * send to its sync peers (user/chlbd/sync/sync.c; docs/design.md, "Several LB
 * hosts"). The backend is this host's slot and generation: chlbd turns them
 * into the backend's address and the service's VIP before they leave the
 * host. A full ring drops the record (CHLB_R_SYNC_DROP).
 */
struct chlb_sync_rec {
	struct chlb_flow flow; /* the conns key */
	__u16 backend;	       /* backend slot */
	__u16 flags;	       /* CHLB_CONN_F_* as written */
	__u32 gen;	       /* the slot's generation in the entry */
};
_Static_assert(sizeof(struct chlb_sync_rec) == 48, "sync records have a fixed size");

/*
 * conn_filter (mmapable array, one element: struct chlb_conn_filter), per
 * flow key (chlb_conn_fkey):
 *
 *  - two banks of a blocked Bloom filter over the flows that may have a conns
 *    entry: three bits of one 64-bit word. Readers test the bank
 *    filter_bank names; writers set the bits in that bank before the conns
 *    entry is written, so a flow whose bits are not all set certainly has no
 *    entry. Bits are never cleared under a reader: chlbd rebuilds the idle
 *    bank from the entries and then flips filter_bank (user/lib/dp/dp_filter.c),
 *    so the filter does not fill up as connections come and go. While it
 *    does, filter_bank carries CHLB_FILTER_REBUILDING and writers set their
 *    bits in both banks (userspace writers always set both).
 *  - SYN stamps, four per bank word: the coarse time of the last SYN of a
 *    flow hashing there, and which table slot decided it. The flow's first
 *    non-SYN packet reads its stamp to know that its SYN was seen, and which
 *    table of the view decided it. A stamp is a hint: a collision costs an
 *    entry for a flow that did not need one, or (under a SYN flood during a
 *    change) a handshake decided by the wrong table.
 *
 * Each bank and the stamps are arrays of their own: a SYN reads one word of
 * the active bank (1 MiB) and writes a stamp it does not read, so a SYN
 * flood's one dependent random read is in 1 MiB, not in the 4 MiB of bits
 * and stamps interleaved; and since an insert sets the idle bank's bits only
 * during a rebuild, it touches one bank's line, not two
 * (docs/performance.md, "Why a SYN flood costs").
 *
 * Sizing: every filter hit costs an LRU probe, a DRAM miss or two on a
 * full table (syn_flood_cold in tests/bench: docs/performance.md). Three
 * bits per flow in 2^23 bits let ~3.7% of the SYNs through with 1M entries
 * (tests/unit/test_filter.c counts it).
 *
 * CHLB_CONN_FILTER_LAYOUT names the layout; a pinned filter of another
 * layout is not adopted on restart (user/lib/dp/dp_load.c) but rebuilt from the
 * entries, since its bits would answer "no entry" for entries it holds.
 */
#define CHLB_CONN_FILTER_BITS	23
#define CHLB_FILTER_ELEM_BITS	(CHLB_CONN_FILTER_BITS - 6)
#define CHLB_CONN_FILTER_WORDS	(1u << CHLB_FILTER_ELEM_BITS)
#define CHLB_SYN_STAMPS		(CHLB_CONN_FILTER_WORDS * 4)
#define CHLB_CONN_FILTER_LAYOUT "k3b2s4jp"

struct chlb_conn_filter {
	__u64 bank[2][CHLB_CONN_FILTER_WORDS];
	__u32 syn[CHLB_SYN_STAMPS]; /* chlb_syn_stamp(); 0: none */
};

/*
 * filter_bank's value: bit 0 the bank readers test; CHLB_FILTER_REBUILDING
 * from before a rebuild's grace period to its flip (dp_filter.c): writers
 * then set their bits in the other bank too.
 */
#define CHLB_FILTER_REBUILDING 2u

/*
 * A SYN stamp: bits 31..3 a reading of the data plane's SYN clock (jiffies
 * when the kernel's HZ is known - one load - else the coarse time in units
 * of 2^CHLB_SYN_KTIME_SHIFT ns), bits 2..0 the low bits of the table slot
 * that decided the SYN. A service's table slots are CHLB_SLOTS_PER_SERVICE
 * (<= 8) consecutive numbers, so their low three bits tell them apart.
 * 29 bits of clock wrap after 6 days at HZ 1000 (a year in ktime units), so
 * an old stamp looks fresh again only for one window in that time. 0 means
 * no SYN was stamped there.
 */
#define CHLB_SYN_FRESH_S     32 /* covers SYN-ACK retransmissions (1+2+4+8+16 s) */
#define CHLB_SYN_KTIME_SHIFT 26
_Static_assert(CHLB_SLOTS_PER_SERVICE <= 8, "a SYN stamp names a table slot in 3 bits");

static __always_inline __u32 chlb_syn_stamp(__u32 clock, __u32 table_slot)
{
	__u32 st = (clock << 3) | (table_slot & 7);

	return st ? st : 8; /* never "none": one tick later is as good */
}

/* Was the stamp written at most `window` ticks of the SYN clock before `clock`? */
static __always_inline int chlb_syn_fresh(__u32 stamp, __u32 clock, __u32 window)
{
	__u32 age = (clock - (stamp >> 3)) & 0x1fffffff;

	return stamp && age <= window;
}

/*
 * The flow key the filter and the stamps use: every field of the 5-tuple
 * and nothing of the service's settings, so a live change of the hash
 * fields keeps finding the entries.
 */
static __always_inline __u32 chlb_conn_fkey(const struct chlb_flow *f)
{
	const chlb_word_alias *w = (const chlb_word_alias *)f;
	__u32 a = w[0] ^ w[1] * 0x85ebca77u ^ w[2] * 0xc2b2ae3du ^ w[3] * 0x27d4eb2fu;
	__u32 b = w[4] ^ w[5] * 0x85ebca77u ^ w[6] * 0xc2b2ae3du ^ w[7] * 0x27d4eb2fu;

	return chlb_fmix32(a * 0x9e3779b1u ^ b ^ w[8] * 0x165667b1u ^ w[9]);
}

/* The filter element of a flow key (its top bits) ... */
static __always_inline __u32 chlb_filter_word(__u32 fk)
{
	return fk >> (32 - CHLB_FILTER_ELEM_BITS);
}

/*
 * ... its three bits in a bank word: 32 bits of key hold the 17-bit element
 * index and two 6-bit positions (the low 12 bits); the third position is the
 * top of a multiplicative hash of the whole key, which varies with the low
 * bits inside one word ...
 */
static __always_inline __u64 chlb_filter_mask(__u32 fk)
{
	return (1ull << (fk & 63)) | (1ull << ((fk >> 6) & 63)) |
	       (1ull << ((fk * 0x9e3779b1u) >> 26));
}

/* ... and its SYN stamp: the word's four, told apart by two bits the positions leave. */
static __always_inline __u32 chlb_syn_index(__u32 fk)
{
	return chlb_filter_word(fk) << 2 | ((fk >> 12) & 3);
}

/*
 * insert_budget (per-CPU array, one element, not pinned): the token bucket
 * that bounds the entries written for flows whose SYN this host did not see
 * and that the view's tables disagree about (an ACK or UDP flood after a
 * change; docs/design.md, "The insert budget"). tokens refill at
 * cfg_moved_inserts_per_s per CPU up to one second's worth, counted on the
 * SYN clock (tick).
 */
struct chlb_insert_budget {
	__u32 tick;
	__u32 tokens;
};
#define CHLB_MOVED_INSERTS_PER_S 65536 /* per CPU: ~8% of it at ~1.2 us an insert */

/*
 * Per service and per backend, per CPU. packets, bytes and new_flows count
 * what was forwarded; no_route what was dropped because the backend had no
 * route (CHLB_R_NO_ROUTE); drop_source (services only) what came from a
 * source the service's allow-list leaves out (CHLB_R_DROP_SOURCE). A pinned
 * copy of another size (before no_route, before drop_source)
 * is recreated at load (user/lib/dp/dp_load.c): its counters restart at zero.
 */
struct chlb_counters {
	__u64 packets;
	__u64 bytes;
	__u64 new_flows;
	__u64 no_route;
	__u64 drop_source; /* services: dropped, the source is not in the allow-list */
};

/*
 * Health probes through the data path (`check ... via vip`): chlbd's
 * checker sets SO_MARK = CHLB_PROBE_MARK(slot) on a probe socket connected
 * to VIP:port; the TC egress program chlb_probe_steer (bpf/chlb.bpf.c) on
 * the interface the VIP's route leaves by forwards every packet carrying
 * such a mark to backend slot `slot` exactly as client traffic to that
 * backend is forwarded (MAC rewrite, or the service's encapsulation).
 * The magic in the high 16 bits keeps other marks (firewalls, VRFs)
 * untouched; the low 16 bits hold the slot (CHLB_MAX_BACKENDS <= 65536).
 */
#define CHLB_PROBE_MARK_MAGIC	   0x6368u /* 'ch' */
#define CHLB_PROBE_MARK_MASK	   0xffff0000u
#define CHLB_PROBE_MARK(slot)	   ((CHLB_PROBE_MARK_MAGIC << 16) | ((__u32)(slot)&0xffffu))
#define CHLB_PROBE_MARK_SLOT(mark) ((__u32)(mark)&0xffffu)
#define CHLB_IS_PROBE_MARK(mark) \
	(((__u32)(mark)&CHLB_PROBE_MARK_MASK) == (CHLB_PROBE_MARK_MAGIC << 16))
_Static_assert(CHLB_MAX_BACKENDS <= 65536, "a probe mark names a backend slot in 16 bits");

/* Global, per CPU: why each packet ended as it did. Names in chlb_reason_names. */
enum chlb_reason {
	CHLB_R_FORWARDED = 0,  /* sent to a backend */
	CHLB_R_PASS_NOT_IP,    /* not IPv4/IPv6: passed */
	CHLB_R_PASS_NOT_VIP,   /* no VIP matched: passed */
	CHLB_R_PASS_NO_NEIGH,  /* next hop unresolved: passed so the kernel resolves it */
	CHLB_R_PASS_FRAGMENT,  /* fragment of a 5-tuple service: passed to the kernel */
	CHLB_R_PARSE_ETH,      /* truncated Ethernet / VLAN header */
	CHLB_R_PARSE_VLAN,     /* more than two VLAN tags */
	CHLB_R_PARSE_IP4,      /* truncated or malformed IPv4 header */
	CHLB_R_PARSE_IP6,      /* truncated IPv6 header or extension header chain */
	CHLB_R_PARSE_L4,       /* truncated TCP/UDP/ICMP header */
	CHLB_R_ICMP_HANDLED,   /* ICMP error steered to the flow's backend */
	CHLB_R_NO_BACKEND,     /* dropped: the service has no usable backend */
	CHLB_R_TOO_BIG,	       /* ipip: answered with ICMP frag-needed / packet-too-big */
	CHLB_R_CT_HIT,	       /* connection-table entry used */
	CHLB_R_CT_MISS,	       /* no entry, decided from the tables */
	CHLB_R_CT_INSERT,      /* entry inserted: handshake ACK, or tables disagree */
	CHLB_R_CT_STALE,       /* entry ignored: backend gone or flow idle */
	CHLB_R_SYN_KEPT,       /* SYN for a connection that has not ended: follows its entry */
	CHLB_R_SYN_REUSE,      /* SYN for an ended (FIN/RST) connection's 5-tuple: decided afresh */
	CHLB_R_DROP_TCP_FLAGS, /* SYN with RST or FIN: no real stack sends it; dropped */
	CHLB_R_PASS_ICMP_LOCAL, /* ICMP error not sent to the VIP it quotes (to the LB): passed */
	CHLB_R_ERROR,		/* internal: helper failed */
	CHLB_R_NO_ROUTE,	/* dropped: the FIB has no usable route to the backend */
	CHLB_R_PROBE_STEERED,	/* a marked health probe sent to the backend its mark names */
	CHLB_R_PROBE_BAD_SLOT,	/* dropped: a probe mark names a slot that is not LIVE */
	CHLB_R_PROBE_DROPPED,	/* dropped: a probe not to a VIP, malformed, or without next hop */
	CHLB_R_SYNC_DROP,	/* a sync record not written: the ring buffer was full */
	CHLB_R_HELD,		/* dropped: the flow's entry is held, waiting for a synced one */
	CHLB_R_CT_NO_BUDGET,   /* tables disagree, no SYN seen: the CPU's insert budget was spent */
	CHLB_R_DROP_SOURCE,    /* dropped: the source is not in the service's allow-list */
	CHLB_R_PERSIST_HIT,    /* a new flow sent to its client's backend by the affinity entry */
	CHLB_R_PERSIST_INSERT, /* an affinity entry created (evictions = these - entries) */
	CHLB_R_MAX
};

struct chlb_global_stats {
	__u64 reason[CHLB_R_MAX];
};

#ifndef __bpf__
static const char *const chlb_reason_names[CHLB_R_MAX] = {
	[CHLB_R_FORWARDED] = "forwarded",
	[CHLB_R_PASS_NOT_IP] = "pass_not_ip",
	[CHLB_R_PASS_NOT_VIP] = "pass_not_vip",
	[CHLB_R_PASS_NO_NEIGH] = "pass_no_neigh",
	[CHLB_R_PASS_FRAGMENT] = "pass_fragment",
	[CHLB_R_PARSE_ETH] = "parse_eth",
	[CHLB_R_PARSE_VLAN] = "parse_vlan",
	[CHLB_R_PARSE_IP4] = "parse_ip4",
	[CHLB_R_PARSE_IP6] = "parse_ip6",
	[CHLB_R_PARSE_L4] = "parse_l4",
	[CHLB_R_ICMP_HANDLED] = "icmp_handled",
	[CHLB_R_NO_BACKEND] = "drop_no_backend",
	[CHLB_R_TOO_BIG] = "too_big",
	[CHLB_R_CT_HIT] = "ct_hit",
	[CHLB_R_CT_MISS] = "ct_miss",
	[CHLB_R_CT_INSERT] = "ct_insert",
	[CHLB_R_CT_STALE] = "ct_stale",
	[CHLB_R_SYN_KEPT] = "syn_kept",
	[CHLB_R_SYN_REUSE] = "syn_reuse",
	[CHLB_R_DROP_TCP_FLAGS] = "drop_tcp_flags",
	[CHLB_R_PASS_ICMP_LOCAL] = "pass_icmp_local",
	[CHLB_R_ERROR] = "error",
	[CHLB_R_NO_ROUTE] = "drop_no_route",
	[CHLB_R_PROBE_STEERED] = "probe_steered",
	[CHLB_R_PROBE_BAD_SLOT] = "probe_bad_slot",
	[CHLB_R_PROBE_DROPPED] = "probe_dropped",
	[CHLB_R_SYNC_DROP] = "sync_drop",
	[CHLB_R_HELD] = "held",
	[CHLB_R_CT_NO_BUDGET] = "ct_no_budget",
	[CHLB_R_DROP_SOURCE] = "drop_source",
	[CHLB_R_PERSIST_HIT] = "persist_hit",
	[CHLB_R_PERSIST_INSERT] = "persist_insert",
};
#endif

#endif /* CHLB_MAPS_H */
