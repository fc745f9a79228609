// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlb_parse_sockaddr (base/addr.h), the one ADDR:PORT parser of chlbd's
 * options (--metrics, --sync-listen, --sync-peer): what it accepts, its
 * canonical text, and why it refuses the rest.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "base/addr.h"

static void test_good(void **state)
{
	static const struct {
		const char *arg, *name;
		int family;
		unsigned int port;
	} ok[] = {
		{ "10.9.0.1:7070", "10.9.0.1:7070", AF_INET, 7070 },
		{ "0.0.0.0:9180", "0.0.0.0:9180", AF_INET, 9180 },
		{ "[fd00::1]:1", "[fd00::1]:1", AF_INET6, 1 },
		{ "[::]:65535", "[::]:65535", AF_INET6, 65535 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct sockaddr_storage ss;
		char name[INET6_ADDRSTRLEN + 8];
		const char *why = NULL;
		unsigned int len = 0;

		assert_int_equal(
		    chlb_parse_sockaddr(ok[i].arg, &ss, &len, name, sizeof(name), &why), 0);
		assert_string_equal(name, ok[i].name);
		assert_int_equal(ss.ss_family, ok[i].family);
		if (ok[i].family == AF_INET) {
			assert_int_equal(len, sizeof(struct sockaddr_in));
			assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), ok[i].port);
		} else {
			assert_int_equal(len, sizeof(struct sockaddr_in6));
			assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port),
					 ok[i].port);
		}
	}
}

static void test_bad(void **state)
{
	static const char *const bad[][2] = {
		{ "127.0.0.1", "no port" },
		{ "127.0.0.1:", "no port" },
		{ "[::1]", "no port" },
		{ ":9180", "no address" },
		{ "1.2.3.400:80", "not an IPv4 address" },
		{ "::1:9180", "in brackets" },
		{ "[::1:9180", "no ']'" },
		{ "[::1]x", "expected ':PORT'" },
		{ "[fe80::zz]:80", "not an IPv6 address" },
		{ "127.0.0.1:0", "1 to 65535" },
		{ "127.0.0.1:65536", "1 to 65535" },
		{ "127.0.0.1:99999999999999999999", "1 to 65535" },
		{ "127.0.0.1:http", "1 to 65535" },
		{ "localhost:80", "not an IPv4 address" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sockaddr_storage ss;
		char name[INET6_ADDRSTRLEN + 8];
		const char *why = NULL;
		unsigned int len = 0;

		assert_int_equal(
		    chlb_parse_sockaddr(bad[i][0], &ss, &len, name, sizeof(name), &why), -EINVAL);
		assert_non_null(why);
		if (!strstr(why, bad[i][1]))
			fail_msg("'%s': '%s', not '%s'", bad[i][0], why, bad[i][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
