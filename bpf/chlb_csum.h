/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Internet checksum helpers (RFC 1071) over headers we build ourselves. */
#ifndef CHLB_CSUM_H
#define CHLB_CSUM_H

#include <linux/types.h>

static __always_inline __u16 csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~(__u16)sum;
}

/* Sum of n 16-bit words (constant n: fully unrolled). */
static __always_inline __u64 csum_words(const void *buf, __u32 n)
{
	/* may_alias: buf is a header struct read as 16-bit words */
	const __u16 __attribute__((__may_alias__)) *w = buf;
	__u64 sum = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

#endif /* CHLB_CSUM_H */
