// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Canonical jump buckets: a backend's bucket is desired
 * state, so the same desired state gives the same table on every host,
 * whatever the order of the statements; save writes the buckets, and a
 * saved state applied on another host builds the identical table; old
 * state files (`buckets B1,B2,...`) still load.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config/state.h"

#define SVC "10.0.0.10:80/tcp"

static void exec_ok(struct chlb_state *st, const char *text)
{
	char err[CHLB_ERR_MAX * 2];

	if (chlb_state_exec_text(st, text, "t", err, sizeof(err)))
		fail_msg("refused: %s\n%s", err, text);
}

static int exec_err(struct chlb_state *st, const char *text, char *err, size_t len)
{
	return chlb_state_exec_text(st, text, "t", err, len);
}

/*
 * The table words of the service at vip, with slots given by address (as
 * two hosts with different slot histories would not: the slots here are a
 * function of the address, so equal words mean equal decisions).
 */
static struct chlb_table table_of(const struct chlb_state *st, const char *vip_text)
{
	struct chlb_cmd c;
	char err[CHLB_ERR_MAX], line[128];
	const struct chlb_svc_cfg *s;
	struct chlb_table_be *be;
	struct chlb_table t;

	snprintf(line, sizeof(line), "service list %s", vip_text);
	assert_int_equal(chlb_parse_line(line, &c, err, sizeof(err)), 0);
	s = chlb_state_find(st, &c.vip);
	assert_non_null(s);
	be = calloc(s->nbe + 1, sizeof(*be));
	for (__u32 i = 0; i < s->nbe; i++) {
		__u32 a = 0;

		/* 10.1.x.y -> x * 256 + y: the same slot for the same address everywhere */
		sscanf(s->be[i].name, "10.1.%*u.%u", &a);
		be[i].slot = a;
	}
	if (chlb_svc_build(s, be, &t, err, sizeof(err)))
		fail_msg("build: %s", err);
	free(be);
	return t;
}

static void same_table(const struct chlb_table *a, const struct chlb_table *b)
{
	assert_int_equal(a->nwords, b->nwords);
	assert_memory_equal(a->words, b->words, a->nwords * sizeof(*a->words));
}

/* Backend statements in two different orders, one transaction each: identical tables. */
static void statement_order_does_not_matter(void **unused)
{
	static const char *const algos[] = { "jump", "jtable table 251" };

	for (int k = 0; k < 2; k++) {
		struct chlb_state a, b;
		struct chlb_table ta, tb;
		char head[128], text_a[4096], text_b[4096];
		int la, lb;

		chlb_state_init(&a);
		chlb_state_init(&b);
		snprintf(head, sizeof(head), "service add %s algo %s\n", SVC, algos[k]);
		la = snprintf(text_a, sizeof(text_a), "%s", head);
		lb = snprintf(text_b, sizeof(text_b), "%s", head);
		/* a: ascending, b: descending, both with uneven weights */
		for (int i = 1; i <= 20; i++)
			la += snprintf(text_a + la, sizeof(text_a) - la,
				       "backend add %s 10.1.0.%d weight %d\n", SVC, i, 10 * i);
		for (int i = 20; i >= 1; i--)
			lb += snprintf(text_b + lb, sizeof(text_b) - lb,
				       "backend add %s 10.1.0.%d weight %d\n", SVC, i, 10 * i);
		exec_ok(&a, text_a);
		exec_ok(&b, text_b);
		ta = table_of(&a, SVC);
		tb = table_of(&b, SVC);
		same_table(&ta, &tb);
		chlb_table_free(&ta);
		chlb_table_free(&tb);
		/* a later batch too: removals and additions in different orders */
		exec_ok(&a, "backend del " SVC " 10.1.0.3\nbackend del " SVC " 10.1.0.7\n"
			    "backend add " SVC " 10.1.0.30\nbackend add " SVC " 10.1.0.25\n"
			    "backend add " SVC " 10.1.0.21\n");
		exec_ok(&b, "backend add " SVC " 10.1.0.21\nbackend add " SVC " 10.1.0.30\n"
			    "backend del " SVC " 10.1.0.7\nbackend add " SVC " 10.1.0.25\n"
			    "backend del " SVC " 10.1.0.3\n");
		ta = table_of(&a, SVC);
		tb = table_of(&b, SVC);
		same_table(&ta, &tb);
		if (k == 0) {
			/*
			 * Canonical order is the address text's byte order ("10.1.0.10" <
			 * "10.1.0.2"): 10.1.0.3 and .7 held buckets 13 and 17, which the
			 * new backends took in that order, the third one appended.
			 */
			const struct chlb_svc_cfg *s = &a.svc[0];

			assert_int_equal(chlb_jump_order_find(&s->order, "10.1.0.21"), 13);
			assert_int_equal(chlb_jump_order_find(&s->order, "10.1.0.25"), 17);
			assert_int_equal(chlb_jump_order_find(&s->order, "10.1.0.30"), 20);
		}
		chlb_table_free(&ta);
		chlb_table_free(&tb);
		chlb_state_free(&a);
		chlb_state_free(&b);
	}
}

/* Weights never renumber buckets: drained, heavier, lighter, the bucket stays. */
static void weights_keep_buckets(void **unused)
{
	struct chlb_state st;
	__u32 before[5];

	chlb_state_init(&st);
	exec_ok(&st, "service add " SVC " algo jump\n"
		     "backend add " SVC " 10.1.0.1\nbackend add " SVC " 10.1.0.2\n"
		     "backend add " SVC " 10.1.0.3\nbackend add " SVC " 10.1.0.4\n");
	for (int i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "10.1.0.%d", i + 1);
		before[i] = chlb_jump_order_find(&st.svc[0].order, name);
	}
	exec_ok(&st, "backend set " SVC " 10.1.0.2 weight 0\n"
		     "backend set " SVC " 10.1.0.3 weight 10000\n");
	exec_ok(&st, "backend set " SVC " 10.1.0.3 weight 1\n");
	for (int i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "10.1.0.%d", i + 1);
		assert_int_equal(chlb_jump_order_find(&st.svc[0].order, name), before[i]);
	}
	assert_int_equal(st.svc[0].order.n, 4);
	chlb_state_free(&st);
}

/* `bucket N`: placed as asked, refused with the token when it cannot be. */
static void explicit_buckets(void **unused)
{
	struct chlb_state st, keep;
	char err[CHLB_ERR_MAX * 2];
	char *before;

	chlb_state_init(&st);
	exec_ok(&st, "service add " SVC " algo jump\n"
		     "backend add " SVC " 10.1.0.1 bucket 3\n"
		     "backend add " SVC " 10.1.0.2\n"
		     "backend add " SVC " 10.1.0.3 bucket 0\n");
	/* 10.1.0.2 takes the lowest free bucket, 1; 2 stays a tombstone */
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.1"), 3);
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.2"), 1);
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.3"), 0);
	assert_int_equal(st.svc[0].order.n, 4);
	/* moving: the old bucket becomes a tombstone (the last: trimmed) */
	exec_ok(&st, "backend set " SVC " 10.1.0.1 bucket 2\n");
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.1"), 2);
	assert_int_equal(st.svc[0].order.n, 3);
	/* a bucket another backend keeps: refused, nothing changed */
	before = chlb_state_format(&st, false);
	chlb_state_copy(&keep, &st);
	assert_int_equal(
	    exec_err(&keep, "backend add " SVC " 10.1.0.9 bucket 0\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'bucket 0': held by 10.1.0.3"));
	chlb_state_free(&keep);
	/* ...free when its holder leaves in the same transaction, in any order */
	chlb_state_copy(&keep, &st);
	exec_ok(&keep, "backend add " SVC " 10.1.0.9 bucket 0\nbackend del " SVC " 10.1.0.3\n");
	assert_int_equal(chlb_jump_order_find(&keep.svc[0].order, "10.1.0.9"), 0);
	chlb_state_free(&keep);
	/* not a jump service */
	chlb_state_copy(&keep, &st);
	assert_int_equal(exec_err(&keep,
				  "service add 10.0.0.11:80/tcp algo maglev\n"
				  "backend add 10.0.0.11:80/tcp 10.1.0.1 bucket 1\n",
				  err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "'bucket': applies to algo jump and jtable only"));
	chlb_state_free(&keep);
	/* two backends swap buckets in one transaction */
	chlb_state_copy(&keep, &st);
	exec_ok(&keep,
		"backend set " SVC " 10.1.0.2 bucket 0\nbackend set " SVC " 10.1.0.3 bucket 1\n");
	assert_int_equal(chlb_jump_order_find(&keep.svc[0].order, "10.1.0.2"), 0);
	assert_int_equal(chlb_jump_order_find(&keep.svc[0].order, "10.1.0.3"), 1);
	chlb_state_free(&keep);
	/* far past the end: more empty buckets than held ones, refused */
	chlb_state_copy(&keep, &st);
	assert_int_equal(
	    exec_err(&keep, "backend add " SVC " 10.1.0.9 bucket 9\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'bucket 9': 6 of 10 buckets would be empty"));
	chlb_state_free(&keep);
	chlb_state_copy(&keep, &st);
	exec_ok(&keep, "backend add " SVC " 10.1.0.9 bucket 5\n"); /* 3 of 6 empty: fine */
	chlb_state_free(&keep);
	/* out of range: the grammar's message */
	chlb_state_copy(&keep, &st);
	assert_int_equal(
	    exec_err(&keep, "backend add " SVC " 10.1.0.9 bucket 65536\n", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "65536"));
	chlb_state_free(&keep);
	{
		char *after = chlb_state_format(&st, false);

		assert_string_equal(before, after);
		free(after);
	}
	free(before);
	chlb_state_free(&st);
}

/*
 * save -> load keeps every bucket and tombstone; applying the saved text
 * on "another host" whose own history numbered the buckets differently
 * (chlb_state_inherit, what apply does) gives the saved numbering.
 */
static void save_load_and_apply_elsewhere(void **unused)
{
	struct chlb_state a, b, other, next;
	struct chlb_table ta, tb;
	char *saved, *again;

	chlb_state_init(&a);
	exec_ok(&a, "service add " SVC " algo jump\n"
		    "backend add " SVC " 10.1.0.1 weight 300\nbackend add " SVC " 10.1.0.2\n"
		    "backend add " SVC " 10.1.0.3 weight 50\nbackend add " SVC " 10.1.0.4\n"
		    "backend add " SVC " 10.1.0.5 weight 0\n");
	exec_ok(&a, "backend del " SVC " 10.1.0.2\n");
	saved = chlb_state_format(&a, true);
	assert_non_null(strstr(saved, " buckets 5 "));
	assert_non_null(strstr(saved, "10.1.0.3 weight 50 bucket 2\n"));
	assert_non_null(strstr(saved, "10.1.0.5 weight 0 bucket 4\n"));
	chlb_state_init(&b);
	exec_ok(&b, saved);
	again = chlb_state_format(&b, true);
	assert_string_equal(saved, again);
	ta = table_of(&a, SVC);
	tb = table_of(&b, SVC);
	same_table(&ta, &tb);
	chlb_table_free(&tb);
	/* another host: the same backends, added one per transaction in another order */
	chlb_state_init(&other);
	exec_ok(&other, "service add " SVC " algo jump\n");
	exec_ok(&other, "backend add " SVC " 10.1.0.5 weight 0\n");
	exec_ok(&other, "backend add " SVC " 10.1.0.4\n");
	exec_ok(&other, "backend add " SVC " 10.1.0.3 weight 50\n");
	exec_ok(&other, "backend add " SVC " 10.1.0.1 weight 300\n");
	tb = table_of(&other, SVC);
	assert_true(tb.nwords != ta.nwords ||
		    memcmp(tb.words, ta.words, ta.nwords * sizeof(*ta.words)));
	chlb_table_free(&tb);
	/* apply -f saved on it: the file's numbering, not the host's */
	chlb_state_init(&next);
	exec_ok(&next, saved);
	chlb_state_inherit(&next, &other);
	tb = table_of(&next, SVC);
	same_table(&ta, &tb);
	chlb_table_free(&tb);
	chlb_table_free(&ta);
	free(saved);
	free(again);
	chlb_state_free(&a);
	chlb_state_free(&b);
	chlb_state_free(&other);
	chlb_state_free(&next);
}

/* A state file from before: a bucket per 100 of weight, `buckets B1,B2,...`. */
static void old_state_file_loads(void **unused)
{
	struct chlb_state st;
	char *text;

	chlb_state_init(&st);
	exec_ok(&st, "service add " SVC " algo jump fwd ipip hash 5tuple buckets 6\n"
		     "backend add " SVC " 10.1.0.1 weight 300 buckets 0,2,5\n"
		     "backend add " SVC " 10.1.0.2 weight 100 buckets 1\n"
		     "backend add " SVC " 10.1.0.3 weight 200 buckets 3,4\n");
	/* the first of each list; the others are tombstones, the trailing ones too */
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.1"), 0);
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.2"), 1);
	assert_int_equal(chlb_jump_order_find(&st.svc[0].order, "10.1.0.3"), 3);
	assert_int_equal(st.svc[0].order.n, 6);
	text = chlb_state_format(&st, false);
	assert_non_null(strstr(text, "10.1.0.1 weight 300 bucket 0\n"));
	assert_non_null(strstr(text, "10.1.0.3 weight 200 bucket 3\n"));
	free(text);
	chlb_state_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(statement_order_does_not_matter),
		cmocka_unit_test(weights_keep_buckets),
		cmocka_unit_test(explicit_buckets),
		cmocka_unit_test(save_load_and_apply_elsewhere),
		cmocka_unit_test(old_state_file_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
