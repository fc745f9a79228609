/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The desired state: services, their options and backends, and each jump
 * service's bucket order. Changed only through chlb_state_exec() (one
 * grammar statement) so every change is validated the same way whether it
 * came from the CLI, a config file or the state file. Callers get
 * transactions by working on a chlb_state_copy() and keeping it only when
 * every statement (and chlb_state_finalize()) succeeded.
 */
#ifndef CHLB_STATE_H
#define CHLB_STATE_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include "config/check.h"
#include "config/grammar.h"
#include "table/build.h"
#include "table/vnodes_auto.h"

#define CHLB_STATE_MAX_BYTES (64u << 20) /* refuse state/config files larger than this */

/* A backend in the desired state (the other layers' backends: table/build.h). */
struct chlb_cfg_be {
	struct chlb_addr addr;
	char name[CHLB_BE_NAME_LEN]; /* canonical address text: the builders' name */
	__u32 weight;
	__u32 bucket_req; /* jump: `bucket N` of this transaction as N + 1, 0: none;
			   * chlb_state_finalize() places it in the order */
	/*
	 * Overrides of the service's check (only check->set's fields), owned;
	 * NULL: none, as for most backends. Out of line: the check is ~280
	 * bytes, and every change copies and walks every backend of every
	 * service (chlb_be_check() reads it).
	 */
	struct chlb_check *check;
};

/* b's check overrides: b->check, or an empty set (set 0) when it has none. */
const struct chlb_check *chlb_be_check(const struct chlb_cfg_be *b);

struct chlb_svc_cfg {
	struct chlb_vip vip;
	__u8 algo, fwd, hash;
	__u16 mtu;
	__u32 vnodes, table_size; /* vnodes: the K the ring is built with (auto: the K picked) */
	__u32 vnodes_target;	  /* `vnodes auto`: its balance target in thousandths; 0: K given */
	bool vnodes_dirty;	  /* auto: the set may have changed; finalize picks K again */
	double vnodes_balance;	  /* auto: the balance of the K picked */
	bool vnodes_met;	  /* auto: it meets the target (else the largest K allowed) */
	struct chlb_addr encap_src;
	__u32 nbe, cap;
	struct chlb_cfg_be *be;
	struct chlb_jump_order order; /* jump: bucket -> backend name */
	bool order_explicit;	      /* order restored from `buckets` (state file) */
	bool order_pinned;	      /* the text gave buckets: chlb_state_inherit() keeps them */
	bool order_dirty;	      /* a statement may have changed it: finalize syncs it */
	__u32 weight_norm;	      /* the heaviest configured weight: jump's full threshold */
	bool force;		      /* `force`: the VIP may be an address of chlbd's host */
	struct chlb_check check;      /* health check (type NONE: none) */
	struct chlb_health_policy health; /* on-down, slow start, panic */
	__u32 persist_s;		  /* client persistence timeout; 0: off */
	__u8 persist_plen;		  /* its netmask's length (32 / 128: one address) */
	__u32 nallow;			  /* source allow-list; 0: every source */
	struct chlb_prefix allow[CHLB_ALLOW_MAX];
};

struct chlb_state {
	__u32 nsvc, cap;
	struct chlb_svc_cfg *svc;
	/*
	 * Where chlb_state_find() starts: after its last hit. A lookup cache,
	 * written even through a const state: lookups come in the order of
	 * another state's services, mostly this one's, so each finds its
	 * service at once (a change looked every service up in every other:
	 * O(services^2) vip compares, ~1 ms at 250 services).
	 */
	__u32 find_next;
};

void chlb_state_init(struct chlb_state *st);
void chlb_state_free(struct chlb_state *st);
/* A service's own memory (backends, their overrides, the jump order); s zeroed. */
void chlb_svc_cfg_free(struct chlb_svc_cfg *s);
int chlb_state_copy(struct chlb_state *dst, const struct chlb_state *src);
/*
 * st's service vip becomes a copy of `from` (another state's), or leaves st
 * when from is NULL: a service put back to what serves. Out of memory
 * leaves it out.
 */
void chlb_state_put_svc(struct chlb_state *st, const struct chlb_vip *vip,
			const struct chlb_svc_cfg *from);

struct chlb_svc_cfg *chlb_state_find(const struct chlb_state *st, const struct chlb_vip *vip);
struct chlb_cfg_be *chlb_svc_find_be(const struct chlb_svc_cfg *svc, const struct chlb_addr *a);

/*
 * Applies one change statement. 0, or an error with err naming the offending
 * token: -ENOENT (no such service or backend) and -EEXIST (already there)
 * when the statement does not fit the state, -ENOMEM, else -EINVAL (-E2BIG:
 * over a limit): a bad value, which no state would take
 * (chlb_state_bad_value()).
 */
int chlb_state_exec(struct chlb_state *st, const struct chlb_cmd *c, char *err, size_t errlen);

/*
 * Lookups by VIP and by (service, backend address) for many statements in a
 * row (chlb_state_exec_text()): built from st, kept in step by
 * chlb_state_exec_ix(), valid only while st changes through it alone.
 * chlb_state_exec_ix() with a NULL index is chlb_state_exec().
 */
struct chlb_state_ix;
struct chlb_state_ix *chlb_state_ix_new(const struct chlb_state *st);
void chlb_state_ix_free(struct chlb_state_ix *ix);
int chlb_state_exec_ix(struct chlb_state *st, struct chlb_state_ix *ix, const struct chlb_cmd *c,
		       char *err, size_t errlen);

/* Was rc (from chlb_state_exec or _exec_text) a bad value, not a conflict with the state? */
static inline bool chlb_state_bad_value(int rc)
{
	return rc < 0 && rc != -ENOENT && rc != -EEXIST && rc != -ENOMEM;
}

/*
 * After a batch of statements: brings jump orders in line with the backend
 * sets, picks K for `vnodes auto` rings whose set changed
 * (chlb_vnodes_pick: a function of the set, so the history of statements
 * plays no part), checks the limits that span services. 0 or -errno with err.
 */
int chlb_state_finalize(struct chlb_state *st, char *err, size_t errlen);

/*
 * For `apply`: keep cur's jump bucket orders for services the file re-declares
 * without buckets of its own (a file with `bucket N`, as save writes, is
 * the numbering wanted: a state saved on another host builds its table).
 */
void chlb_state_inherit(struct chlb_state *next, const struct chlb_state *cur);

/*
 * Same options, backends, weights and bucket order? (nothing to rebuild)
 * Health-check settings are not compared: they never change the table.
 */
bool chlb_svc_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b);
/*
 * Same health-check settings? The policy (on-down, slow-start, panic), and
 * the check each backend gets (chlb_check_effective()), backends matched by
 * address. False also when the backend sets differ. chlbd restarts the
 * checker of a service where this is false.
 */
bool chlb_svc_health_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b);
/*
 * Options that the view carries (fwd, hash, mtu, encap-src, the allow-list,
 * persistence) differ?
 */
bool chlb_svc_view_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b);
/* The same allow-list, prefix by prefix in order? */
bool chlb_svc_allow_equal(const struct chlb_svc_cfg *a, const struct chlb_svc_cfg *b);

/*
 * s's table with the real builders: be[i].slot (i < s->nbe) set by the
 * caller, the rest (weight, name, jump bucket order) taken from s.
 * 0, or the builders' -errno with their message in err.
 */
int chlb_svc_build(const struct chlb_svc_cfg *s, struct chlb_table_be *be, struct chlb_table *t,
		   char *err, size_t errlen);
/* The same, starting from prev (table/build.h, struct chlb_table_prev; NULL: none). */
int chlb_svc_build_from(const struct chlb_svc_cfg *s, struct chlb_table_be *be,
			const struct chlb_table_prev *prev, struct chlb_table *t, char *err,
			size_t errlen);

/*
 * Each backend's jump bucket: bucket[i] for s->be[i] (bucket holds s->nbe
 * entries), CHLB_TOMBSTONE when it has none (not jump or jtable). 0 or -ENOMEM.
 */
int chlb_svc_buckets(const struct chlb_svc_cfg *s, __u32 *bucket);

/* ---- text form (state_io.c) ---- */

/* An allow-list as the grammar writes it: "10.0.0.0/8,192.0.2.7/32", "any" when n is 0. */
#define CHLB_ALLOW_TEXT_MAX (CHLB_ALLOW_MAX * 45 + 1)
const char *chlb_allow_fmt(const struct chlb_prefix *p, __u32 n, char *buf, size_t len);

/* " persist S[ netmask /N]", or " persist off": as the grammar writes it. */
#define CHLB_PERSIST_TEXT_MAX 48
const char *chlb_persist_fmt(const struct chlb_svc_cfg *s, char *buf, size_t len);

/* The state in the grammar, services and backends sorted; malloc'd, NUL-terminated. */
char *chlb_state_format(const struct chlb_state *st, bool trailer);

/*
 * Executes every statement of text into st (caller passes a copy). Stops at
 * the first bad line: chlb_state_exec()'s error (the grammar's -EINVAL for a
 * line that does not parse) and err = "NAME:LINE: message". Only change
 * statements are allowed. Finalizes.
 */
int chlb_state_exec_text(struct chlb_state *st, const char *text, const char *name, char *err,
			 size_t errlen);

/*
 * Persisting, in steps, so a caller can do its own work in between (chlbd:
 * check, then apply while another thread stages; publish once both are
 * done; see user/chlbd/commit.c):
 *   chlb_state_check(): touches nothing and waits for no disk (the mount's
 *     flags, an access check, the superblock's free-block counter): fails
 *     on a read-only or unwritable directory, or one with less room than
 *     an upper bound on st's text ("state directory '...' is full (...)"),
 *     and refuses a directory that is a symlink, is writable by group or
 *     others, or is owned by neither root nor our uid
 *     (chlb_state_dir_open()). Leaves the directory open in p.
 *   chlb_state_stage(): st formatted into PATH.tmp, written and fsynced.
 *     Uses only st and p: it may run on another thread. PATH.tmp is created
 *     with O_EXCL|O_NOFOLLOW under the directory fd: whatever is at that
 *     name (a crash's leftover, a planted symlink) is removed, never
 *     followed.
 *   chlb_state_prepare(): check, then PATH.tmp written (page cache only),
 *     not fsynced: the steps of one thread.
 *   chlb_state_publish(): PATH.tmp fsynced unless staged, PATH becomes
 *     PATH.prev (a hard link: the last good copy), PATH.tmp is renamed over
 *     PATH, the directory fsynced. Needs no new space.
 *   chlb_state_abort(): PATH.tmp removed, nothing published.
 * Publish and abort close the directory whatever the outcome; after a
 * failed check or prepare nothing is left open.
 */
struct chlb_state_pending {
	int dirfd;
	int fd;	      /* PATH.tmp, written, not yet fsynced; -1 when closed */
	bool created; /* tmp exists and is ours */
	size_t need;  /* the free space the check asked for (bytes) */
	char dir[4096];
	char base[256], tmp[264], prev[264];
};
void chlb_state_pending_init(struct chlb_state_pending *p);
int chlb_state_check(const struct chlb_state *st, const char *path, struct chlb_state_pending *p,
		     char *err, size_t errlen);
int chlb_state_stage(const struct chlb_state *st, struct chlb_state_pending *p, char *err,
		     size_t errlen);
int chlb_state_prepare(const struct chlb_state *st, const char *path, struct chlb_state_pending *p,
		       char *err, size_t errlen);
int chlb_state_publish(struct chlb_state_pending *p, char *err, size_t errlen);
void chlb_state_abort(struct chlb_state_pending *p);

/* Both steps at once. */
int chlb_state_save_file(const struct chlb_state *st, const char *path, char *err, size_t errlen);

/*
 * PATH's directory, opened O_DIRECTORY|O_NOFOLLOW, or -errno with err: the
 * open's, or -EPERM if it is not safe to keep the state in (writable by
 * group or others, or owned by neither root nor our uid).
 */
int chlb_state_dir_open(const char *path, char *err, size_t errlen);

/*
 * Loads a state file written by chlb_state_save_file. A truncated or corrupt
 * file (missing or wrong checksum trailer) is never taken as empty: the last
 * good copy (PATH.prev) is tried, and *used_prev set. Missing PATH and
 * PATH.prev = first start, empty state. -errno with err when nothing good exists,
 * naming every file that stands in the way (both, when both are bad). The
 * directory is checked as chlb_state_dir_open() does.
 */
int chlb_state_load_file(struct chlb_state *st, const char *path, bool *used_prev, char *err,
			 size_t errlen);

/* Reads a whole file (config) with a size limit; malloc'd text, or NULL with err and errno. */
char *chlb_read_file(const char *path, size_t max, char *err, size_t errlen);

/* Is the text's checksum trailer present and right? */
bool chlb_state_text_intact(const char *text);

#endif /* CHLB_STATE_H */
