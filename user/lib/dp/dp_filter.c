// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The connection filter (include/chlb_maps.h, "conn_filter"): mapped at
 * open, bits added for entries userspace writes, and the idle bank rebuilt.
 *
 * Why a rebuild: entries come and go (LRU eviction), bits are only ever
 * set, so without one the filter fills up and every SYN pays an LRU probe.
 * Readers test the bank filter_bank names; a writer sets its bits there
 * before it writes the entry, and in the idle bank too while filter_bank
 * carries CHLB_FILTER_REBUILDING (userspace writers always set both). A
 * rebuild:
 *
 *  1. clears the idle bank (no program writes it now);
 *  2. sets CHLB_FILTER_REBUILDING: programs that read filter_bank from now
 *     on set their bits in both banks;
 *  3. waits for an RCU grace period: every program that read it before
 *     (and set the active bank alone) has ended, its entry written;
 *  4. walks the entries setting their bits in the idle bank: it finds
 *     those entries, and every later writer sets its own;
 *  5. flips filter_bank to the rebuilt bank, the flag cleared in the same
 *     store.
 *
 * The old bank then lacks only entries written after the flip, which no
 * reader tests (a program that read filter_bank before the flip, racing
 * with such an insert, decides as if it had run before it).
 * Outside a rebuild an insert touches one bank's cache line, not two
 * (docs/performance.md, "Why a SYN flood costs").
 */
#include <errno.h>
#include <time.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "dp/dp_int.h"

int dp_filter_open(struct chlb_dp *dp)
{
	void *mem = mmap(NULL, sizeof(*dp->filter), PROT_READ | PROT_WRITE, MAP_SHARED,
			 chlb_dp_map_fd(dp, CHLB_MAP_CONN_FILTER), 0);

	if (mem == MAP_FAILED)
		return -errno;
	dp->filter = mem;
	return 0;
}

void dp_filter_close(struct chlb_dp *dp)
{
	if (dp->filter)
		munmap(dp->filter, sizeof(*dp->filter));
	dp->filter = NULL;
}

struct chlb_conn_filter *chlb_dp_filter_mem(struct chlb_dp *dp)
{
	return dp->filter;
}

static void add_bits(struct chlb_conn_filter *f, __u32 bank, __u32 fk)
{
	__u64 *w = &f->bank[bank][chlb_filter_word(fk)], m = chlb_filter_mask(fk);

	if ((__atomic_load_n(w, __ATOMIC_RELAXED) & m) != m)
		__atomic_fetch_or(w, m, __ATOMIC_SEQ_CST);
}

int chlb_dp_filter_add(struct chlb_dp *dp, const struct chlb_flow *flow)
{
	__u32 fk = chlb_conn_fkey(flow);

	if (!dp->filter)
		return -ENODEV;
	add_bits(dp->filter, 0, fk);
	add_bits(dp->filter, 1, fk);
	return 0;
}

static int bank_set(struct chlb_dp *dp, __u32 value)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_FILTER_BANK), &zero, &value, 0))
		return -errno;
	return 0;
}

static int bank_get(struct chlb_dp *dp, __u32 *bank)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_FILTER_BANK), &zero, bank))
		return -errno;
	*bank &= 1;
	return 0;
}

int chlb_dp_filter_fill(struct chlb_dp *dp, double *fill)
{
	__u64 set = 0;
	__u32 bank;
	int rc;

	if (!dp->filter)
		return -ENODEV;
	rc = bank_get(dp, &bank);
	if (rc)
		return rc;
	for (__u32 i = 0; i < CHLB_CONN_FILTER_WORDS; i++)
		set += (__u64)__builtin_popcountll(
		    __atomic_load_n(&dp->filter->bank[bank][i], __ATOMIC_RELAXED));
	*fill = (double)set / ((double)CHLB_CONN_FILTER_WORDS * 64);
	return 0;
}

struct rebuild {
	struct chlb_conn_filter *filter;
	__u32 bank;
};

static int rebuild_add(const struct chlb_flow *f, const struct chlb_conn *c, void *ctx)
{
	struct rebuild *r = ctx;
	__u32 fk = chlb_conn_fkey(f);

	(void)c;
	add_bits(r->filter, r->bank, fk);
	return 0;
}

int chlb_dp_filter_rebuild(struct chlb_dp *dp)
{
	struct rebuild r = { .filter = dp->filter };
	__u32 cur;
	int rc;

	if (!dp->filter)
		return -ENODEV;
	rc = bank_get(dp, &cur);
	if (rc)
		return rc;
	r.bank = !cur;
	for (__u32 i = 0; i < CHLB_CONN_FILTER_WORDS; i++)
		__atomic_store_n(&dp->filter->bank[r.bank][i], 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rc = bank_set(dp, cur | CHLB_FILTER_REBUILDING);
	if (rc)
		return rc;
	chlb_dp_grace(dp);
	rc = chlb_dp_conns_foreach(dp, rebuild_add, &r);
	if (rc) {
		bank_set(dp, cur); /* readers still test the old, complete bank */
		return rc;
	}
	rc = bank_set(dp, r.bank);
	if (rc)
		return rc;
	dp->filter_from_open = false;
	return 0;
}

bool chlb_dp_filter_stale(struct chlb_dp *dp)
{
	return dp->filter_from_open;
}
