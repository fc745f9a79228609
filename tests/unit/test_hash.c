// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Known answers for the shared hashing core (../shared/vectors/hash-vectors.txt). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "chlb_table.h"

/* Bitwise reference CRC32C, independent of the slicing tables. */
static __u32 crc32c_bitwise(const void *buf, size_t len)
{
	const __u8 *p = buf;
	__u32 crc = 0xffffffffu;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return crc ^ 0xffffffffu;
}

static void test_crc32c_vectors(void **state)
{
	static const __u8 flow4[] = { 0xc0, 0xa8, 0x00, 0x01, 0x0a, 0x00, 0x00,
				      0x0a, 0x30, 0x39, 0x00, 0x50, 0x06 };

	assert_int_equal(chlb_crc32c("123456789", 9), 0xe3069283u);
	assert_int_equal(chlb_crc32c(flow4, sizeof(flow4)), 0x9f471eb1u);
	assert_int_equal(chlb_fmix32(0x9f471eb1u), 0xf6e4c309u);
	assert_int_equal(chlb_crc32c("10.1.0.7#0", 10), 0x7244b7a9u);
	assert_int_equal(chlb_fmix32(0x7244b7a9u), 0x8a402e62u);
}

static void test_crc32c_tables_match_bitwise(void **state)
{
	__u8 buf[64];
	__u32 seed = 12345;

	for (int round = 0; round < 2000; round++) {
		size_t len = round % sizeof(buf);

		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = seed >> 16;
		}
		assert_int_equal(chlb_crc32c(buf, len), crc32c_bitwise(buf, len));
	}
}

static void test_flow_serialization(void **state)
{
	struct chlb_flow f;
	static const __u8 src[4] = { 192, 168, 0, 1 }, dst[4] = { 10, 0, 0, 10 };
	__u32 crc;

	memset(&f, 0, sizeof(f));
	memcpy(f.src, src, 4);
	memcpy(f.dst, dst, 4);
	f.sport = __builtin_bswap16(12345);
	f.dport = __builtin_bswap16(80);
	f.proto = 6;
	f.family = CHLB_AF_INET;
	crc = chlb_flow_crc(&f, CHLB_HASH_5TUPLE);
	assert_int_equal(crc, 0x9f471eb1u);
	assert_true(chlb_jump_key(crc) == 0x9f471eb1ULL);
	assert_int_equal(chlb_flow_crc(&f, CHLB_HASH_SRC), chlb_crc32c(src, 4));
}

/* The data plane's IPv6 shortcut (VIP share precomputed) is the same CRC. */
static void test_flow_crc_v6vip_agrees(void **state)
{
	static const __u8 zeros[16];
	__u64 x = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < 100000; i++) {
		struct chlb_flow f;
		__u32 st;

		memset(&f, 0, sizeof(f));
		for (int b = 0; b < 16; b++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			f.src[b] = (__u8)x;
			f.dst[b] = (__u8)(x >> 8);
		}
		f.sport = (__u16)(x >> 16);
		f.dport = (__u16)(x >> 32);
		f.proto = i & 1 ? 6 : 17;
		f.family = CHLB_AF_INET6;
		st = (__u32)(x >> 24);
		assert_int_equal(chlb_crc32c_advance16(st), chlb_crc32c_update(st, zeros, 16));
		assert_int_equal(chlb_flow_crc_v6vip(&f, chlb_vip_crc(f.dst)),
				 chlb_flow_crc(&f, CHLB_HASH_5TUPLE));
	}
}

static void test_jump_vectors(void **state)
{
	assert_int_equal(chlb_jump_bucket(0x9f471eb1f6e4c309ULL, 100), 98);
	assert_int_equal(chlb_jump_bucket(0x69d82df4a6d8c198ULL, 64), 48);
	assert_int_equal(chlb_jump_bucket(0x984b547427c823cdULL, 128), 117);
	assert_int_equal(chlb_jump_bucket(0xa7aa31d8c6a2fa8bULL, 1000), 512);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_vectors),
		cmocka_unit_test(test_crc32c_tables_match_bitwise),
		cmocka_unit_test(test_flow_serialization),
		cmocka_unit_test(test_flow_crc_v6vip_agrees),
		cmocka_unit_test(test_jump_vectors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
