// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The log of what a change of the desired state changes (an `apply`, a
 * SIGHUP reload): a line per service or backend added, changed or removed
 * (chlb_state_diff()), the first DIFF_LOG_MAX of them, then a summary.
 */
#include "chlbd.h"
#include "config/plan.h"

struct diff_log {
	const char *prefix;
	__u32 logged;
};

#define DIFF_LOG_MAX 200 /* lines; the summary counts every change */

static void log_line(void *ctx, const char *line)
{
	struct diff_log *l = ctx;

	if (l->logged++ < DIFF_LOG_MAX)
		pr_info("%s%s", l->prefix, line);
}

void chlbd_log_diff(const char *prefix, const struct chlb_state *cur, const struct chlb_state *next,
		    const struct chlb_state *base)
{
	struct diff_log l = { .prefix = prefix };
	struct chlb_diff_count n;
	__u32 lines = chlb_state_diff(cur, next, base, log_line, &l, &n);

	if (!lines) {
		pr_info("%snothing changes", prefix);
		return;
	}
	pr_info("%s%u changes: services %u added, %u changed, %u removed; backends %u added, "
		"%u changed, %u removed%s",
		prefix, lines, n.svc_add, n.svc_set, n.svc_del, n.be_add, n.be_set, n.be_del,
		lines > DIFF_LOG_MAX ? " (the first 200 logged)" : "");
}
