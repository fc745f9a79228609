// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * apply.c against a fake data plane: tables go to free slots only, views
 * carry the history newest first, slots wait out their grace period,
 * removed backends turn DEAD after the view without them, and a slot gets a
 * new occupant (gen + 1) only when no table names the old one.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "apply.h"

#define HISTORY_MS 60
#define GRACE_MS   20

static struct fake {
	struct chlb_backend be[CHLB_MAX_BACKENDS];
	__u32 nwords[CHLB_TABLE_SLOTS];
	struct chlb_service view;
	bool has_view;
	int fail_write;
	__u32 last_tslot;
} F;

static int f_set_backend(void *ctx, __u32 slot, const struct chlb_backend *be)
{
	F.be[slot] = *be;
	return 0;
}

static int f_write_table(void *ctx, __u32 tslot, const __u32 *w, __u32 n)
{
	if (F.fail_write)
		return -EIO;
	/* the atomicity rule: never write a slot a published view names */
	for (__u32 i = 0; F.has_view && i < F.view.ntables; i++)
		if (F.view.table[i] == tslot)
			fail_msg("table slot %u written while in the view", tslot);
	F.nwords[tslot] = n;
	F.last_tslot = tslot;
	return 0;
}

static int f_set_service(void *ctx, const struct chlb_vip_key *k, const struct chlb_service *v)
{
	F.view = *v;
	F.has_view = true;
	return 0;
}

static int f_del_service(void *ctx, const struct chlb_vip_key *k)
{
	F.has_view = false;
	return 0;
}

static const struct chlb_dp_ops ops = { .set_backend = f_set_backend,
					.write_table = f_write_table,
					.set_service = f_set_service,
					.del_service = f_del_service };

static void exec(struct chlb_state *st, const char *line)
{
	struct chlb_cmd c;
	char err[CHLB_ERR_MAX];

	if (chlb_parse_line(line, &c, err, sizeof(err)) ||
	    chlb_state_exec(st, &c, err, sizeof(err)) || chlb_state_finalize(st, err, sizeof(err)))
		fail_msg("'%s': %s", line, err);
}

/* cur <- cur + line, applied */
static int change(struct chlb_rt *rt, struct chlb_state *cur, const char *line)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX];
	int r;

	assert_int_equal(chlb_state_copy(&next, cur), 0);
	exec(&next, line);
	r = chlb_rt_apply(rt, cur, &next, err, sizeof(err));
	chlb_state_free(cur);
	*cur = next;
	return r;
}

static int slot_of(const char *addr)
{
	struct chlb_addr a;

	chlb_parse_addr(addr, &a);
	for (int i = 0; i < CHLB_MAX_BACKENDS; i++)
		if (F.be[i].family && !memcmp(F.be[i].addr, a.a, 16))
			return i;
	return -1;
}

static void swaps_and_history(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	char line[128];
	__u32 first;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	assert_int_equal(change(rt, &st, "service add 10.0.0.10:80/tcp algo maglev table 251"), 0);
	assert_int_equal(change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.2"), 0);
	assert_int_equal(F.view.ntables, 2);
	first = F.view.table[0];
	assert_int_equal(F.be[slot_of("10.1.0.2")].state, CHLB_BE_LIVE);
	/* rapid changes: history fills to CHLB_HISTORY_MAX, newest first, and the
	 * fake asserts no write ever hits a slot in the view */
	for (int i = 3; i < 12; i++) {
		snprintf(line, sizeof(line), "backend add 10.0.0.10:80/tcp 10.1.0.%d", i);
		assert_int_equal(change(rt, &st, line), 0);
		assert_int_equal(F.view.table[0], F.last_tslot);
		assert_true(F.view.ntables <= CHLB_HISTORY_MAX);
	}
	assert_int_equal(F.view.ntables, CHLB_HISTORY_MAX);
	assert_int_not_equal(F.view.table[0], first);
	/* past the history window the view shrinks to the current table */
	usleep((HISTORY_MS + GRACE_MS + 10) * 1000);
	chlb_rt_tick(rt, chlb_now_ns());
	assert_int_equal(F.view.ntables, 1);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

static void backend_lifecycle(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	int s2;
	__u32 gen;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change(rt, &st, "service add 10.0.0.10:80/tcp algo ring");
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.2");
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.3");
	s2 = slot_of("10.1.0.2");
	gen = F.be[s2].gen;
	F.be[s2].flags = CHLB_BE_F_NH_VALID; /* as if resolved */
	rt->be[s2].last.flags = CHLB_BE_F_NH_VALID;
	assert_int_equal(change(rt, &st, "backend del 10.0.0.10:80/tcp 10.1.0.2"), 0);
	assert_int_equal(F.be[s2].state, CHLB_BE_DEAD);
	assert_true(F.be[s2].flags & CHLB_BE_F_NH_VALID); /* readers keep a next hop */
	/* a new backend must not take the slot: history tables still name it */
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.4");
	assert_int_not_equal(slot_of("10.1.0.4"), s2);
	/* re-adding the same address revives its slot, same generation */
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.2");
	assert_int_equal(slot_of("10.1.0.2"), s2);
	assert_int_equal(F.be[s2].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[s2].gen, gen);
	change(rt, &st, "backend del 10.0.0.10:80/tcp 10.1.0.2");
	/* once no table names it, the slot empties; its next occupant gets gen + 1 */
	for (int i = 0; i < 3; i++) {
		usleep((HISTORY_MS + GRACE_MS + 10) * 1000);
		chlb_rt_tick(rt, chlb_now_ns());
	}
	assert_int_equal(F.be[s2].state, CHLB_BE_EMPTY);
	rt->free_hint = (__u32)s2;
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.9");
	assert_int_equal(slot_of("10.1.0.9"), s2);
	assert_int_equal(F.be[s2].gen, gen + 1);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

static void failure_keeps_old(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	struct chlb_service before;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change(rt, &st, "service add 10.0.0.10:80/tcp algo jump");
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.2");
	before = F.view;
	F.fail_write = 1;
	assert_int_equal(change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.3"), -1);
	assert_memory_equal(&before, &F.view, sizeof(before));
	/* the state reverted to what serves */
	assert_int_equal(chlb_state_find(&st, &st.svc[0].vip)->nbe, 1);
	F.fail_write = 0;
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(swaps_and_history),
		cmocka_unit_test(backend_lifecycle),
		cmocka_unit_test(failure_keeps_old),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
