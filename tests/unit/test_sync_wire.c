// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The entry-sync wire codec (user/lib/wire/sync_wire.h), the only code that
 * decodes bytes a network peer sent: records go out and come back the
 * same, every message type's length is what the format says, and each
 * kind of bad input is refused with its reason - never read past the
 * bytes given, never a record whose destination is not its VIP.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "wire/sync_wire.h"

static __u8 buf[SYNC_WIRE_MSG_MAX];

/* A TCP entry 10.0.1.2:40000 -> 10.0.0.10:80 on backend 10.0.2.11 (IPv4) or the IPv6 same. */
static struct sync_entry entry(bool v6)
{
	struct sync_entry e = { 0 };
	__u8 fam = v6 ? CHLB_AF_INET6 : CHLB_AF_INET;
	int af = v6 ? AF_INET6 : AF_INET;

	e.vip.addr.family = e.flow.family = e.backend.family = fam;
	inet_pton(af, v6 ? "fd00::10" : "10.0.0.10", e.vip.addr.a);
	inet_pton(af, v6 ? "fd00:1::2" : "10.0.1.2", e.flow.src);
	inet_pton(af, v6 ? "fd00:2::11" : "10.0.2.11", e.backend.a);
	memcpy(e.flow.dst, e.vip.addr.a, 16);
	e.vip.proto = e.flow.proto = IPPROTO_TCP;
	e.vip.port = 80;
	e.flow.sport = htons(40000);
	e.flow.dport = htons(80);
	return e;
}

/* One RECORDS message of e into buf: its length (with the tag's room). */
static size_t one_record(const struct sync_entry *e)
{
	sync_wire_hdr(buf, SYNC_MSG_RECORDS, 1);
	sync_wire_put(buf + SYNC_WIRE_HDR, e);
	return SYNC_WIRE_HDR + SYNC_WIRE_REC + SYNC_TAG_LEN;
}

static void test_records_round_trip(void **state)
{
	(void)state;
	for (int v6 = 0; v6 < 2; v6++) {
		struct sync_entry e = entry(v6), got;
		enum sync_msg_type type;
		const char *why = NULL;
		__u16 count;
		size_t len;

		e.flags = CHLB_CONN_F_ENDED;
		len = one_record(&e);
		assert_int_equal(sync_wire_msg(buf, len, &type, &count, &why), (int)len);
		assert_int_equal(type, SYNC_MSG_RECORDS);
		assert_int_equal(count, 1);
		assert_int_equal(sync_wire_get(buf, 0, &got, &why), 0);
		assert_memory_equal(&got.vip, &e.vip, sizeof(e.vip));
		assert_memory_equal(&got.flow, &e.flow, sizeof(e.flow));
		assert_memory_equal(&got.backend, &e.backend, sizeof(e.backend));
		assert_int_equal(got.flags, CHLB_CONN_F_ENDED);
	}
}

/* A message is complete only with every byte its header promises. */
static void test_lengths(void **state)
{
	static const struct {
		enum sync_msg_type type;
		__u16 count;
		size_t len;
	} m[] = {
		{ SYNC_MSG_RECORDS, 256, SYNC_WIRE_MSG_MAX },
		{ SYNC_MSG_DUMP_END, 0, SYNC_WIRE_HDR + SYNC_TAG_LEN },
		{ SYNC_MSG_HELLO, 0, SYNC_WIRE_HELLO },
		{ SYNC_MSG_CHALLENGE, 0, SYNC_WIRE_CHALL },
		{ SYNC_MSG_PROOF, 0, SYNC_WIRE_PROOF },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		enum sync_msg_type type;
		const char *why = NULL;
		__u16 count;

		memset(buf, 0, sizeof(buf));
		sync_wire_hdr(buf, m[i].type, m[i].count);
		for (size_t have = 0; have < m[i].len; have += 7)
			assert_int_equal(sync_wire_msg(buf, have, &type, &count, &why), 0);
		assert_int_equal(sync_wire_msg(buf, m[i].len, &type, &count, &why), (int)m[i].len);
		assert_int_equal(sync_wire_msg(buf, sizeof(buf), &type, &count, &why),
				 (int)m[i].len);
		assert_int_equal(type, m[i].type);
	}
}

/* Header bytes set to v at offset off: the message is refused, and why. */
static void bad_header(int off, __u8 v, __u16 count, const char *want)
{
	enum sync_msg_type type;
	const char *why = NULL;
	__u16 c;

	memset(buf, 0, sizeof(buf));
	sync_wire_hdr(buf, SYNC_MSG_RECORDS, count);
	buf[off] = v;
	assert_int_equal(sync_wire_msg(buf, sizeof(buf), &type, &c, &why), -EBADMSG);
	assert_non_null(why);
	assert_non_null(strstr(why, want));
}

static void test_bad_headers(void **state)
{
	enum sync_msg_type type;
	const char *why = NULL;
	__u16 c;

	(void)state;
	bad_header(0, 'X', 1, "bad magic");
	bad_header(3, '1', 1, "sync v1");
	bad_header(5, 1, 1, "header padding");
	bad_header(4, 0, 1, "unknown message type");
	bad_header(4, 6, 1, "unknown message type");
	bad_header(4, SYNC_MSG_RECORDS, 0, "record count");
	bad_header(4, SYNC_MSG_RECORDS, 257, "record count");
	bad_header(4, SYNC_MSG_HELLO, 1, "records in a message that has none");
	bad_header(4, SYNC_MSG_DUMP_END, 3, "records in a message that has none");
	/* a bad magic is refused from its first byte, before a header is whole */
	memcpy(buf, "GE", 2);
	assert_int_equal(sync_wire_msg(buf, 2, &type, &c, &why), -EBADMSG);
}

/* Record byte off set to v: refused, and why. */
static void bad_record(int off, __u8 v, const char *want)
{
	struct sync_entry e = entry(false), got;
	const char *why = NULL;

	one_record(&e);
	buf[SYNC_WIRE_HDR + off] = v;
	assert_int_equal(sync_wire_get(buf, 0, &got, &why), -EBADMSG);
	assert_non_null(why);
	assert_non_null(strstr(why, want));
}

static void test_bad_records(void **state)
{
	(void)state;
	bad_record(0, 5, "family");		   /* the VIP's */
	bad_record(57, 0, "family");		   /* the flow's */
	bad_record(59, 7, "family");		   /* the backend's */
	bad_record(4 + 5, 1, "family");		   /* an IPv4 VIP with a non-zero tail */
	bad_record(1, IPPROTO_ICMP, "protocol");   /* not TCP or UDP */
	bad_record(56, IPPROTO_UDP, "protocol");   /* the VIP's and the flow's differ */
	bad_record(58, 0x80, "flags");		   /* unknown */
	bad_record(58, CHLB_CONN_F_HELD, "flags"); /* a placeholder never leaves a host */
	bad_record(79, 1, "record padding");
	bad_record(36 + 3, 99, "not its VIP"); /* destination address */
	bad_record(54 + 1, 81, "not its VIP"); /* destination port */
}

/* A VIP of port 0 (all ports) takes any destination port; a VIP with a port only its own. */
static void test_all_port_vip(void **state)
{
	struct sync_entry e = entry(false), got;
	const char *why = NULL;

	(void)state;
	e.vip.port = 0;
	e.flow.dport = htons(8443);
	one_record(&e);
	assert_int_equal(sync_wire_get(buf, 0, &got, &why), 0);
	assert_int_equal(got.vip.port, 0);
	assert_int_equal(ntohs(got.flow.dport), 8443);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_round_trip), cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_bad_headers),	   cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_all_port_vip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
