// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * conn_filter's layout (include/chlb_maps.h), counted in userspace with the
 * same helpers the data plane uses: no false negatives, and the false
 * positive rate at the design load (a full 1M-entry conns table) that the
 * SYN path pays an LRU probe for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "chlb_maps.h"

#define LOAD (1u << 20) /* CHLB_DP_DEFAULT_CONN_MAX */

/* Client flow i of a set (IPv4 TCP to one VIP): distinct sets never share a flow. */
static void client_flow(struct chlb_flow *f, __u32 set, __u32 i)
{
	__u32 addr = __builtin_bswap32(0x0a000000u | (set << 22) | (i >> 4));

	memset(f, 0, sizeof(*f));
	memcpy(f->src, &addr, 4);
	memcpy(f->dst, "\xc0\x00\x02\x01", 4);
	f->sport = __builtin_bswap16((__u16)(1024 + (i & 15) * 4001));
	f->dport = __builtin_bswap16(443);
	f->proto = 6;
	f->family = CHLB_AF_INET;
}

static __u32 flow_fkey(__u32 set, __u32 i)
{
	struct chlb_flow f;

	client_flow(&f, set, i);
	return chlb_conn_fkey(&f);
}

static int maybe(const __u64 *words, __u32 fk)
{
	__u64 m = chlb_filter_mask(fk);

	return (words[chlb_filter_word(fk)] & m) == m;
}

static void test_load_and_false_positives(void **state)
{
	__u64 *words = calloc(CHLB_CONN_FILTER_WORDS, sizeof(*words));
	__u32 i, fp = 0;

	(void)state;
	assert_non_null(words);
	for (i = 0; i < LOAD; i++) {
		__u32 fk = flow_fkey(0, i);

		words[chlb_filter_word(fk)] |= chlb_filter_mask(fk);
	}
	for (i = 0; i < LOAD; i++)
		assert_true(maybe(words, flow_fkey(0, i))); /* no false negatives */
	for (i = 0; i < LOAD; i++)
		fp += maybe(words, flow_fkey(1, i));
	print_message("false positives at %u entries: %.2f%%\n", LOAD, 100.0 * fp / LOAD);
	/* three bits measure 3.7%; two bits per flow gave 5.3%, correlated positions more */
	assert_true(fp < LOAD / 100 * 42 / 10);
	free(words);
}

/* A SYN stamp is fresh for `window` ticks, never after, and names its slot. */
static void test_syn_stamp(void **state)
{
	const __u32 window = CHLB_SYN_FRESH_S * 1000; /* HZ 1000 */
	__u32 t0 = 8191, st = chlb_syn_stamp(t0, 6 * 37 + 4);

	(void)state;
	assert_int_equal(st & 7, (6 * 37 + 4) & 7);
	assert_true(chlb_syn_fresh(st, t0, window));
	assert_true(chlb_syn_fresh(st, t0 + window, window));
	assert_false(chlb_syn_fresh(st, t0 + window + 1, window));
	/* old stamps stay stale: 29 bits of a 1000 Hz clock wrap after 6 days */
	assert_false(chlb_syn_fresh(st, t0 + 86400u * 1000, window));
	/* across the clock's 32-bit wrap, as jiffies truncated to 32 bits do */
	st = chlb_syn_stamp(0xfffffff0u, 1);
	assert_true(chlb_syn_fresh(st, 0x10u, window));
	/* no stamp is never fresh, even at boot time; a real one is never 0 */
	assert_false(chlb_syn_fresh(0, 0, window));
	assert_false(chlb_syn_fresh(0, 5, window));
	assert_int_not_equal(chlb_syn_stamp(0, 0), 0);
	assert_true(chlb_syn_fresh(chlb_syn_stamp(0, 0), 1, window)); /* stamped one tick late */
	/* the six table slots of any service differ in their low three bits */
	for (__u32 id = 0; id < CHLB_MAX_SERVICES; id++)
		for (__u32 a = 0; a < CHLB_SLOTS_PER_SERVICE; a++)
			for (__u32 b = a + 1; b < CHLB_SLOTS_PER_SERVICE; b++)
				assert_int_not_equal((id * CHLB_SLOTS_PER_SERVICE + a) & 7,
						     (id * CHLB_SLOTS_PER_SERVICE + b) & 7);
}

/* The flow key changes with every field of the 5-tuple, so no two connections share bits by design. */
static void test_fkey_uses_every_field(void **state)
{
	struct chlb_flow f, g;
	__u32 k;

	(void)state;
	client_flow(&f, 0, 7);
	k = chlb_conn_fkey(&f);
	for (size_t i = 0; i < offsetof(struct chlb_flow, pad); i++) {
		g = f;
		((__u8 *)&g)[i] ^= 0x10;
		assert_int_not_equal(chlb_conn_fkey(&g), k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_false_positives),
		cmocka_unit_test(test_syn_stamp),
		cmocka_unit_test(test_fkey_uses_every_field),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
