// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The desired state as text: `chlbctl save` output, the state file, config
 * files. The state file ends with a checksum trailer (a comment, so the
 * text stays valid input for `apply -f`): a truncated or corrupt file is
 * detected and never mistaken for "no services".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "config/state.h"
#include "base/err.h"
#include "base/util.h"

#define TRAILER "# chlb-state end: crc32c "

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static int cmp_svc(const void *a, const void *b)
{
	const struct chlb_svc_cfg *const *x = a, *const *y = b;

	return chlb_vip_cmp(&(*x)->vip, &(*y)->vip);
}

static int cmp_be(const void *a, const void *b)
{
	return chlb_addr_cmp(&((const struct chlb_cfg_be *)a)->addr,
			     &((const struct chlb_cfg_be *)b)->addr);
}

/* Bucket k held by backend name: the order sorted by (name, k). */
struct bucket_ref {
	const char *name;
	__u32 k;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct bucket_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->k > y->k) - (x->k < y->k);
}

/*
 * " bucket k" of name (one bucket per backend: the sync keeps one). A sorted
 * index, not a scan of
 * the order per backend: every request saves the state, and at 1000
 * backends x 1000 buckets that scan was ~1M strcmp, several ms per reply.
 */
static void format_buckets(struct sbuf *b, const struct bucket_ref *ref, __u32 n, const char *name)
{
	__u32 lo = 0, hi = n;

	while (lo < hi) { /* first entry >= name */
		__u32 mid = lo + (hi - lo) / 2;

		if (strcmp(ref[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && !strcmp(ref[lo].name, name))
		sb_printf(b, " bucket %u", ref[lo].k);
}

const char *chlb_persist_fmt(const struct chlb_svc_cfg *s, char *buf, size_t len)
{
	__u8 bits = s->vip.addr.family == CHLB_AF_INET ? 32 : 128;

	if (!s->persist_s)
		snprintf(buf, len, " persist off");
	else if (s->persist_plen == bits)
		snprintf(buf, len, " persist %u", s->persist_s);
	else
		snprintf(buf, len, " persist %u netmask /%u", s->persist_s, s->persist_plen);
	return buf;
}

const char *chlb_allow_fmt(const struct chlb_prefix *p, __u32 n, char *buf, size_t len)
{
	size_t at = 0;
	char one[64];

	snprintf(buf, len, "%s", n ? "" : "any");
	for (__u32 i = 0; i < n && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s", i ? "," : "",
				 chlb_fmt_prefix(&p[i], one, sizeof(one)));

		if (w < 0)
			break;
		at += (size_t)w;
	}
	return buf;
}

static void format_svc(struct sbuf *b, const struct chlb_svc_cfg *s)
{
	struct bucket_ref *ref = NULL;
	__u32 nref = 0;
	char vip[CHLB_ADDRSTR], a[CHLB_ADDRSTR];
	char ck[CHLB_CHECK_TEXT_MAX]; /* the check's options */
	char pe[CHLB_PERSIST_TEXT_MAX];
	struct chlb_cfg_be *be;

	chlb_fmt_vip(&s->vip, vip, sizeof(vip));
	sb_printf(b, "service add %s algo %s", vip, chlb_algo_name(s->algo));
	if (s->algo == CHLB_ALGO_RING && s->vnodes_target) {
		char t[16];

		/* the target, not the K picked: K is a function of it and the set */
		sb_printf(b, " vnodes auto");
		if (s->vnodes_target != CHLB_VNODES_TARGET_DEFAULT)
			sb_printf(b, " target %s", chlb_fmt_milli(s->vnodes_target, t, sizeof(t)));
	} else if (s->algo == CHLB_ALGO_RING) {
		sb_printf(b, " vnodes %u", s->vnodes);
	}
	if (chlb_algo_has_table(s->algo))
		sb_printf(b, " table %u", s->table_size);
	if (chlb_algo_has_order(s->algo) && s->order.n)
		sb_printf(b, " buckets %u", s->order.n);
	sb_printf(b, " fwd %s hash %s", chlb_fwd_name(s->fwd), chlb_hash_name(s->hash));
	if (s->mtu)
		sb_printf(b, " mtu %u", s->mtu);
	if (s->encap_src.family)
		sb_printf(b, " encap-src %s", chlb_fmt_addr(&s->encap_src, a, sizeof(a)));
	if (s->force)
		sb_printf(b, " force");
	if (s->nallow) {
		char al[CHLB_ALLOW_TEXT_MAX];

		sb_printf(b, " allow %s", chlb_allow_fmt(s->allow, s->nallow, al, sizeof(al)));
	}
	if (s->persist_s)
		sb_printf(b, "%s", chlb_persist_fmt(s, pe, sizeof(pe)));
	/* nothing when no check is configured: files from before checks stay byte-identical */
	sb_printf(b, "%s", chlb_check_fmt(&s->check, true, ck, sizeof(ck)));
	sb_printf(b, "%s\n", chlb_health_fmt(&s->health, ck, sizeof(ck)));
	be = malloc((s->nbe ? s->nbe : 1) * sizeof(*be));
	if (!be) {
		b->oom = true;
		return;
	}
	if (s->nbe) /* s->be is NULL for a service without backends */
		memcpy(be, s->be, s->nbe * sizeof(*be));
	qsort(be, s->nbe, sizeof(*be), cmp_be);
	if (chlb_algo_has_order(s->algo) && s->order.n) {
		ref = malloc(s->order.n * sizeof(*ref));
		if (!ref) {
			free(be);
			b->oom = true;
			return;
		}
		for (nref = 0; nref < s->order.n; nref++) {
			ref[nref].name = s->order.name[nref];
			ref[nref].k = nref;
		}
		qsort(ref, nref, sizeof(*ref), cmp_ref);
	}
	for (__u32 i = 0; i < s->nbe; i++) {
		sb_printf(b, "backend add %s %s weight %u", vip, be[i].name, be[i].weight);
		format_buckets(b, ref, nref, be[i].name);
		sb_printf(b, "%s\n", chlb_check_fmt(chlb_be_check(&be[i]), false, ck, sizeof(ck)));
	}
	free(ref);
	free(be);
}

char *chlb_state_format(const struct chlb_state *st, bool trailer)
{
	const struct chlb_svc_cfg **order;
	struct sbuf b = { 0 };

	order = malloc((st->nsvc ? st->nsvc : 1) * sizeof(*order));
	if (!order)
		return NULL;
	for (__u32 i = 0; i < st->nsvc; i++)
		order[i] = &st->svc[i];
	qsort(order, st->nsvc, sizeof(*order), cmp_svc);
	sb_printf(&b, "# chlb state: %u services; one statement per line (chlbctl grammar)\n",
		  st->nsvc);
	for (__u32 i = 0; i < st->nsvc; i++)
		format_svc(&b, order[i]);
	free(order);
	if (trailer && !b.oom)
		sb_printf(&b, TRAILER "%08x\n", chlb_crc32c(b.p, (__u32)b.len));
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

bool chlb_state_text_intact(const char *text)
{
	size_t len = strlen(text);
	const char *last;
	unsigned int crc;

	if (len < 2 || text[len - 1] != '\n')
		return false;
	for (last = text + len - 2; last > text && last[-1] != '\n'; last--)
		;
	if (strncmp(last, TRAILER, strlen(TRAILER)) ||
	    sscanf(last + strlen(TRAILER), "%8x", &crc) != 1)
		return false;
	return chlb_crc32c(text, (__u32)(last - text)) == crc;
}

int chlb_state_exec_text(struct chlb_state *st, const char *text, const char *name, char *err,
			 size_t errlen)
{
	/*
	 * The index from the second statement on: a single change (most
	 * requests) searches its service and backend in place instead of
	 * hashing every backend of every service (0.3-0.5 ms at 3,000).
	 */
	struct chlb_state_ix *ix = NULL;
	const char *p = text;
	unsigned int lineno = 0, done = 0;
	char msg[CHLB_ERR_MAX];
	int r = 0;

	while (*p) {
		struct chlb_cmd c;

		lineno++;
		r = chlb_parse_next(&p, &c, msg, sizeof(msg));
		if (r) {
			r = chlb_err(err, errlen, r, "%s:%u: %s", name, lineno, msg);
			break;
		}
		if (c.kind == CHLB_CMD_NONE)
			continue;
		if (!chlb_cmd_is_change(c.kind)) {
			r = chlb_err(err, errlen, -EINVAL,
				     "%s:%u: only service/backend add, set, del belong in a "
				     "config file",
				     name, lineno);
			break;
		}
		if (done++ == 1 && !(ix = chlb_state_ix_new(st))) {
			r = chlb_err(err, errlen, -ENOMEM, "%s: out of memory", name);
			break;
		}
		r = chlb_state_exec_ix(st, ix, &c, msg, sizeof(msg));
		if (r) {
			r = chlb_err(err, errlen, r, "%s:%u: %s", name, lineno, msg);
			break;
		}
	}
	chlb_state_ix_free(ix);
	if (!r) {
		r = chlb_state_finalize(st, msg, sizeof(msg));
		if (r)
			r = chlb_err(err, errlen, r, "%s: %s", name, msg);
	}
	return r;
}

/* The whole file at path into *out (malloc'd, NUL-terminated): 0 or -errno with err. */
static int read_file(const char *path, size_t max, char **out, char *err, size_t errlen)
{
	size_t got = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	*out = NULL;
	if (fd < 0 || !buf) {
		rc = chlb_syserr(err, errlen, buf ? -errno : -ENOMEM, "couldn't open '%s'", path);
		free(buf);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	/* read to EOF: pipes (batch -f -) have no size */
	for (;;) {
		ssize_t n;

		if (got == cap) {
			char *p = cap >= max ? NULL : realloc(buf, cap * 2 + 1);

			if (!p) {
				free(buf);
				close(fd);
				return chlb_err(err, errlen, cap >= max ? -EFBIG : -ENOMEM,
						"'%s': larger than %zu bytes", path, max);
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) { /* a read error is not the end: never parse half a file */
			int rc = -errno;

			free(buf);
			close(fd);
			return chlb_syserr(err, errlen, rc, "'%s': read failed", path);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	if (strlen(buf) != got) {
		/* name the line, as a parse error would: a stray byte is found by it */
		unsigned int line = 1;

		for (const char *q = buf; *q; q++)
			line += *q == '\n';
		free(buf);
		return chlb_err(err, errlen, -EINVAL, "%s:%u: contains a NUL byte", path, line);
	}
	*out = buf;
	return 0;
}

char *chlb_read_file(const char *path, size_t max, char *err, size_t errlen)
{
	char *text;
	int rc = read_file(path, max, &text, err, errlen);

	if (rc)
		errno = -rc;
	return text;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* "/a/b/state" -> dir "/a/b" and base "state" (dir "." for a bare name) */
static int split_path(const char *path, char *dir, size_t dlen, char *base, size_t blen)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		snprintf(dir, dlen, ".");
		n = (size_t)snprintf(base, blen, "%s", path);
	} else {
		size_t d = slash == path ? 1 : (size_t)(slash - path);

		if (d >= dlen)
			return -ENAMETOOLONG;
		memcpy(dir, path, d);
		dir[d] = '\0';
		n = (size_t)snprintf(base, blen, "%s", slash + 1);
	}
	/* room for ".prev" and ".tmp" */
	return !base[0] ? -EINVAL : n + 6 > blen ? -ENAMETOOLONG : 0;
}

int chlb_state_dir_open(const char *path, char *err, size_t errlen)
{
	char dir[4096], base[256];
	struct stat sb;
	int fd, e;

	if (split_path(path, dir, sizeof(dir), base, sizeof(base)))
		return chlb_err(err, errlen, -EINVAL, "'%s': not a usable state file name", path);
	/* the directory itself may not be a symlink someone swapped in */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ELOOP || e == ENOTDIR)
			return chlb_err(err, errlen, -ENOTDIR,
					"state directory '%s' is not a directory (a symlink is "
					"refused)",
					dir);
		return chlb_syserr(err, errlen, -e, "couldn't open state directory '%s'", dir);
	}
	if (fstat(fd, &sb)) {
		e = errno;
		close(fd);
		return chlb_syserr(err, errlen, -e, "state directory '%s'", dir);
	}
	/*
	 * Whoever can create files here can plant STATE.tmp (a symlink to a file
	 * of root's), replace the state file (and so steer the traffic) or fill
	 * the directory: only root and chlbd's own uid may.
	 */
	if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
		close(fd);
		return chlb_err(err, errlen, -EPERM,
				"state directory '%s' is owned by uid %u, not root or chlbd's uid "
				"%u: refusing to use it (chown it, or choose another --state)",
				dir, (unsigned int)sb.st_uid, (unsigned int)geteuid());
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return chlb_err(err, errlen, -EPERM,
				"state directory '%s' is writable by %s (mode %04o): refusing to "
				"use it (chmod go-w '%s', or choose another --state)",
				dir, sb.st_mode & S_IWOTH ? "others" : "its group",
				(unsigned int)(sb.st_mode & 07777), dir);
	}
	return fd;
}

/* Why a write into the state directory failed, in an operator's words. */
static int write_error(const char *dir, const char *what, int e, char *err, size_t errlen)
{
	const char *why = e == ENOSPC || e == EDQUOT  ? "is full"
			  : e == EROFS		      ? "is read-only"
			  : e == EACCES || e == EPERM ? "is not writable by chlbd"
						      : NULL;

	if (why)
		return chlb_err(err, errlen, -e, "state directory '%s' %s (%s: %s)", dir, why, what,
				strerror(e));
	return chlb_err(err, errlen, -e, "couldn't write the state in '%s' (%s: %s)", dir, what,
			chlb_strerror(-e));
}

void chlb_state_pending_init(struct chlb_state_pending *p)
{
	memset(p, 0, sizeof(*p));
	p->dirfd = -1;
	p->fd = -1;
}

/*
 * An upper bound on st's formatted size: a service line with every option,
 * a backend line with an IPv6 address, buckets and every check option. Only
 * the free-space check uses it.
 */
static size_t size_bound(const struct chlb_state *st)
{
	size_t n = 256;

	for (__u32 i = 0; i < st->nsvc; i++)
		n += 256 + 2 * CHLB_CHECK_TEXT_MAX +
		     (size_t)st->svc[i].nbe * (256 + CHLB_CHECK_TEXT_MAX / 4);
	return n;
}

int chlb_state_check(const struct chlb_state *st, const char *path, struct chlb_state_pending *p,
		     char *err, size_t errlen)
{
	struct statvfs vfs;
	unsigned long long room;

	chlb_state_pending_init(p);
	if (split_path(path, p->dir, sizeof(p->dir), p->base, sizeof(p->base)))
		return chlb_err(err, errlen, -EINVAL, "'%s': not a usable state file name", path);
	snprintf(p->tmp, sizeof(p->tmp), "%s.tmp", p->base);
	snprintf(p->prev, sizeof(p->prev), "%s.prev", p->base);
	p->dirfd = chlb_state_dir_open(path, err, errlen);
	if (p->dirfd < 0)
		return p->dirfd;
	/* the superblock's counters and the mount's flags: nothing waits for the disk */
	if (fstatvfs(p->dirfd, &vfs)) {
		int e = errno;

		chlb_state_abort(p);
		return write_error(p->dir, "checking the file system", e, err, errlen);
	}
	if (vfs.f_flag & ST_RDONLY) {
		chlb_state_abort(p);
		return write_error(p->dir, "checking the file system", EROFS, err, errlen);
	}
	if (faccessat(p->dirfd, ".", W_OK, AT_EACCESS)) {
		int e = errno;

		chlb_state_abort(p);
		return write_error(p->dir, "checking the directory", e, err, errlen);
	}
	room = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	p->need = size_bound(st);
	if (room < p->need) {
		chlb_state_abort(p);
		return write_error(p->dir, "checking the free space", ENOSPC, err, errlen);
	}
	return 0;
}

/* st formatted into PATH.tmp (page cache), left open in p->fd. */
static int write_tmp(const struct chlb_state *st, struct chlb_state_pending *p, char *err,
		     size_t errlen)
{
	char *text = chlb_state_format(st, true);
	int fd, e;

	if (!text)
		return chlb_err(err, errlen, -ENOMEM, "out of memory");
	/*
	 * Never opened through whatever is at the name: O_EXCL fails on anything
	 * there (a leftover of a crash, or a planted symlink), which is removed
	 * (the name, never what a symlink points to) and the file created anew.
	 */
	fd = openat(p->dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && !unlinkat(p->dirfd, p->tmp, 0))
		fd = openat(p->dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	if (fd < 0) {
		e = errno;
		free(text);
		return write_error(p->dir, "creating a temporary file", e, err, errlen);
	}
	p->created = true;
	p->fd = fd;
	/* a full filesystem fails here (blocks are reserved at write) */
	e = -write_all(fd, text, strlen(text));
	free(text);
	if (e)
		return write_error(p->dir, "writing the temporary file", e, err, errlen);
	return 0;
}

int chlb_state_prepare(const struct chlb_state *st, const char *path, struct chlb_state_pending *p,
		       char *err, size_t errlen)
{
	int rc = chlb_state_check(st, path, p, err, errlen);

	if (!rc)
		rc = write_tmp(st, p, err, errlen);
	if (rc)
		chlb_state_abort(p);
	return rc;
}

int chlb_state_stage(const struct chlb_state *st, struct chlb_state_pending *p, char *err,
		     size_t errlen)
{
	int rc = write_tmp(st, p, err, errlen), e;

	if (rc)
		return rc;
	if (fsync(p->fd) || close(p->fd)) {
		e = errno;
		p->fd = -1;
		return write_error(p->dir, "writing the temporary file", e, err, errlen);
	}
	p->fd = -1;
	return 0;
}

int chlb_state_publish(struct chlb_state_pending *p, char *err, size_t errlen)
{
	struct stat sb;
	int e;

	/* not yet durable when chlb_state_prepare() wrote it (chlb_state_stage() synced it) */
	if (p->fd >= 0 && (fsync(p->fd) || close(p->fd))) {
		e = errno;
		p->fd = -1;
		chlb_state_abort(p);
		return write_error(p->dir, "writing the temporary file", e, err, errlen);
	}
	p->fd = -1;
	/* the current file was verified when written: it becomes the last good copy */
	if (!fstatat(p->dirfd, p->base, &sb, AT_SYMLINK_NOFOLLOW) && S_ISREG(sb.st_mode)) {
		unlinkat(p->dirfd, p->prev, 0);
		if (linkat(p->dirfd, p->base, p->dirfd, p->prev, 0))
			(void)0; /* best effort: a missing .prev only loses the fallback */
	}
	if (renameat(p->dirfd, p->tmp, p->dirfd, p->base)) {
		e = errno;
		chlb_state_abort(p);
		return write_error(p->dir, "renaming the temporary file over the state file", e,
				   err, errlen);
	}
	p->created = false;
	if (fsync(p->dirfd)) {
		/* the rename happened; only its durability is in doubt */
		e = errno;
		chlb_state_abort(p);
		return write_error(p->dir, "syncing the directory", e, err, errlen);
	}
	chlb_state_abort(p);
	return 0;
}

void chlb_state_abort(struct chlb_state_pending *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (p->dirfd >= 0) {
		if (p->created)
			unlinkat(p->dirfd, p->tmp, 0);
		close(p->dirfd);
	}
	p->dirfd = -1;
	p->created = false;
}

int chlb_state_save_file(const struct chlb_state *st, const char *path, char *err, size_t errlen)
{
	struct chlb_state_pending p;
	int rc = chlb_state_prepare(st, path, &p, err, errlen);

	return rc ? rc : chlb_state_publish(&p, err, errlen);
}

static int load_one(struct chlb_state *st, const char *path, char *err, size_t errlen)
{
	struct chlb_state n;
	char *text;
	int rc = read_file(path, CHLB_STATE_MAX_BYTES, &text, err, errlen);

	if (rc)
		return rc;
	if (!chlb_state_text_intact(text)) {
		free(text);
		return chlb_err(err, errlen, -EBADMSG,
				"'%s': truncated or corrupt (checksum trailer missing or wrong)",
				path);
	}
	chlb_state_init(&n);
	rc = chlb_state_exec_text(&n, text, path, err, errlen);
	if (rc) {
		free(text);
		chlb_state_free(&n);
		return rc;
	}
	free(text);
	chlb_state_free(st);
	*st = n;
	return 0;
}

int chlb_state_load_file(struct chlb_state *st, const char *path, bool *used_prev, char *err,
			 size_t errlen)
{
	char prev[4096], first[CHLB_ERR_MAX], second[CHLB_ERR_MAX];
	bool have, have_prev;
	int dirfd, rc1 = 0, rc2 = 0;

	*used_prev = false;
	snprintf(prev, sizeof(prev), "%s.prev", path);
	/* a directory others can write to could have handed us any state */
	dirfd = chlb_state_dir_open(path, err, errlen);
	if (dirfd < 0)
		return dirfd;
	close(dirfd);
	have = !access(path, F_OK);
	have_prev = !access(prev, F_OK);
	if (!have && !have_prev) {
		chlb_state_free(st);
		return 0;
	}
	if (have && !(rc1 = load_one(st, path, first, sizeof(first))))
		return 0;
	if (have_prev && !(rc2 = load_one(st, prev, second, sizeof(second)))) {
		*used_prev = true;
		/* report why the newer copy was skipped */
		if (have)
			return chlb_err(err, errlen, 0, "%s", first);
		return chlb_err(err, errlen, 0, "'%s': missing", path);
	}
	/*
	 * Nothing good. Say which files stand in the way: removing only the
	 * state file would leave the bad last good copy, which is read next.
	 */
	if (!have)
		return chlb_err(err, errlen, rc2,
				"'%s' is missing and its last good copy '%s' is bad (remove it too "
				"to start with no services): %s",
				path, prev, second);
	if (!have_prev)
		return chlb_err(err, errlen, rc1, "%s, and there is no last good copy '%s'", first,
				prev);
	return chlb_err(err, errlen, rc1,
			"'%s' and its last good copy '%s' are both bad (remove both files to "
			"start with no services): %s; %s",
			path, prev, first, second);
}
