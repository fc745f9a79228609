// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * apply.c against a fake data plane: tables go to free slots only, views
 * carry the history newest first, slots wait out their grace period,
 * removed backends turn DEAD after the view without them, and a slot gets a
 * new occupant (gen + 1, counters zeroed first) only when no table names
 * the old one. Backend slots are per (service, address): the same address
 * in two services has two, removing it from one touches only that one's,
 * next hops are resolved once per address (a backend without a route is
 * logged once, and its recovery), a service new to an id starts its
 * counters at zero, and a restart reads the owners back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "engine/apply.h"

#define HISTORY_MS 60
#define GRACE_MS   20

static struct fake {
	struct chlb_backend be[CHLB_MAX_BACKENDS];
	__u64 packets[CHLB_MAX_BACKENDS]; /* be_stats, as the data plane counts them */
	__u32 resets[CHLB_MAX_BACKENDS];
	__u32 nwords[CHLB_TABLE_SLOTS];
	struct chlb_table_hdr hdr[CHLB_TABLE_SLOTS];
	struct chlb_service view; /* the last one published */
	bool has_view;
	struct chlb_vip_key keys[CHLB_MAX_SERVICES]; /* every published view, by id */
	struct chlb_service views[CHLB_MAX_SERVICES];
	bool has[CHLB_MAX_SERVICES];
	int fail_write;
	__u32 last_tslot;
	__u32 resolves;			      /* next-hop lookups */
	__u8 mac;			      /* what they answer */
	bool no_route;			      /* ... or -ENETUNREACH */
	__u64 svc_packets[CHLB_MAX_SERVICES]; /* svc_stats, as the data plane counts them */
	__u32 svc_resets[CHLB_MAX_SERVICES];
	int no_route_logs, route_back_logs; /* the rt's log lines about routes */
} F;

static int f_set_backend(void *ctx, __u32 slot, const struct chlb_backend *be)
{
	/* a new occupant (another generation, LIVE) never shows its predecessor's counters */
	if (be->state == CHLB_BE_LIVE && be->gen != F.be[slot].gen)
		assert_int_equal(F.packets[slot], 0);
	F.be[slot] = *be;
	return 0;
}

static int f_reset_stats(void *ctx, __u32 slot)
{
	F.packets[slot] = 0;
	F.resets[slot]++;
	return 0;
}

static int f_reset_svc_stats(void *ctx, __u32 id)
{
	F.svc_packets[id] = 0;
	F.svc_resets[id]++;
	return 0;
}

static int f_resolve(void *ctx, struct chlb_backend *be)
{
	F.resolves++;
	if (F.no_route)
		return -ENETUNREACH;
	memset(be->dmac, F.mac, sizeof(be->dmac));
	be->ifindex = 7;
	be->flags |= CHLB_BE_F_NH_VALID;
	return 0;
}

static int f_get_backend(void *ctx, __u32 slot, struct chlb_backend *be)
{
	*be = F.be[slot];
	return 0;
}

static int f_get_service(void *ctx, const struct chlb_vip_key *k, struct chlb_service *v)
{
	for (int i = 0; i < CHLB_MAX_SERVICES; i++)
		if (F.has[i] && !memcmp(&F.keys[i], k, sizeof(*k))) {
			*v = F.views[i];
			return 0;
		}
	return -ENOENT;
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
	memcpy(&F.hdr[tslot], w, sizeof(F.hdr[tslot]));
	F.last_tslot = tslot;
	return 0;
}

static int f_set_service(void *ctx, const struct chlb_vip_key *k, const struct chlb_service *v)
{
	/* a service new to its id never shows its predecessor's counters */
	if (!F.has[v->id] || memcmp(&F.keys[v->id], k, sizeof(*k)))
		assert_int_equal(F.svc_packets[v->id], 0);
	F.view = *v;
	F.has_view = true;
	F.keys[v->id] = *k;
	F.views[v->id] = *v;
	F.has[v->id] = true;
	return 0;
}

static int f_del_service(void *ctx, const struct chlb_vip_key *k)
{
	F.has_view = false;
	for (int i = 0; i < CHLB_MAX_SERVICES; i++)
		if (F.has[i] && !memcmp(&F.keys[i], k, sizeof(*k)))
			F.has[i] = false;
	return 0;
}

static const struct chlb_dp_ops ops = { .set_backend = f_set_backend,
					.write_table = f_write_table,
					.set_service = f_set_service,
					.del_service = f_del_service,
					.reset_stats = f_reset_stats,
					.reset_svc_stats = f_reset_svc_stats };

/* the same, resolving next hops */
static const struct chlb_dp_ops ops_nh = { .set_backend = f_set_backend,
					   .write_table = f_write_table,
					   .set_service = f_set_service,
					   .del_service = f_del_service,
					   .reset_stats = f_reset_stats,
					   .reset_svc_stats = f_reset_svc_stats,
					   .resolve = f_resolve };

static void f_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (strstr(line, "no route to it"))
		F.no_route_logs++;
	if (strstr(line, "route to it again"))
		F.route_back_logs++;
}

static int f_get_table_hdr(void *ctx, __u32 tslot, struct chlb_table_hdr *hdr)
{
	*hdr = F.hdr[tslot];
	return 0;
}

static const struct chlb_adopt_ops aops = { .get_backend = f_get_backend,
					    .get_service = f_get_service,
					    .get_table_hdr = f_get_table_hdr };

static void exec(struct chlb_state *st, const char *line)
{
	struct chlb_cmd c;
	char err[CHLB_ERR_MAX];

	if (chlb_parse_line(line, &c, err, sizeof(err)) ||
	    chlb_state_exec(st, &c, err, sizeof(err)) || chlb_state_finalize(st, err, sizeof(err)))
		fail_msg("'%s': %s", line, err);
}

/* the next state of the apply under way (for settle_seen()) */
static const struct chlb_state *applying;
static __u32 settle_calls, settle_nbe;

/* rt->settle: records the first service's backend count in next when called */
static void settle_seen(void)
{
	settle_calls++;
	settle_nbe = applying->svc[0].nbe;
}

/* cur <- cur + line, applied */
static int change(struct chlb_rt *rt, struct chlb_state *cur, const char *line)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX];
	int r;

	assert_int_equal(chlb_state_copy(&next, cur), 0);
	exec(&next, line);
	applying = &next;
	r = chlb_rt_apply(rt, cur, &next, err, sizeof(err));
	chlb_state_free(cur);
	*cur = next;
	return r;
}

/* cur <- cur + text (several statements: one transaction), applied */
static void change_text(struct chlb_rt *rt, struct chlb_state *cur, const char *text)
{
	struct chlb_state next;
	char err[CHLB_ERR_MAX * 2];

	assert_int_equal(chlb_state_copy(&next, cur), 0);
	if (chlb_state_exec_text(&next, text, "t", err, sizeof(err)) ||
	    chlb_rt_apply(rt, cur, &next, err, sizeof(err)))
		fail_msg("%s: %s", text, err);
	chlb_state_free(cur);
	*cur = next;
}

static int svc_id(struct chlb_rt *rt, const char *vip)
{
	struct chlb_vip v;
	char err[CHLB_ERR_MAX];

	assert_int_equal(chlb_parse_vip(vip, &v, err, sizeof(err)), 0);
	return chlb_rt_svc_id(rt, &v);
}

/* the LIVE backend slot of addr in the service vip, or -1 */
static int be_slot(struct chlb_rt *rt, const char *vip, const char *addr)
{
	struct chlb_addr a;

	assert_int_equal(chlb_parse_addr(addr, &a), 0);
	return chlb_rt_be_slot(rt, svc_id(rt, vip), &a);
}

/* the service a slot's value names as its owner, or -1 */
static int owner(int slot)
{
	const struct chlb_backend *b = &F.be[slot];

	return b->flags & CHLB_BE_F_OWNER ? b->flags >> CHLB_BE_OWNER_SHIFT : -1;
}

/* timers until every removed backend's slot is free again */
static void settle(struct chlb_rt *rt)
{
	for (int i = 0; i < 3; i++) {
		usleep((HISTORY_MS + GRACE_MS + 10) * 1000);
		chlb_rt_tick(rt, chlb_now_ns());
	}
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
	/*
	 * re-adding the same address brings its held slot back as a new
	 * occupant: gen + 1 (the entries it had stay stale: the removal broke
	 * their connections) and counters from zero (the fake checks the order)
	 */
	F.packets[s2] = 99;
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.2");
	assert_int_equal(slot_of("10.1.0.2"), s2);
	assert_int_equal(F.be[s2].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[s2].gen, gen + 1);
	assert_int_equal(F.packets[s2], 0);
	assert_int_equal(F.resets[s2], 2);
	change(rt, &st, "backend del 10.0.0.10:80/tcp 10.1.0.2");
	/* once no table names it, the slot empties; its next occupant gets gen + 1 */
	settle(rt);
	assert_int_equal(F.be[s2].state, CHLB_BE_EMPTY);
	rt->free_hint = (__u32)s2;
	F.packets[s2] = 5;
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.9");
	assert_int_equal(slot_of("10.1.0.9"), s2);
	assert_int_equal(F.be[s2].gen, gen + 2);
	assert_int_equal(F.packets[s2], 0);
	assert_int_equal(F.resets[s2], 3);
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
	/* chlbd's state file thread reads next until settled: settle comes before next changes */
	rt->settle = settle_seen;
	settle_calls = 0;
	assert_int_equal(change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.3"), -EIO);
	assert_int_equal(settle_calls, 1);
	assert_int_equal(settle_nbe, 2);
	assert_memory_equal(&before, &F.view, sizeof(before));
	/* the state reverted to what serves */
	assert_int_equal(chlb_state_find(&st, &st.svc[0].vip)->nbe, 1);
	F.fail_write = 0;
	/* a change that applies leaves next as it is: no settle */
	assert_int_equal(change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.4"), 0);
	assert_int_equal(settle_calls, 1);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

#define SA "10.0.0.10:80/tcp"
#define SB "10.0.0.20:80/tcp"

/* a slot per (service, backend): removing an address from one service leaves the other's alone */
static void same_address_two_services(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	int sa, sb, s;
	__u32 gen_a, gen_b;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change_text(rt, &st,
		    "service add " SA " algo jump\nbackend add " SA " 10.1.0.2\n"
		    "backend add " SA " 10.1.0.3\n"
		    "service add " SB " algo maglev table 251\nbackend add " SB " 10.1.0.2\n");
	sa = be_slot(rt, SA, "10.1.0.2");
	sb = be_slot(rt, SB, "10.1.0.2");
	assert_true(sa >= 0 && sb >= 0);
	assert_int_not_equal(sa, sb);
	assert_int_equal(owner(sa), svc_id(rt, SA));
	assert_int_equal(owner(sb), svc_id(rt, SB));
	assert_int_equal(F.be[sa].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[sb].state, CHLB_BE_LIVE);
	/* each service's table names its own slot only */
	{
		const struct chlb_rt_svc *b = &rt->svc[svc_id(rt, SB)];
		const struct chlb_rt_slot *cur = &b->slot[b->view[0]];

		assert_int_equal(cur->nbes, 1);
		assert_int_equal(cur->bes[0], sb);
	}
	gen_a = F.be[sa].gen;
	gen_b = F.be[sb].gen;
	F.packets[sb] = 50;

	/* removed from A: A's slot DEAD (its entries are decided again), B's untouched */
	change(rt, &st, "backend del " SA " 10.1.0.2");
	assert_int_equal(F.be[sa].state, CHLB_BE_DEAD);
	assert_int_equal(be_slot(rt, SA, "10.1.0.2"), -1);
	assert_int_equal(F.be[sb].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[sb].gen, gen_b);
	assert_int_equal(F.packets[sb], 50);
	assert_int_equal(be_slot(rt, SB, "10.1.0.2"), sb);

	/* back in A while its slot is held: that slot, a new generation, counters from 0 */
	F.packets[sa] = 7;
	change(rt, &st, "backend add " SA " 10.1.0.2");
	assert_int_equal(be_slot(rt, SA, "10.1.0.2"), sa);
	assert_int_equal(F.be[sa].gen, gen_a + 1);
	assert_int_equal(F.packets[sa], 0);
	assert_int_equal(F.resets[sa], 2);

	/* removed again, and re-added once nothing names the slot: a new occupant anyway */
	change(rt, &st, "backend del " SA " 10.1.0.2");
	settle(rt);
	assert_int_equal(F.be[sa].state, CHLB_BE_EMPTY);
	assert_int_equal(F.be[sb].state, CHLB_BE_LIVE);
	change(rt, &st, "backend add " SA " 10.1.0.2");
	s = be_slot(rt, SA, "10.1.0.2");
	assert_true(s >= 0 && s != sb);
	assert_true(s != sa || F.be[s].gen > gen_a + 1);
	assert_int_equal(owner(s), svc_id(rt, SA));
	assert_int_equal(F.packets[s], 0);
	assert_int_equal(F.be[sb].gen, gen_b);

	/* deleting service B retires B's slot only */
	change(rt, &st, "service del " SB);
	assert_int_equal(F.be[sb].state, CHLB_BE_DEAD);
	assert_int_equal(F.be[s].state, CHLB_BE_LIVE);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

/* an address in three services: one next-hop lookup when it joins, one per refresh round */
static void nexthop_once_per_address(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops_nh, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	const char *vips[] = { "10.0.0.10:80/tcp", "10.0.0.11:80/tcp", "10.0.0.12:80/tcp" };
	__u64 now = chlb_now_ns();

	memset(&F, 0, sizeof(F));
	F.mac = 0xaa;
	chlb_state_init(&st);
	change_text(
	    rt, &st,
	    "service add 10.0.0.10:80/tcp algo jump\nbackend add 10.0.0.10:80/tcp 10.1.0.2\n"
	    "service add 10.0.0.11:80/tcp algo jump\nbackend add 10.0.0.11:80/tcp 10.1.0.2\n"
	    "service add 10.0.0.12:80/tcp algo jump\nbackend add 10.0.0.12:80/tcp 10.1.0.2\n");
	assert_int_equal(F.resolves, 1);
	for (int i = 0; i < 3; i++) {
		int s = be_slot(rt, vips[i], "10.1.0.2");

		assert_true(s >= 0);
		assert_true(F.be[s].flags & CHLB_BE_F_NH_VALID);
		assert_int_equal(F.be[s].dmac[0], 0xaa);
		assert_int_equal(owner(s), svc_id(rt, vips[i]));
	}
	/* the neighbour's MAC changes: the refresh looks it up once, writes all three */
	F.mac = 0xbb;
	F.resolves = 0;
	chlb_rt_tick(rt, now + 2000000000ull);
	assert_int_equal(F.resolves, 1);
	for (int i = 0; i < 3; i++) {
		int s = be_slot(rt, vips[i], "10.1.0.2");

		assert_int_equal(F.be[s].dmac[0], 0xbb);
		assert_int_equal(owner(s), svc_id(rt, vips[i])); /* the owner survives */
	}
	chlb_rt_tick(rt, now + 4000000000ull);
	assert_int_equal(F.resolves, 2);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

/* a restarted chlbd reads each slot's owner back; slots of an older chlbd get claimed */
static void adopt_reads_owners(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS), *rt2;
	struct chlb_state st, none, next;
	char err[CHLB_ERR_MAX];
	int sa, sb;
	__u32 gen_a;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change_text(rt, &st,
		    "service add " SA " algo jump\nbackend add " SA " 10.1.0.2\n"
		    "service add " SB " algo jump\nbackend add " SB " 10.1.0.2\n");
	sa = be_slot(rt, SA, "10.1.0.2");
	sb = be_slot(rt, SB, "10.1.0.2");
	gen_a = F.be[sa].gen;
	chlb_rt_free(rt);

	/* restart: the same slots per service, nothing rewritten by the first apply */
	F.resets[sa] = F.resets[sb] = 0;
	rt2 = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	assert_int_equal(chlb_rt_adopt(rt2, &aops, &st), 2);
	assert_int_equal(be_slot(rt2, SA, "10.1.0.2"), sa);
	assert_int_equal(be_slot(rt2, SB, "10.1.0.2"), sb);
	chlb_state_init(&none);
	assert_int_equal(chlb_state_copy(&next, &st), 0);
	rt2->defer_adopted = true;
	assert_int_equal(chlb_rt_apply(rt2, &none, &next, err, sizeof(err)), 0);
	assert_int_equal(F.be[sa].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[sb].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[sa].gen, gen_a);
	/* the rebuilds name the same slots: identical tables, adopted as they are */
	assert_int_equal(chlb_rt_verify_next(rt2, &next), 1);
	assert_int_equal(chlb_rt_verify_next(rt2, &next), 0);
	assert_int_equal(rt2->svc[svc_id(rt2, SA)].swaps + rt2->svc[svc_id(rt2, SB)].swaps, 0);
	assert_int_equal(F.resets[sa] + F.resets[sb], 0);
	/* and removing it from A still leaves B's */
	change(rt2, &next, "backend del " SA " 10.1.0.2");
	assert_int_equal(F.be[sa].state, CHLB_BE_DEAD);
	assert_int_equal(F.be[sb].state, CHLB_BE_LIVE);
	chlb_rt_free(rt2);
	chlb_state_free(&next);

	/* pins of a chlbd from before per-service slots: no owner; A claims its slot */
	F.be[sa].flags = 0;
	F.be[sa].state = CHLB_BE_LIVE;
	F.be[sb] = (struct chlb_backend){ .gen = F.be[sb].gen };
	chlb_state_free(&st);
	chlb_state_init(&st);
	exec(&st, "service add " SA " algo jump");
	exec(&st, "backend add " SA " 10.1.0.2");
	rt2 = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	assert_int_equal(chlb_rt_adopt(rt2, &aops, &st), 1);
	assert_int_equal(be_slot(rt2, SA, "10.1.0.2"), sa);
	assert_int_equal(chlb_state_copy(&next, &st), 0);
	assert_int_equal(chlb_rt_apply(rt2, &none, &next, err, sizeof(err)), 0);
	assert_int_equal(owner(sa), svc_id(rt2, SA));
	assert_int_equal(F.be[sa].gen, gen_a); /* the same occupant: its entries stay valid */
	assert_int_equal(F.be[sa].state, CHLB_BE_LIVE);
	chlb_rt_free(rt2);
	chlb_state_free(&next);
	chlb_state_free(&st);
	chlb_state_free(&none);
}

/* a service whose swap fails keeps serving its old table: its removed backend stays LIVE */
static void failed_removal_keeps_backend(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	int s;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change_text(rt, &st,
		    "service add " SA " algo jump\nbackend add " SA " 10.1.0.2\n"
		    "backend add " SA " 10.1.0.3\n");
	s = be_slot(rt, SA, "10.1.0.3");
	F.fail_write = 1;
	assert_int_equal(change(rt, &st, "backend del " SA " 10.1.0.3"), -EIO);
	F.fail_write = 0;
	assert_int_equal(F.be[s].state, CHLB_BE_LIVE);
	/* and the next change, which does remove it, marks it DEAD */
	assert_int_equal(change(rt, &st, "backend del " SA " 10.1.0.3"), 0);
	assert_int_equal(F.be[s].state, CHLB_BE_DEAD);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

/* a service taking the id of a deleted one counts from zero */
static void service_id_reuse_zeroes_counters(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	int id;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change_text(rt, &st, "service add " SA " algo jump\nbackend add " SA " 10.1.0.2\n");
	id = svc_id(rt, SA);
	assert_int_equal(F.svc_resets[id], 1);
	F.svc_packets[id] = 1000; /* its traffic */
	change(rt, &st, "service del " SA);
	settle(rt);
	/* f_set_service asserts the new service's counters are zero when published */
	change_text(rt, &st, "service add " SB " algo jump\nbackend add " SB " 10.1.0.3\n");
	assert_int_equal(svc_id(rt, SB), id);
	assert_int_equal(F.svc_resets[id], 2);
	/* an update of a running service keeps its counters */
	F.svc_packets[id] = 7;
	change(rt, &st, "backend add " SB " 10.1.0.4");
	assert_int_equal(F.svc_packets[id], 7);
	assert_int_equal(F.svc_resets[id], 2);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

/*
 * a backend without a route: its cached next hop is dropped (the data plane
 * drops its packets as drop_no_route), one log line per address whatever
 * the services and refresh rounds, one when the route is back
 */
static void no_route_logged_once(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops_nh, HISTORY_MS, GRACE_MS);
	struct chlb_state st;
	__u64 now = chlb_now_ns();
	int a, b;

	memset(&F, 0, sizeof(F));
	rt->log = f_log;
	F.mac = 0xaa;
	chlb_state_init(&st);
	change_text(rt, &st, "service add " SA " algo jump\nbackend add " SA " 10.1.0.2\n");
	a = be_slot(rt, SA, "10.1.0.2");
	assert_true(F.be[a].flags & CHLB_BE_F_NH_VALID);
	assert_int_equal(F.no_route_logs, 0);
	/* the route goes: the refresh clears the next hop, one line */
	F.no_route = true;
	chlb_rt_tick(rt, now + 2000000000ull);
	assert_false(F.be[a].flags & CHLB_BE_F_NH_VALID);
	assert_int_equal(F.no_route_logs, 1);
	chlb_rt_tick(rt, now + 4000000000ull);
	chlb_rt_tick(rt, now + 6000000000ull);
	assert_int_equal(F.no_route_logs, 1);
	/* the same address in another service, and a new address: one line for the new one */
	change_text(rt, &st,
		    "service add " SB " algo jump\nbackend add " SB " 10.1.0.2\n"
		    "backend add " SB " 10.1.0.3\n");
	b = be_slot(rt, SB, "10.1.0.3");
	assert_false(F.be[b].flags & CHLB_BE_F_NH_VALID);
	assert_false(F.be[be_slot(rt, SB, "10.1.0.2")].flags & CHLB_BE_F_NH_VALID);
	assert_int_equal(F.no_route_logs, 2);
	assert_int_equal(F.route_back_logs, 0);
	/* the route is back: a line per address, next hops valid again */
	F.no_route = false;
	chlb_rt_tick(rt, now + 8000000000ull);
	assert_int_equal(F.route_back_logs, 2);
	assert_true(F.be[a].flags & CHLB_BE_F_NH_VALID);
	assert_true(F.be[b].flags & CHLB_BE_F_NH_VALID);
	chlb_rt_tick(rt, now + 10000000000ull);
	assert_int_equal(F.route_back_logs, 2);
	assert_int_equal(F.no_route_logs, 2);
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

/*
 * Health checks' engine calls: chlb_rt_be_renew() gives a LIVE slot gen + 1
 * and keeps its counters (the same occupant: on-down reset re-decides its
 * connections); chlb_rt_swap_wait() says 0 while a swap would find a free
 * table slot at once, and when one frees while every slot is in the view
 * or its grace period (a health swap is deferred until then).
 */
static void renew_and_swap_wait(void **unused)
{
	struct chlb_rt *rt = chlb_rt_new(&ops, 60000, 1000); /* long history and grace */
	struct chlb_state st;
	struct chlb_vip v, other;
	struct chlb_addr a;
	char err[CHLB_ERR_MAX], line[128];
	__u64 now, w = 0;
	__u32 gen, resets;
	int s2, id, i;

	memset(&F, 0, sizeof(F));
	chlb_state_init(&st);
	change(rt, &st, "service add 10.0.0.10:80/tcp algo maglev table 251");
	change(rt, &st, "backend add 10.0.0.10:80/tcp 10.1.0.2");
	s2 = slot_of("10.1.0.2");
	gen = F.be[s2].gen;
	resets = F.resets[s2];
	id = svc_id(rt, "10.0.0.10:80/tcp");
	assert_int_equal(chlb_parse_addr("10.1.0.2", &a), 0);
	assert_int_equal(chlb_rt_be_renew(rt, id, &a), 0);
	assert_int_equal(F.be[s2].state, CHLB_BE_LIVE);
	assert_int_equal(F.be[s2].gen, gen + 1);
	assert_int_equal(rt->be[s2].gen, gen + 1);
	assert_int_equal(F.resets[s2], resets); /* counters kept */
	assert_int_equal(chlb_parse_addr("10.1.0.99", &a), 0);
	assert_int_equal(chlb_rt_be_renew(rt, id, &a), -ENOENT);

	assert_int_equal(chlb_parse_vip("10.0.0.10:80/tcp", &v, err, sizeof(err)), 0);
	assert_int_equal(chlb_parse_vip("10.0.0.11:80/tcp", &other, err, sizeof(err)), 0);
	assert_int_equal(chlb_rt_swap_wait(rt, &other, chlb_now_ns()), 0); /* no such service */
	/* swap while a slot is free; within CHLB_SLOTS_PER_SERVICE swaps none is */
	for (i = 3; i < 3 + CHLB_SLOTS_PER_SERVICE + 1; i++) {
		now = chlb_now_ns();
		w = chlb_rt_swap_wait(rt, &v, now);
		if (w)
			break;
		snprintf(line, sizeof(line), "backend add 10.0.0.10:80/tcp 10.1.0.%d", i);
		assert_int_equal(change(rt, &st, line), 0);
	}
	assert_true(w > now && w <= now + 1000 * 1000000ull);
	assert_int_equal(chlb_rt_swap_wait(rt, &v, w), 0); /* free when it said */
	chlb_rt_free(rt);
	chlb_state_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(swaps_and_history),
		cmocka_unit_test(backend_lifecycle),
		cmocka_unit_test(failure_keeps_old),
		cmocka_unit_test(same_address_two_services),
		cmocka_unit_test(nexthop_once_per_address),
		cmocka_unit_test(adopt_reads_owners),
		cmocka_unit_test(failed_removal_keeps_backend),
		cmocka_unit_test(service_id_reuse_zeroes_counters),
		cmocka_unit_test(no_route_logged_once),
		cmocka_unit_test(renew_and_swap_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
