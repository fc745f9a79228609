// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The desired state as text: `chlbctl save` output, the state file, config
 * files. The state file ends with a checksum trailer (a comment, so the
 * text stays valid input for `apply -f`): a truncated or corrupt file is
 * detected and never mistaken for "no services".
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "state.h"
#include "util.h"

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
	return chlb_addr_cmp(&((const struct chlb_be_cfg *)a)->addr,
			     &((const struct chlb_be_cfg *)b)->addr);
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
 * " buckets k1,k2,..." (ascending) of name. A sorted index, not a scan of
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
	for (__u32 i = lo; i < n && !strcmp(ref[i].name, name); i++)
		sb_printf(b, "%s%u", i == lo ? " buckets " : ",", ref[i].k);
}

static void format_svc(struct sbuf *b, const struct chlb_svc_cfg *s)
{
	struct bucket_ref *ref = NULL;
	__u32 nref = 0;
	char vip[CHLB_ADDRSTR], a[CHLB_ADDRSTR];
	struct chlb_be_cfg *be;

	chlb_fmt_vip(&s->vip, vip, sizeof(vip));
	sb_printf(b, "service add %s algo %s", vip, chlb_algo_name(s->algo));
	if (s->algo == CHLB_ALGO_RING)
		sb_printf(b, " vnodes %u", s->vnodes);
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
	sb_printf(b, "\n");
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
		sb_printf(b, "\n");
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
	const char *p = text;
	unsigned int lineno = 0;
	char msg[CHLB_ERR_MAX];

	while (*p) {
		struct chlb_cmd c;
		int r;

		lineno++;
		if (chlb_parse_next(&p, &c, msg, sizeof(msg)))
			return chlb_fail(err, errlen, "%s:%u: %s", name, lineno, msg);
		if (c.kind == CHLB_CMD_NONE)
			continue;
		if (!chlb_cmd_is_change(c.kind))
			return chlb_fail(err, errlen,
					 "%s:%u: only service/backend add, set, del belong in a "
					 "config file",
					 name, lineno);
		r = chlb_state_exec(st, &c, msg, sizeof(msg));
		if (r)
			return chlb_err(err, errlen, r, "%s:%u: %s", name, lineno, msg);
	}
	if (chlb_state_finalize(st, msg, sizeof(msg)))
		return chlb_fail(err, errlen, "%s: %s", name, msg);
	return 0;
}

char *chlb_read_file(const char *path, size_t max, char *err, size_t errlen)
{
	size_t got = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		chlb_fail(err, errlen, "couldn't open '%s': %s (-%d)", path, strerror(errno),
			  errno);
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	/* read to EOF: pipes (batch -f -) have no size */
	for (;;) {
		ssize_t n;

		if (got == cap) {
			char *p = cap >= max ? NULL : realloc(buf, cap * 2 + 1);

			if (!p) {
				chlb_fail(err, errlen, "'%s': larger than %zu bytes", path, max);
				free(buf);
				close(fd);
				return NULL;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	if (strlen(buf) != got) {
		chlb_fail(err, errlen, "'%s': contains a NUL byte", path);
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void fsync_dir(const char *path)
{
	char *dup = strdup(path);
	int fd;

	if (!dup)
		return;
	fd = open(dirname(dup), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dup);
}

int chlb_state_save_file(const struct chlb_state *st, const char *path, char *err, size_t errlen)
{
	char tmp[4096], prev[4096];
	char *text = chlb_state_format(st, true);
	int fd, e;

	if (!text)
		return chlb_fail(err, errlen, "out of memory");
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(prev, sizeof(prev), "%s.prev", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto bad;
	if (write_all(fd, text, strlen(text)) || fsync(fd)) {
		e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		goto bad;
	}
	close(fd);
	free(text);
	/* the current file was verified when written: it becomes the last good copy */
	if (access(path, F_OK) == 0) {
		unlink(prev);
		if (link(path, prev))
			(void)0; /* best effort: a missing .prev only loses the fallback */
	}
	if (rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		return chlb_fail(err, errlen, "couldn't rename '%s' to '%s': %s (-%d)", tmp, path,
				 strerror(e), e);
	}
	fsync_dir(path);
	return 0;
bad:
	e = errno;
	free(text);
	return chlb_fail(err, errlen, "couldn't write '%s': %s (-%d)", tmp, strerror(e), e);
}

static int load_one(struct chlb_state *st, const char *path, char *err, size_t errlen)
{
	struct chlb_state n;
	char *text = chlb_read_file(path, CHLB_STATE_MAX_BYTES, err, errlen);

	if (!text)
		return -1;
	if (!chlb_state_text_intact(text)) {
		free(text);
		return chlb_fail(err, errlen,
				 "'%s': truncated or corrupt (checksum trailer missing or wrong)",
				 path);
	}
	chlb_state_init(&n);
	if (chlb_state_exec_text(&n, text, path, err, errlen)) {
		free(text);
		chlb_state_free(&n);
		return -1;
	}
	free(text);
	chlb_state_free(st);
	*st = n;
	return 0;
}

int chlb_state_load_file(struct chlb_state *st, const char *path, bool *used_prev, char *err,
			 size_t errlen)
{
	char prev[4096], first[CHLB_ERR_MAX];

	*used_prev = false;
	snprintf(prev, sizeof(prev), "%s.prev", path);
	if (access(path, F_OK) && access(prev, F_OK)) {
		chlb_state_free(st);
		return 0;
	}
	if (!access(path, F_OK) && !load_one(st, path, first, sizeof(first)))
		return 0;
	if (access(path, F_OK))
		snprintf(first, sizeof(first), "'%s': missing", path);
	if (!access(prev, F_OK) && !load_one(st, prev, err, errlen)) {
		*used_prev = true;
		/* report why the newer copy was skipped */
		snprintf(err, errlen, "%s", first);
		return 0;
	}
	return chlb_fail(err, errlen, "%s; no good copy in '%s' either", first, prev);
}
