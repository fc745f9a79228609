/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small helpers: directories, numbers, a random generator. One of each. */
#ifndef CHLB_BASE_UTIL_H
#define CHLB_BASE_UTIL_H

#include <sys/types.h>
#include <linux/types.h>

/*
 * mkdir -p: every missing directory of path, the parents with parent_mode,
 * path itself with mode (an existing one is fine). 0 or -errno
 * (-ENAMETOOLONG beyond PATH_MAX).
 */
int chlb_mkdir_p(const char *path, mode_t parent_mode, mode_t mode);

/*
 * An unsigned number in [min, max]: digits only (no sign, no spaces, no
 * trailing junk), in base (10; 0: C rules, 0x for hex). 0, or -EINVAL (not
 * a number) or -ERANGE (out of [min, max]).
 */
int chlb_parse_u64(const char *s, int base, __u64 min, __u64 max, __u64 *out);

/*
 * A decimal with up to 3 decimals ("1.05", "2", "1.125") in thousandths,
 * in [min, max] thousandths: digits, an optional '.' and 1-3 digits, nothing
 * else. 0, -EINVAL or -ERANGE as chlb_parse_u64(). chlb_fmt_milli() writes
 * it back without trailing zeros ("1.05").
 */
int chlb_parse_milli(const char *s, __u32 min, __u32 max, __u32 *out);
const char *chlb_fmt_milli(__u32 v, char *buf, size_t len);

/* splitmix64: the random generator of every sampled flow (seeded, reproducible). */
static inline __u64 chlb_splitmix64(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif /* CHLB_BASE_UTIL_H */
