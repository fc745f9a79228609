// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading the connection table (user/lib/dp/dp_conns.c): every entry exactly
 * once with its value, across several batches; a callback's non-zero
 * return stops the walk at once and is returned; an empty table; buffers
 * too small for one hash bucket (ENOSPC: grown and retried, nothing lost
 * or doubled); the get_next_key fallback; the table's size and memory.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_foreach_and_count),
		cmocka_unit_test(test_enospc_grows),
		cmocka_unit_test(test_key_fallback),
		cmocka_unit_test(test_bad_fd),
	};

	return cmocka_run_group_tests_name("conns", tests, NULL, NULL);
}
