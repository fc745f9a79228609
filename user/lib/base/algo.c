// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Option names (see algo.h). */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "base/algo.h"

struct name_val {
	const char *name;
	__u8 val;
};

static const struct name_val
    algos[] = { { "ring", CHLB_ALGO_RING },	{ "jump", CHLB_ALGO_JUMP },
		{ "maglev", CHLB_ALGO_MAGLEV }, { "jtable", CHLB_ALGO_JTABLE },
		{ "hrw", CHLB_ALGO_HRW },	{ NULL, 0 } },
    fwds[] = { { "l2dsr", CHLB_FWD_L2DSR }, { "ipip", CHLB_FWD_IPIP }, { NULL, 0 } },
    hashes[] = { { "5tuple", CHLB_HASH_5TUPLE }, { "src", CHLB_HASH_SRC }, { NULL, 0 } };

static const char *name_of(const struct name_val *t, __u8 v)
{
	for (; t->name; t++)
		if (t->val == v)
			return t->name;
	return "?";
}

static int value_of(const struct name_val *t, const char *name, __u8 *out)
{
	for (; t->name; t++) {
		if (!strcmp(t->name, name)) {
			*out = t->val;
			return 0;
		}
	}
	return -EINVAL;
}

const char *chlb_algo_name(__u8 algo)
{
	return name_of(algos, algo);
}

const char *chlb_fwd_name(__u8 fwd)
{
	return name_of(fwds, fwd);
}

const char *chlb_hash_name(__u8 hash)
{
	return name_of(hashes, hash);
}

int chlb_algo_parse(const char *name, __u8 *out)
{
	return value_of(algos, name, out);
}

int chlb_fwd_parse(const char *name, __u8 *out)
{
	return value_of(fwds, name, out);
}

int chlb_hash_parse(const char *name, __u8 *out)
{
	return value_of(hashes, name, out);
}
