// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Small helpers (see util.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
