// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * json_out.c: what chlbd and chlbctl print is valid JSON whatever a request,
 * an interface name or a sim name held: invalid UTF-8 becomes \ufffd (valid
 * sequences stay as they are), NaN and infinities become null, "/" is not
 * escaped, and fixed-precision numbers keep their decimals.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "base/json_out.h"

/* {"s": s} as chlb_json_dump() prints it */
static char *dump_str(const char *s)
{
	json_object *o = json_object_new_object();
	char *out;

	json_object_object_add(o, "s", json_object_new_string(s));
	out = chlb_json_dump(o);
	json_object_put(o);
	assert_non_null(out);
	return out;
}

static void expect(const char *in, const char *want)
{
	char *got = dump_str(in);

	if (strcmp(got, want))
		fail_msg("got %s, want %s", got, want);
	free(got);
}

static void strings(void **unused)
{
	expect("q\"x", "{\"s\":\"q\\\"x\"}");
	expect("10.0.0.1:80/tcp", "{\"s\":\"10.0.0.1:80/tcp\"}"); /* no \/ */
	expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",	  /* é, €, an emoji: kept */
	       "{\"s\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}");
	expect("a\xff"
	       "b",
	       "{\"s\":\"a\\ufffdb\"}");
	expect("\xc3(", "{\"s\":\"\\ufffd(\"}");	  /* lead byte without its continuation */
	expect("\xc0\xaf", "{\"s\":\"\\ufffd\\ufffd\"}"); /* overlong "/" */
	expect("\xe0\x80\xaf", "{\"s\":\"\\ufffd\\ufffd\\ufffd\"}"); /* overlong, 3 bytes */
	expect("\xed\xa0\x80", "{\"s\":\"\\ufffd\\ufffd\\ufffd\"}"); /* a UTF-16 surrogate */
	expect("\xf4\x90\x80\x80", "{\"s\":\"\\ufffd\\ufffd\\ufffd\\ufffd\"}"); /* > U+10FFFF */
	expect("\xe2\x82", "{\"s\":\"\\ufffd\\ufffd\"}");	  /* cut short by the end */
	expect("tab\there\x01", "{\"s\":\"tab\\there\\u0001\"}"); /* json-c's escapes stay */
	expect("back\\slash\xff", "{\"s\":\"back\\\\slash\\ufffd\"}");
}

static void keys_and_numbers(void **unused)
{
	json_object *o = json_object_new_object();
	char *out;

	json_object_object_add(o, "k\xff", json_object_new_int(1));
	json_object_object_add(o, "nan", json_object_new_double(NAN));
	json_object_object_add(o, "inf", json_object_new_double(-INFINITY));
	json_object_object_add(o, "str", json_object_new_string("NaN Infinity"));
	json_object_object_add(o, "fixed", chlb_json_fixed(0.25, 7));
	json_object_object_add(o, "notfinite", chlb_json_fixed(NAN, 3));
	out = chlb_json_dump(o);
	assert_string_equal(out,
			    "{\"k\\ufffd\":1,\"nan\":null,\"inf\":null,"
			    "\"str\":\"NaN Infinity\",\"fixed\":0.2500000,\"notfinite\":null}");
	free(out);
	json_object_put(o);
	/* what json-c reads back is what was written */
	o = json_tokener_parse("{\"x\":0.2500000}");
	out = chlb_json_dump(o);
	assert_string_equal(out, "{\"x\":0.2500000}");
	free(out);
	json_object_put(o);
}

static void utf8_seq(void **unused)
{
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"a", 1), 1);
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"\xc3\xa9", 2), 2);
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"\xc3\xa9", 1), 0);
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"\xef\xbf\xbd", 3), 3);
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"\xf4\x8f\xbf\xbf", 4), 4);
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"\x80", 1), 0);
	assert_int_equal(chlb_utf8_seq((const unsigned char *)"\xc1\xbf", 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strings),
		cmocka_unit_test(keys_and_numbers),
		cmocka_unit_test(utf8_seq),
	};

	return cmocka_run_group_tests_name("json_out", tests, NULL, NULL);
}
