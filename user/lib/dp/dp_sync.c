// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Entry sync's kernel side (docs/design.md, "Several LB hosts"): the
 * program's sync flag and ring buffer, set before load, and the insert of
 * a peer's entry into conns with its filter bits.
 *
 * The program writes a record (include/chlb_maps.h, struct chlb_sync_rec)
 * for every entry it inserts, rewrites or marks ENDED; entries written
 * here produce none, so records never echo between peers.
 *
 * While chlbd waits for the backend of a peer's entry, it holds the flow
 * (chlb_dp_sync_hold): a placeholder entry (CHLB_CONN_F_HELD) whose packets
 * the program drops rather than deciding them from a partial table.
 */
#include <errno.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp/dp_int.h"

int dp_sync_configure(struct chlb_dp *dp, __u32 ring_bytes)
{
	long page = sysconf(_SC_PAGESIZE);

	if (ring_bytes && (ring_bytes < (unsigned long)page || (ring_bytes & (ring_bytes - 1))))
		return -EINVAL;
	dp->skel->rodata->cfg_sync = ring_bytes != 0;
	return bpf_map__set_max_entries(dp->skel->maps.sync_ring,
					ring_bytes ? ring_bytes : (__u32)page);
}

int chlb_dp_sync_ring_fd(struct chlb_dp *dp)
{
	return bpf_map__fd(dp->skel->maps.sync_ring);
}

bool chlb_dp_sync_enabled(const struct chlb_dp *dp)
{
	return dp->skel->rodata->cfg_sync != 0;
}

/* Is e still its flow's (backend LIVE in the generation it names)? The data plane's test. */
static bool entry_valid(struct chlb_dp *dp, const struct chlb_conn *e)
{
	struct chlb_backend be;

	return !chlb_dp_get_backend(dp, e->backend, &be) && be.state == CHLB_BE_LIVE &&
	       be.gen == e->gen;
}

/* Is e a held placeholder? (Never valid: its slot is past the backends.) */
static bool entry_held(const struct chlb_conn *e)
{
	return (e->flags & CHLB_CONN_F_HELD) && e->backend == CHLB_CONN_HELD_SLOT;
}

int chlb_dp_sync_apply(struct chlb_dp *dp, const struct chlb_flow *flow, __u32 slot, __u32 gen,
		       __u16 flags, __u64 now_ns)
{
	struct chlb_conn c = {
		.backend = (__u16)slot, .flags = flags, .gen = gen, .last_ns = now_ns
	};
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS), rc;
	struct chlb_conn e;
	bool valid;

	if (slot >= CHLB_MAX_BACKENDS || (flags & ~CHLB_CONN_F_ENDED))
		return -EINVAL;
	/* the bits first, as the data plane writes them: a reader never misses the entry */
	rc = chlb_dp_filter_add(dp, flow);
	if (rc)
		return rc;
	/*
	 * No entry - a joining host's whole dump - costs one syscall: the insert
	 * is tried first, the existing entry read only when there is one.
	 */
	if (!bpf_map_update_elem(fd, flow, &c, BPF_NOEXIST))
		return CHLB_SYNC_APPLIED;
	if (errno != EEXIST)
		return -errno;
	if (bpf_map_lookup_elem(fd, flow, &e)) {
		if (errno != ENOENT)
			return -errno;
		/* gone again in between (the LRU): written as if it never was */
		if (!bpf_map_update_elem(fd, flow, &c, BPF_NOEXIST))
			return CHLB_SYNC_APPLIED;
		/* the program inserted it just now: this host saw the connection itself */
		return errno == EEXIST ? CHLB_SYNC_KEPT : -errno;
	}
	valid = entry_valid(dp, &e);
	if (valid && !(e.flags & CHLB_CONN_F_ENDED)) {
		if (!(flags & CHLB_CONN_F_ENDED))
			return CHLB_SYNC_KEPT;
		/* the connection ended where the peer saw it: the entry keeps its backend */
		e.flags |= CHLB_CONN_F_ENDED;
		c = e;
	} else if (valid && (flags & CHLB_CONN_F_ENDED)) {
		return CHLB_SYNC_KEPT; /* ended here too */
	}
	/* an ended, stale or held one: the 5-tuple was reused, the backend left, or it waited */
	if (bpf_map_update_elem(fd, flow, &c, BPF_ANY))
		return -errno;
	return CHLB_SYNC_APPLIED;
}

int chlb_dp_sync_hold(struct chlb_dp *dp, const struct chlb_flow *flow, __u64 now_ns)
{
	struct chlb_conn c = { .backend = CHLB_CONN_HELD_SLOT,
			       .flags = CHLB_CONN_F_HELD,
			       .gen = 0,
			       .last_ns = now_ns };
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS), rc;
	struct chlb_conn e;

	/* the bits first: the program finds the placeholder as it would a real entry */
	rc = chlb_dp_filter_add(dp, flow);
	if (rc)
		return rc;
	if (bpf_map_lookup_elem(fd, flow, &e)) {
		if (errno != ENOENT)
			return -errno;
		if (!bpf_map_update_elem(fd, flow, &c, BPF_NOEXIST))
			return 0;
		if (errno != EEXIST)
			return -errno;
		return 1; /* the program inserted it just now: this host saw the connection */
	}
	/* what chlb_dp_sync_apply() keeps is the connection's already: nothing to hold */
	if (entry_valid(dp, &e) && !(e.flags & CHLB_CONN_F_ENDED))
		return 1;
	/* an ended or stale entry would be rewritten by the peer's: held until then */
	if (bpf_map_update_elem(fd, flow, &c, BPF_ANY))
		return -errno;
	return 0;
}

int chlb_dp_sync_unhold(struct chlb_dp *dp, const struct chlb_flow *flow)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_CONNS);
	struct chlb_conn e;

	if (bpf_map_lookup_elem(fd, flow, &e))
		return errno == ENOENT ? 0 : -errno;
	/*
	 * Only a placeholder: the real entry applied since, or one the program
	 * wrote, is the connection's. The program never writes over a held
	 * entry (before CHLB_CONN_HELD_MAX_NS), so nothing comes in between.
	 */
	if (!entry_held(&e))
		return 0;
	if (bpf_map_delete_elem(fd, flow) && errno != ENOENT)
		return -errno;
	return 0;
}
