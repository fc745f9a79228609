// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading the connection table (user/lib/dp/dp_conns.c): every entry exactly
 * once with its value, across several batches; a callback's non-zero
 * return stops the walk at once and is returned; an empty table; buffers
 * too small for one hash bucket (ENOSPC: grown and retried, nothing lost
 * or doubled); the get_next_key fallback; the table's size and memory;
 * the resumable cursor (chlb_dp_conns_next_batch): every entry once over a
 * pass in small batches, and a pass that ends while entries are deleted
 * and added under it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "dp_fixture.h"
#include "dp/dp_conns.h"

#define N 10000 /* entries: more than two batches of CHLB_DP_CONNS_BATCH */

/* Entry i: 198.51.<i / 256>.<i % 256>:<1024 + i> -> 10.0.0.1:80/tcp, backend i % 100. */
static void flow_of(struct chlb_flow *f, __u32 i)
{
	memset(f, 0, sizeof(*f));
	f->src[0] = 198;
	f->src[1] = 51;
	f->src[2] = (__u8)(i >> 8);
	f->src[3] = (__u8)i;
	f->dst[0] = 10;
	f->dst[3] = 1;
	f->sport = htons((__u16)(1024 + i));
	f->dport = htons(80);
	f->proto = IPPROTO_TCP;
	f->family = CHLB_AF_INET;
}

static void conn_of(struct chlb_conn *c, __u32 i)
{
	memset(c, 0, sizeof(*c));
	c->backend = (__u16)(i % 100);
	c->gen = 1000 + i;
	c->last_ns = 7ull * i;
	c->flags = (i % 3 == 0) ? CHLB_CONN_F_ENDED : 0;
}

static void fill(int fd, __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		struct chlb_flow f;
		struct chlb_conn c;

		flow_of(&f, i);
		conn_of(&c, i);
		assert_int_equal(bpf_map_update_elem(fd, &f, &c, BPF_NOEXIST), 0);
	}
}

struct seen {
	__u32 calls, stop_at;
	__u8 count[N];
	bool bad_value;
};

static int mark(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct seen *s = ctx;
	__u32 i = ntohs(f->sport) - 1024;
	struct chlb_flow want;
	struct chlb_conn cw;

	s->calls++;
	if (i >= N)
		return -1000; /* a key we never wrote */
	flow_of(&want, i);
	conn_of(&cw, i);
	if (memcmp(&want, f, sizeof(want)) || c->backend != cw.backend || c->gen != cw.gen ||
	    c->last_ns != cw.last_ns || c->flags != cw.flags)
		s->bad_value = true;
	s->count[i]++;
	return s->stop_at && s->calls == s->stop_at ? 7 : 0;
}

/* Every one of the n entries seen exactly once, with its value. */
static void assert_each_once(const struct seen *s, __u32 n)
{
	assert_false(s->bad_value);
	assert_int_equal(s->calls, n);
	for (__u32 i = 0; i < n; i++)
		if (s->count[i] != 1)
			fail_msg("entry %u seen %u times", i, s->count[i]);
}

static void test_foreach_and_count(void **state)
{
	struct chlb_dp_opts o = { .conn_max = 1u << 16 };
	struct seen *s = calloc(1, sizeof(*s));
	struct chlb_dp *dp;
	char err[256];
	__u64 n = 99, mem = 0;
	__u32 size = 0;

	assert_non_null(s);
	assert_int_equal(chlb_dp_open(&o, &dp, err, sizeof(err)), 0);
	/* empty: no callback, 0 */
	assert_int_equal(chlb_dp_conns_foreach(dp, mark, s), 0);
	assert_int_equal(s->calls, 0);
	assert_int_equal(chlb_dp_conn_count(dp, &n), 0);
	assert_int_equal(n, 0);

	fill(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), N);
	assert_int_equal(chlb_dp_conns_foreach(dp, mark, s), 0);
	assert_each_once(s, N);
	assert_int_equal(chlb_dp_conn_count(dp, &n), 0);
	assert_int_equal(n, N);

	/* a callback's non-zero return stops the walk there and is returned */
	memset(s, 0, sizeof(*s));
	s->stop_at = 5000;
	assert_int_equal(chlb_dp_conns_foreach(dp, mark, s), 7);
	assert_int_equal(s->calls, 5000);

	/* size as created, memory as the kernel counts it: >= key + value per entry */
	assert_int_equal(chlb_dp_conn_size(dp, &size, &mem), 0);
	assert_int_equal(size, 1u << 16);
	assert_true(mem >= (__u64)size * (sizeof(struct chlb_flow) + sizeof(struct chlb_conn)));
	assert_true(mem < (__u64)size * 1024);
	chlb_dp_close(dp);
	free(s);
}

/* A bare LRU hash of the conns layout, so the walk's paths are tested alone. */
static int lru(__u32 max)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "t_conns", sizeof(struct chlb_flow),
				sizeof(struct chlb_conn), max, NULL);

	assert_true(fd >= 0);
	return fd;
}

/*
 * 3000 entries in 4096 buckets: many buckets hold two or more, so a batch
 * of one entry hits ENOSPC again and again; the walk must grow its buffers
 * and go on from the same bucket.
 */
static void test_enospc_grows(void **state)
{
	struct seen *s = calloc(1, sizeof(*s));
	int fd = lru(4096);

	assert_non_null(s);
	fill(fd, 3000);
	assert_int_equal(chlb_dp_conns_walk_fd(fd, 1, false, mark, s), 0);
	assert_each_once(s, 3000);
	/* the same table in batches of 2: ENOSPC only for the fuller buckets */
	memset(s, 0, sizeof(*s));
	assert_int_equal(chlb_dp_conns_walk_fd(fd, 2, false, mark, s), 0);
	assert_each_once(s, 3000);
	close(fd);
	free(s);
}

static void test_key_fallback(void **state)
{
	struct seen *s = calloc(1, sizeof(*s));
	int fd = lru(4096);

	assert_non_null(s);
	assert_int_equal(chlb_dp_conns_walk_fd(fd, 0, true, mark, s), 0);
	assert_int_equal(s->calls, 0);
	fill(fd, 3000);
	assert_int_equal(chlb_dp_conns_walk_fd(fd, 0, true, mark, s), 0);
	assert_each_once(s, 3000);
	memset(s, 0, sizeof(*s));
	s->stop_at = 10;
	assert_int_equal(chlb_dp_conns_walk_fd(fd, 0, true, mark, s), 7);
	assert_int_equal(s->calls, 10);
	close(fd);
	free(s);
}

static void test_bad_fd(void **state)
{
	struct seen s = { 0 };

	assert_int_equal(chlb_dp_conns_walk_fd(-1, 0, false, mark, &s), -EBADF);
	assert_int_equal(s.calls, 0);
}

/*
 * The cursor: a pass in batches of `batch` (grown on ENOSPC), each entry
 * through mark(); returns the calls it took. Fails on a batch larger than
 * asked or a pass that does not end within `max_calls`.
 */
static __u32 cursor_pass(int fd, __u32 batch, struct seen *s, __u32 max_calls,
			 void (*between)(int fd, const struct chlb_flow *last, void *ctx),
			 void *ctx)
{
	struct chlb_dp_conns_cursor cur = { 0 };
	struct chlb_flow keys[64];
	struct chlb_conn vals[64];
	__u32 calls = 0, count;
	int rc;

	while (!cur.done) {
		if (++calls > max_calls)
			fail_msg("the pass did not end within %u calls", max_calls);
		count = batch;
		rc = chlb_dp_conns_next_batch_fd(fd, &cur, keys, vals, &count);
		if (rc == -ENOSPC) {
			struct chlb_dp_conns_cursor before = cur;

			assert_int_equal(count, 0);
			assert_memory_equal(&before, &cur, sizeof(cur));
			assert_true(batch < 64);
			batch *= 2;
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(count <= batch);
		for (__u32 i = 0; i < count; i++)
			mark(&keys[i], &vals[i], s);
		if (between && count)
			between(fd, &keys[count - 1], ctx);
	}
	/* over: further calls read nothing */
	count = batch;
	assert_int_equal(chlb_dp_conns_next_batch_fd(fd, &cur, keys, vals, &count), 0);
	assert_int_equal(count, 0);
	assert_true(cur.done);
	return calls;
}

/* Every entry exactly once over a pass in small batches; an empty table; bad arguments. */
static void test_cursor_pass(void **state)
{
	struct seen *s = calloc(1, sizeof(*s));
	struct chlb_dp_conns_cursor cur = { 0 };
	struct chlb_flow k;
	struct chlb_conn v;
	__u32 count = 1, calls;
	int fd = lru(1u << 14);

	assert_non_null(s);
	/* empty: one call, nothing, done */
	assert_int_equal(cursor_pass(fd, 8, s, 1, NULL, NULL), 1);
	assert_int_equal(s->calls, 0);
	fill(fd, N);
	calls = cursor_pass(fd, 8, s, 1u << 14, NULL, NULL);
	assert_each_once(s, N);
	assert_true(calls >= N / 8);
	/* batches of 1: ENOSPC on the fuller buckets, grown by the caller, nothing lost */
	memset(s, 0, sizeof(*s));
	cursor_pass(fd, 1, s, 1u << 16, NULL, NULL);
	assert_each_once(s, N);
	/* bad arguments change nothing */
	assert_int_equal(chlb_dp_conns_next_batch_fd(-1, &cur, &k, &v, &count), -EBADF);
	count = 0;
	assert_int_equal(chlb_dp_conns_next_batch_fd(fd, &cur, &k, &v, &count), -EINVAL);
	assert_false(cur.started || cur.done);
	close(fd);
	free(s);
}

/* Between batches: delete the entry just read and the next ones in index order, add new ones. */
struct churn {
	__u32 next_del, next_add, deleted;
};

static void churn_step(int fd, const struct chlb_flow *last, void *ctx)
{
	struct churn *c = ctx;

	if (!bpf_map_delete_elem(fd, last)) /* the entry the cursor stands after */
		c->deleted++;
	for (int k = 0; k < 6 && c->next_del < N; k++) {
		struct chlb_flow f;

		flow_of(&f, c->next_del++);
		if (!bpf_map_delete_elem(fd, &f))
			c->deleted++;
	}
	for (int k = 0; k < 2 && c->next_add < N; k++) { /* keys nobody else uses: ports past N */
		struct chlb_flow f;
		struct chlb_conn v;

		flow_of(&f, c->next_add);
		f.sport = htons((__u16)(1024 + N + c->next_add++ % 20000));
		conn_of(&v, 0);
		bpf_map_update_elem(fd, &f, &v, BPF_ANY);
	}
}

/*
 * A pass while entries are deleted (including the one the cursor just
 * returned, which makes a get_next_key walk start over) and others added:
 * it ends within the table's buckets, and no entry is seen twice.
 */
static void test_cursor_under_churn(void **state)
{
	struct seen *s = calloc(1, sizeof(*s));
	struct churn c = { 0 };
	__u32 dup = 0;
	int fd = lru(1u << 14);

	assert_non_null(s);
	fill(fd, N);
	/* a call visits at least one bucket: never more calls than buckets (+ ENOSPC retries) */
	cursor_pass(fd, 4, s, (1u << 14) + 64, churn_step, &c);
	assert_true(c.deleted > N / 2);
	for (__u32 i = 0; i < N; i++)
		dup += s->count[i] > 1;
	assert_int_equal(dup, 0);
	assert_false(s->bad_value);
	close(fd);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_foreach_and_count),
		cmocka_unit_test(test_enospc_grows),
		cmocka_unit_test(test_key_fallback),
		cmocka_unit_test(test_bad_fd),
		/* the cursor */
		cmocka_unit_test(test_cursor_pass),
		cmocka_unit_test(test_cursor_under_churn),
	};

	return cmocka_run_group_tests_name("conns", tests, NULL, NULL);
}
