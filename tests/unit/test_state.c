// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Desired state: validation rules, text round trip, atomic files. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "config/state.h"

/* One statement as chlbd runs it: on a copy, kept only when it all passed. */
static int run(struct chlb_state *st, const char *line, char *err)
{
	struct chlb_state next;
	struct chlb_cmd c;

	if (chlb_parse_line(line, &c, err, CHLB_ERR_MAX))
		return -1;
	if (chlb_state_copy(&next, st))
		return -1;
	if (chlb_state_exec(&next, &c, err, CHLB_ERR_MAX) ||
	    chlb_state_finalize(&next, err, CHLB_ERR_MAX)) {
		chlb_state_free(&next);
		return -1;
	}
	chlb_state_free(st);
	*st = next;
	return 0;
}

static void must(struct chlb_state *st, const char *line)
{
	char err[CHLB_ERR_MAX];

	if (run(st, line, err))
		fail_msg("'%s' rejected: %s", line, err);
}

static void must_fail(struct chlb_state *st, const char *line, const char *needle)
{
	char err[CHLB_ERR_MAX];
	char *before = chlb_state_format(st, false), *after;

	if (!run(st, line, err))
		fail_msg("'%s' accepted", line);
	if (!strstr(err, needle))
		fail_msg("'%s': message '%s' lacks '%s'", line, err, needle);
	after = chlb_state_format(st, false);
	assert_string_equal(before, after); /* a rejected change changes nothing */
	free(before);
	free(after);
}

static void validation(void **unused)
{
	struct chlb_state st;

	chlb_state_init(&st);
	must(&st, "service add 10.0.0.10:80/tcp algo ring vnodes 160 fwd ipip hash 5tuple");
	must(&st, "backend add 10.0.0.10:80/tcp 10.1.0.2 weight 100");
	must_fail(&st, "service add 10.0.0.10:80/tcp", "already exists");
	must_fail(&st, "backend add 10.0.0.10:80/tcp 10.1.0.2", "already in the service");
	must_fail(&st, "backend add 10.0.0.11:80/tcp 10.1.0.2",
		  "'10.0.0.11:80/tcp': no such service");
	must_fail(&st, "backend set 10.0.0.10:80/tcp 10.1.0.9 weight 5",
		  "'10.1.0.9': no such backend");
	must_fail(&st, "backend del 10.0.0.10:80/tcp 10.1.0.9", "'10.1.0.9'");
	must_fail(&st, "service del 10.0.0.99:80/tcp", "no such service");
	must_fail(&st, "service set 10.0.0.10:80/tcp table 65537", "maglev, jtable and hrw only");
	must_fail(&st, "service add 10.0.0.20:80/tcp algo maglev table 65536", "'65536'");
	must(&st, "service add 10.0.0.20:80/tcp algo maglev table 3");
	must(&st, "backend add 10.0.0.20:80/tcp 10.1.0.2");
	must(&st, "backend add 10.0.0.20:80/tcp 10.1.0.3");
	must_fail(&st, "backend add 10.0.0.20:80/tcp 10.1.0.4", "larger than the");
	must(&st, "service add [2001:db8::10]:443/tcp algo maglev table 65537 fwd l2dsr");
	must_fail(&st, "backend add [2001:db8::10]:443/tcp 10.1.0.2", "'10.1.0.2': fwd l2dsr");
	must(&st, "service set [2001:db8::10]:443/tcp fwd ipip");
	must_fail(&st, "backend add [2001:db8::10]:443/tcp 10.1.0.2", "IPv6-in-IPv4");
	must(&st, "service add 10.0.0.30:80/tcp fwd ipip");
	must(&st, "backend add 10.0.0.30:80/tcp 2001:db8::2"); /* 4-in-6 is fine */
	must_fail(&st, "service set 10.0.0.10:80/tcp fwd l2dsr mtu 1400", "ipip only");
	must(&st, "backend set 10.0.0.10:80/tcp 10.1.0.2 weight 0");
	must(&st, "service del 10.0.0.30:80/tcp");
	assert_int_equal(st.nsvc, 3);
	chlb_state_free(&st);
}

static void too_many_services(void **unused)
{
	struct chlb_state st;
	char line[128];

	chlb_state_init(&st);
	for (int i = 0; i < CHLB_MAX_SERVICES; i++) {
		snprintf(line, sizeof(line), "service add 10.0.%d.%d:80/tcp", i / 200, i % 200 + 1);
		must(&st, line);
	}
	must_fail(&st, "service add 10.9.9.9:80/tcp", "too many services");
	for (int i = 0; i < CHLB_MAX_SVC_BACKENDS; i++) {
		struct chlb_cmd c;
		char err[CHLB_ERR_MAX];

		snprintf(line, sizeof(line), "backend add 10.0.0.1:80/tcp 10.%d.%d.%d", i >> 16,
			 (i >> 8) & 255, i & 255);
		/* no finalize per line: that is the batch path */
		if (chlb_parse_line(line, &c, err, sizeof(err)) ||
		    chlb_state_exec(&st, &c, err, sizeof(err)))
			fail_msg("'%s': %s", line, err);
	}
	must_fail(&st, "backend add 10.0.0.1:80/tcp 10.200.0.1",
		  "too many backends in one service");
	/* (service, backend) pairs over all services: the data plane's 8192 slots */
	for (int i = 0; i < CHLB_MAX_BACKENDS - CHLB_MAX_SVC_BACKENDS; i++) {
		struct chlb_cmd c;
		char err[CHLB_ERR_MAX];

		snprintf(line, sizeof(line), "backend add 10.0.0.2:80/tcp 10.100.%d.%d", i >> 8,
			 i & 255);
		if (chlb_parse_line(line, &c, err, sizeof(err)) ||
		    chlb_state_exec(&st, &c, err, sizeof(err)))
			fail_msg("'%s': %s", line, err);
	}
	must_fail(&st, "backend add 10.0.0.3:80/tcp 10.201.0.1",
		  "too many backends: 8193 over all services (at most 8192");
	/* an address another service has takes a slot of its own too */
	must_fail(&st, "backend add 10.0.0.3:80/tcp 10.100.0.1", "too many backends: 8193");
	must(&st, "backend del 10.0.0.2:80/tcp 10.100.0.2");
	must(&st, "backend add 10.0.0.3:80/tcp 10.100.0.1");
	chlb_state_free(&st);
}

static const char *cfg = "service add 10.0.0.10:80/tcp algo jump fwd ipip\n"
			 "backend add 10.0.0.10:80/tcp 10.1.0.1\n"
			 "backend add 10.0.0.10:80/tcp 10.1.0.2\n"
			 "backend add 10.0.0.10:80/tcp 10.1.0.3\n"
			 "backend add 10.0.0.10:80/tcp 10.1.0.4\n"
			 "backend del 10.0.0.10:80/tcp 10.1.0.2\n"
			 "service add [2001:db8::1]:0/udp algo maglev table 251 hash src\n"
			 "backend add [2001:db8::1]:0/udp 2001:db8::5 weight 300\n"
			 "service add 10.0.0.12:80/tcp algo jtable table 251\n"
			 "backend add 10.0.0.12:80/tcp 10.1.0.1 weight 200\n"
			 "backend add 10.0.0.12:80/tcp 10.1.0.2\n"
			 "backend del 10.0.0.12:80/tcp 10.1.0.1\n";

static void text_round_trip(void **unused)
{
	struct chlb_state a, b;
	char err[CHLB_ERR_MAX];
	char *ta, *tb;

	chlb_state_init(&a);
	chlb_state_init(&b);
	if (chlb_state_exec_text(&a, cfg, "cfg", err, sizeof(err)))
		fail_msg("%s", err);
	/* one transaction: 10.1.0.2 came and went without a bucket; then a removal */
	if (chlb_state_exec_text(&a, "backend del 10.0.0.10:80/tcp 10.1.0.3\n", "del", err,
				 sizeof(err)))
		fail_msg("%s", err);
	ta = chlb_state_format(&a, true);
	assert_true(chlb_state_text_intact(ta));
	/* the saved jump order keeps the tombstone of 10.1.0.3 */
	assert_non_null(strstr(ta, "buckets 3"));
	assert_non_null(strstr(ta, "10.1.0.1 weight 100 bucket 0\n"));
	assert_non_null(strstr(ta, "10.1.0.4 weight 100 bucket 2\n"));
	if (chlb_state_exec_text(&b, ta, "saved", err, sizeof(err)))
		fail_msg("%s", err);
	tb = chlb_state_format(&b, true);
	assert_string_equal(ta, tb);
	assert_true(chlb_svc_equal(&a.svc[0], chlb_state_find(&b, &a.svc[0].vip)));
	/* truncation and corruption are detected */
	tb[strlen(tb) - 20] = '\0';
	assert_false(chlb_state_text_intact(tb));
	ta[10] ^= 1;
	assert_false(chlb_state_text_intact(ta));
	free(ta);
	free(tb);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

/* st saved holds both texts, and read back into a fresh state saves the same */
static void saved_reads_back(const struct chlb_state *st, const char *has, const char *has_too)
{
	struct chlb_state back;
	char err[CHLB_ERR_MAX];
	char *t = chlb_state_format(st, true), *t2;

	assert_non_null(strstr(t, has));
	assert_non_null(strstr(t, has_too));
	chlb_state_init(&back);
	if (chlb_state_exec_text(&back, t, "saved", err, sizeof(err)))
		fail_msg("%s", err);
	t2 = chlb_state_format(&back, true);
	assert_string_equal(t, t2);
	free(t2);
	free(t);
	chlb_state_free(&back);
}

/* allow-lists: taken, saved and read back the same; bad ones refused, naming the prefix */
static void allow_lists(void **unused)
{
	struct chlb_state st;
	char line[CHLB_LINE_MAX];
	char *t;
	int n;

	chlb_state_init(&st);
	must(&st, "service add 10.0.0.1:80/tcp allow 198.51.100.0/24,203.0.113.7");
	must(&st, "service add [2001:db8::1]:80/tcp");
	must(&st, "service set [2001:db8::1]:80/tcp allow 2001:db8:c::/48,2001:db8:d::1");
	assert_int_equal(st.svc[0].nallow, 2);
	saved_reads_back(&st, " allow 198.51.100.0/24,203.0.113.7/32",
			 " allow 2001:db8:c::/48,2001:db8:d::1/128");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 10.0.0.0/33",
		  "'10.0.0.0/33': malformed "
		  "prefix: bad length");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 10.0.0.1/8",
		  "'10.0.0.1/8': malformed prefix: bits set past the length");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 10.0.0.0/8,10.1.0.0/16",
		  "'10.1.0.0/16': overlaps '10.0.0.0/8'");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 10.0.0.1,10.0.0.1", "overlaps");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 10.0.0.0/8,2001:db8::/32",
		  "'2001:db8::/32': address family differs");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 2001:db8::/32",
		  "'2001:db8::/32': allow-list prefix of another family");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow 10.0.0.0/8,", "malformed allow-list");
	must_fail(&st, "service set 10.0.0.1:80/tcp allow foo", "'foo': malformed prefix");
	n = snprintf(line, sizeof(line), "service set 10.0.0.1:80/tcp allow ");
	for (int i = 0; i <= CHLB_ALLOW_MAX; i++)
		n +=
		    snprintf(line + n, sizeof(line) - (size_t)n, "%s10.%d.0.0/16", i ? "," : "", i);
	must_fail(&st, line, "'10.64.0.0/16': too many prefixes in allow-list (at most 64)");
	line[strlen(line) - strlen(",10.64.0.0/16")] = '\0'; /* 64: the limit itself */
	must(&st, line);
	assert_int_equal(st.svc[0].nallow, CHLB_ALLOW_MAX);
	must(&st, "service set 10.0.0.1:80/tcp allow any");
	assert_int_equal(st.svc[0].nallow, 0);
	t = chlb_state_format(&st, false);
	assert_null(strstr(t, "10.0.0.1:80/tcp algo ring vnodes 160 fwd ipip hash 5tuple allow"));
	free(t);
	chlb_state_free(&st);
}

/* persistence: taken, saved and read back the same; a netmask kept across a timeout change */
static void persistence(void **unused)
{
	struct chlb_state st;
	char *t;

	chlb_state_init(&st);
	must(&st, "service add 10.0.0.1:80/tcp persist 300");
	assert_int_equal(st.svc[0].persist_s, 300);
	assert_int_equal(st.svc[0].persist_plen, 32); /* one address per client */
	must(&st, "service add [2001:db8::1]:80/tcp persist 60 netmask /64");
	must(&st, "service set 10.0.0.1:80/tcp netmask /24");
	must(&st, "service set 10.0.0.1:80/tcp persist 600"); /* the netmask stays */
	assert_int_equal(st.svc[0].persist_plen, 24);
	saved_reads_back(&st, " persist 600 netmask /24", " persist 60 netmask /64");
	must_fail(&st, "service set 10.0.0.1:80/tcp hash src", "'persist': not with hash src");
	must_fail(&st, "service set 10.0.0.1:80/tcp netmask /33",
		  "'/33': netmask longer than an IPv4 address (/32)");
	must_fail(&st, "service set 10.0.0.1:80/tcp persist 86401",
		  "persistence timeout out of range");
	must(&st, "service set 10.0.0.1:80/tcp persist off");
	assert_int_equal(st.svc[0].persist_s, 0);
	t = chlb_state_format(&st, false);
	assert_null(strstr(t, "10.0.0.1:80/tcp algo ring vnodes 160 fwd ipip hash 5tuple persist"));
	free(t);
	must_fail(&st, "service set 10.0.0.1:80/tcp netmask /24",
		  "applies to services with persist only");
	must(&st, "service set 10.0.0.1:80/tcp hash src");
	must_fail(&st, "service set 10.0.0.1:80/tcp persist 30", "'persist': not with hash src");
	chlb_state_free(&st);
}

static void bad_line_applies_nothing(void **unused)
{
	struct chlb_state st;
	char err[CHLB_ERR_MAX];

	chlb_state_init(&st);
	assert_int_equal(chlb_state_exec_text(&st,
					      "service add 10.0.0.1:80/tcp\n"
					      "backend add 10.0.0.1:80/tcp 10.1.0.1 weight 20000\n",
					      "f.conf", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "f.conf:2: '20000'"));
	chlb_state_free(&st);
}

static void files(void **unused)
{
	char dir[] = "/tmp/chlb-state-XXXXXX", path[128], prevp[160], err[CHLB_ERR_MAX];
	struct chlb_state a, b;
	bool prev;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(prevp, sizeof(prevp), "%s.prev", path);
	chlb_state_init(&a);
	chlb_state_init(&b);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), 0);
	assert_int_equal(b.nsvc, 0); /* first start */
	assert_int_equal(chlb_state_exec_text(&a, cfg, "cfg", err, sizeof(err)), 0);
	assert_int_equal(chlb_state_save_file(&a, path, err, sizeof(err)), 0);
	must(&a, "service del 10.0.0.10:80/tcp");
	assert_int_equal(chlb_state_save_file(&a, path, err, sizeof(err)), 0);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), 0);
	assert_false(prev);
	assert_int_equal(b.nsvc, 2);
	/* truncate the current file: the last good copy (3 services) is used, loudly */
	assert_int_equal(truncate(path, 40), 0);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), 0);
	assert_true(prev);
	assert_int_equal(b.nsvc, 3);
	assert_non_null(strstr(err, "truncated or corrupt"));
	/* both bad: refuse */
	f = fopen(prevp, "w");
	fputs("service add 10.0.0.1:80/tcp\n", f);
	fclose(f);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), -EBADMSG);
	unlink(path);
	unlink(prevp);
	rmdir(dir);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

/*
 * The indexed path (chlb_state_exec_text: hashes, running vnode counts, jump
 * buckets appended) against one statement at a time through the plain
 * scans and a full jump sync per statement: the same state, bucket orders
 * included, for random adds, sets and deletes over ring, jump and maglev.
 */
static void indexed_equals_plain(void **unused)
{
	static const char *algo[] = { "ring", "jump", "maglev", "jtable" };
	char err[CHLB_ERR_MAX], line[160];
	unsigned int seed = 12345;

	for (int round = 0; round < 40; round++) {
		struct chlb_state a, b;
		size_t cap = 1 << 20, len = 0;
		char *text = malloc(cap), *ta, *tb;
		__u8 in[4][64] = { { 0 } };

		assert_non_null(text);
		chlb_state_init(&a);
		chlb_state_init(&b);
		for (int v = 0; v < 4; v++) {
			len += (size_t)snprintf(text + len, cap - len,
						"service add 10.0.0.%d:80/tcp algo %s\n", v + 1,
						algo[(v + round) % 4]);
		}
		for (int i = 0; i < 1500; i++) {
			int v = rand_r(&seed) % 4, k = rand_r(&seed) % 64, w = rand_r(&seed) % 400;

			if (!in[v][k]) {
				snprintf(line, sizeof(line),
					 "backend add 10.0.0.%d:80/tcp 10.1.%d.%d weight %d", v + 1,
					 k / 8, k % 8 + 2, w);
				in[v][k] = 1;
			} else if (rand_r(&seed) % 3) {
				snprintf(line, sizeof(line),
					 "backend set 10.0.0.%d:80/tcp 10.1.%d.%d weight %d", v + 1,
					 k / 8, k % 8 + 2, w);
			} else {
				snprintf(line, sizeof(line),
					 "backend del 10.0.0.%d:80/tcp 10.1.%d.%d", v + 1, k / 8,
					 k % 8 + 2);
				in[v][k] = 0;
			}
			len += (size_t)snprintf(text + len, cap - len, "%s\n", line);
		}
		if (round % 5 == 4) /* a service deleted and one added late: indexes move */
			len += (size_t)snprintf(
			    text + len, cap - len,
			    "service del 10.0.0.1:80/tcp\nservice add 10.0.0.9:80/tcp "
			    "algo jump\nbackend add 10.0.0.9:80/tcp 10.1.0.2\n");
		if (chlb_state_exec_text(&a, text, "t", err, sizeof(err)))
			fail_msg("indexed: %s", err);
		for (char *p = text, *nl; *p; p = nl + 1) {
			struct chlb_cmd c;

			nl = strchr(p, '\n');
			*nl = '\0';
			if (chlb_parse_line(p, &c, err, sizeof(err)) ||
			    chlb_state_exec(&b, &c, err, sizeof(err)))
				fail_msg("plain: '%s': %s", p, err);
		}
		assert_int_equal(chlb_state_finalize(&b, err, sizeof(err)), 0);
		ta = chlb_state_format(&a, false);
		tb = chlb_state_format(&b, false);
		assert_string_equal(ta, tb);
		free(ta);
		free(tb);
		free(text);
		chlb_state_free(&a);
		chlb_state_free(&b);
	}
}

/*
 * The writer never follows a planted STATE.tmp symlink, and refuses a
 * directory others can write to; a full write is all or nothing.
 */
static void safe_files(void **unused)
{
	char dir[] = "/tmp/chlb-state-XXXXXX", path[128], tmp[160], victim[160], err[CHLB_ERR_MAX];
	struct chlb_state a, b;
	struct chlb_state_pending p;
	char buf[64] = "";
	bool prev;
	FILE *f;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	chlb_state_init(&a);
	chlb_state_init(&b);
	assert_int_equal(chlb_state_exec_text(&a, cfg, "cfg", err, sizeof(err)), 0);
	f = fopen(victim, "w");
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(chlb_state_save_file(&a, path, err, sizeof(err)), 0);
	fd = open(victim, O_RDONLY);
	assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	assert_string_equal(buf, "precious\n"); /* the symlink was removed, not followed */
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), 0);
	assert_int_equal(b.nsvc, a.nsvc);
	/* prepared, then aborted: the file is as it was, no temporary left */
	must(&a, "service del 10.0.0.10:80/tcp");
	assert_int_equal(chlb_state_prepare(&a, path, &p, err, sizeof(err)), 0);
	assert_int_equal(access(tmp, F_OK), 0);
	chlb_state_abort(&p);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), 0);
	assert_int_equal(b.nsvc, a.nsvc + 1);
	/* group- or world-writable: refused, for writing and for reading */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(chlb_state_save_file(&a, path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(dir, 0770), 0);
	assert_int_equal(chlb_state_save_file(&a, path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by its group"));
	assert_int_equal(chmod(dir, 0700), 0);
	/* both copies bad: the message names both; with the state file gone, .prev */
	f = fopen(path, "w");
	fputs("junk\n", f);
	fclose(f);
	snprintf(tmp, sizeof(tmp), "%s.prev", path);
	f = fopen(tmp, "w");
	fputs("junk\n", f);
	fclose(f);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "remove both files"));
	unlink(path);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "is missing and its last good copy"));
	unlink(tmp);
	assert_int_equal(chlb_state_load_file(&b, path, &prev, err, sizeof(err)), 0);
	assert_int_equal(b.nsvc, 0);
	unlink(victim);
	rmdir(dir);
	chlb_state_free(&a);
	chlb_state_free(&b);
}

/* A config path that opens but cannot be read (a directory) is an error, never an empty config. */
static void unreadable_file(void **unused)
{
	char err[CHLB_ERR_MAX] = "";

	(void)unused;
	assert_null(chlb_read_file("/", 1 << 20, err, sizeof(err)));
	assert_non_null(strstr(err, "read failed"));
}

/* A NUL byte is refused naming its line, as a parse error names the line it is on. */
static void nul_byte_names_its_line(void **unused)
{
	char path[] = "/tmp/chlb-test-nul-XXXXXX", err[CHLB_ERR_MAX] = "", want[64];
	static const char text[] = "service add 10.0.0.1:80/tcp\n# two\nbackend add\0 x\n";
	int fd = mkstemp(path);

	(void)unused;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	assert_null(chlb_read_file(path, 1 << 20, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3: contains a NUL byte", path);
	assert_string_equal(err, want);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(validation),
		cmocka_unit_test(too_many_services),
		cmocka_unit_test(text_round_trip),
		cmocka_unit_test(allow_lists),
		cmocka_unit_test(persistence),
		cmocka_unit_test(bad_line_applies_nothing),
		cmocka_unit_test(files),
		cmocka_unit_test(indexed_equals_plain),
		cmocka_unit_test(safe_files),
		cmocka_unit_test(unreadable_file),
		cmocka_unit_test(nul_byte_names_its_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
