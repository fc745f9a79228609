// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Small helpers (see util.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/util.h"

int chlb_mkdir_p(const char *path, mode_t parent_mode, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, parent_mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, mode) && errno != EEXIST ? -errno : 0;
}

int chlb_parse_u64(const char *s, int base, __u64 min, __u64 max, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (*end)
		return -EINVAL;
	if (errno || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int chlb_parse_milli(const char *s, __u32 min, __u32 max, __u32 *out)
{
	const char *dot = strchr(s, '.');
	char ip[12];
	__u64 v, frac = 0;
	int rc;
	size_t il = dot ? (size_t)(dot - s) : strlen(s), fl = dot ? strlen(dot + 1) : 0;

	if (!il || il >= sizeof(ip) || (dot && (fl < 1 || fl > 3)))
		return -EINVAL;
	memcpy(ip, s, il);
	ip[il] = 0;
	rc = chlb_parse_u64(ip, 10, 0, 1000000, &v);
	if (rc)
		return rc;
	for (size_t i = 0; i < 3; i++) {
		char c = i < fl ? dot[1 + i] : '0';

		if (c < '0' || c > '9')
			return -EINVAL;
		frac = frac * 10 + (__u64)(c - '0');
	}
	v = v * 1000 + frac;
	if (v < min || v > max)
		return -ERANGE;
	*out = (__u32)v;
	return 0;
}

const char *chlb_fmt_milli(__u32 v, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%u.%03u", v / 1000, v % 1000);

	while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && (size_t)n < len && buf[n - 1] == '.')
		buf[--n] = 0;
	return buf;
}
