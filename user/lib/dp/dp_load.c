// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Open, configure, load, pin and adopt the data plane skeleton.
 * open -> set rodata and map sizes -> reuse pinned maps -> load -> pin.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dp/dp_int.h"
#include "dp/dp_tc.h"
#include "base/util.h"

static int libbpf_print_verbose(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

static int libbpf_print_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/*
 * A map is pinned under its name, except conn_filter, whose pin also names
 * its layout: the same size can hold another layout, and a filter of
 * another layout answers "no entry" for entries it holds.
 */
#define FILTER_PIN "conn_filter_" CHLB_CONN_FILTER_LAYOUT

/* Pins of earlier filter layouts: removed on adopt, the filter rebuilt. */
static const char *const legacy_filter_pins[] = { "conn_filter", "conn_filter_k3",
						  "conn_filter_k3b2s4j", "conn_filter_k3b2s4jw" };

static int pin_path(struct chlb_dp *dp, const char *name, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s", dp->pin_dir, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int map_pin_path(struct chlb_dp *dp, enum chlb_dp_map m, char *buf, size_t len)
{
	return pin_path(dp, m == CHLB_MAP_CONN_FILTER ? FILTER_PIN : chlb_dp_map_name(m), buf, len);
}

static int unpin_legacy_filters(struct chlb_dp *dp, char *err, size_t errlen)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(legacy_filter_pins) / sizeof(legacy_filter_pins[0]); i++) {
		if (pin_path(dp, legacy_filter_pins[i], path, sizeof(path)))
			return -ENAMETOOLONG;
		if (unlink(path) && errno != ENOENT)
			return chlb_syserr(err, errlen, -errno, "couldn't unpin '%s'", path);
	}
	return 0;
}

/*
 * Maps whose contents can be rebuilt or started afresh when a pinned copy
 * has another shape (an upgrade changed it): the filter (rebuilt from the
 * entries after load), its bank selector, the counters (they restart
 * at zero) and the client affinity entries (--persist-size changed: clients
 * are decided again, as after their timeout). Any other mismatch is an error: tables and entries carry
 * decisions.
 */
static bool recreatable(enum chlb_dp_map m)
{
	return m == CHLB_MAP_CONN_FILTER || m == CHLB_MAP_FILTER_BANK ||
	       m == CHLB_MAP_GLOBAL_STATS || m == CHLB_MAP_SVC_STATS || m == CHLB_MAP_BE_STATS ||
	       m == CHLB_MAP_PERSIST;
}

/* No --persist-size: the pinned affinity map's size is kept, as the connection table's is. */
static void persist_size_of_pin(struct chlb_dp *dp, int fd, __u32 persist_max)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (!persist_max && !bpf_obj_get_info_by_fd(fd, &info, &len) && info.max_entries)
		bpf_map__set_max_entries(dp_map(dp, CHLB_MAP_PERSIST), info.max_entries);
}

static bool same_shape(int fd, const struct bpf_map *map, bool size_too)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	return !bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == (__u32)bpf_map__type(map) &&
	       info.key_size == bpf_map__key_size(map) &&
	       info.value_size == bpf_map__value_size(map) &&
	       (!size_too || info.max_entries == bpf_map__max_entries(map));
}

/*
 * A pinned table or entry map of another shape: a chlbd of an incompatible
 * release pinned it. Reusing it would load this program against a layout it
 * was not built for (misread decisions, or a verifier error): refuse, leaving
 * the running program and its pins as they are. Closes fd.
 */
static int other_shape(int fd, const struct bpf_map *map, const char *path, char *err,
		       size_t errlen)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	return chlb_syserr(err, errlen, -EPROTO,
			   "pinned map '%s' has another layout (key %u, value %u, %u entries; "
			   "this chlbd's: %u, %u, %u): it was pinned by an incompatible chlbd "
			   "release, whose program keeps forwarding; start that release again, "
			   "or 'chlbctl shutdown --detach' first to start afresh (established "
			   "connections break)",
			   path, info.key_size, info.value_size, info.max_entries,
			   bpf_map__key_size(map), bpf_map__value_size(map),
			   bpf_map__max_entries(map));
}

/* Map m's pin (its path in path): an fd, -ENOENT when nothing is pinned there, or an error. */
static int open_pin(struct chlb_dp *dp, int m, char *path, size_t plen, char *err, size_t errlen)
{
	int fd;

	if (map_pin_path(dp, m, path, plen))
		return -ENAMETOOLONG;
	if (access(path, F_OK))
		return -ENOENT;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return chlb_syserr(err, errlen, -errno, "couldn't open pinned map '%s'", path);
	return fd;
}

/*
 * Every pinned map that carries decisions (not recreatable) has this
 * chlbd's shape, checked before any pin is touched; the connection table's
 * size is the pinned one unless --ct-size resizes it.
 */
static int check_shapes(struct chlb_dp *dp, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int m, fd;

	for (m = 0; m < CHLB_MAP_COUNT; m++) {
		if (recreatable(m))
			continue;
		fd = open_pin(dp, m, path, sizeof(path), err, errlen);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return fd;
		if (!same_shape(fd, dp_map(dp, m), m != CHLB_MAP_CONNS))
			return other_shape(fd, dp_map(dp, m), path, err, errlen);
		close(fd);
	}
	return 0;
}

/*
 * The pinned connection table, when conn_max asks for another size: kept
 * open in rs.old_fd, not reused (the load makes one of the size asked,
 * dp_resize.c copies the entries). 1 then, else 0.
 */
static int resize_conns(struct chlb_dp *dp, int fd, __u32 conn_max)
{
	const struct bpf_map *map = dp_map(dp, CHLB_MAP_CONNS);
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (!conn_max || bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.key_size != bpf_map__key_size(map) ||
	    info.value_size != bpf_map__value_size(map) || info.max_entries == conn_max)
		return 0;
	dp->rs.old_fd = fd;
	dp->rs.old_max = info.max_entries;
	return 1;
}

/* Reuse every map already pinned under pin_dir (recreatable ones of another shape excepted). */
static int adopt_pinned(struct chlb_dp *dp, const struct chlb_dp_opts *opts, char *err,
			size_t errlen)
{
	char path[PATH_MAX];
	int m, fd, rc, found = 0;

	rc = check_shapes(dp, err, errlen);
	if (rc)
		return rc;
	rc = unpin_legacy_filters(dp, err, errlen);
	if (rc)
		return rc;
	for (m = 0; m < CHLB_MAP_COUNT; m++) {
		fd = open_pin(dp, m, path, sizeof(path), err, errlen);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return fd;
		if (m == CHLB_MAP_CONNS && resize_conns(dp, fd, opts->conn_max))
			continue;
		if (m == CHLB_MAP_PERSIST)
			persist_size_of_pin(dp, fd, opts->persist_max);
		if (recreatable(m) && !same_shape(fd, dp_map(dp, m), true)) {
			close(fd);
			if (unlink(path))
				return chlb_syserr(err, errlen, -errno, "couldn't unpin '%s'",
						   path);
			dp->map_recreated[m] = true;
			continue;
		}
		rc = bpf_map__reuse_fd(dp_map(dp, m), fd);
		close(fd);
		if (rc)
			return chlb_syserr(err, errlen, rc, "couldn't reuse pinned map '%s'", path);
		dp->map_adopted[m] = true;
		found++;
	}
	dp->adopted = found > 0;
	return 0;
}

int chlb_dp_pin(struct chlb_dp *dp, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int m, rc;

	if (!dp->pin_dir[0])
		return chlb_syserr(err, errlen, -EINVAL, "no pin directory configured");
	rc = chlb_mkdir_p(dp->pin_dir, 0700, 0700);
	if (rc)
		return chlb_syserr(err, errlen, rc, "couldn't create pin directory '%s'",
				   dp->pin_dir);
	for (m = 0; m < CHLB_MAP_COUNT; m++) {
		if (map_pin_path(dp, m, path, sizeof(path)))
			return -ENAMETOOLONG;
		if (!access(path, F_OK))
			continue; /* adopted, or pinned earlier */
		if (bpf_obj_pin(chlb_dp_map_fd(dp, m), path))
			return chlb_syserr(err, errlen, -errno, "couldn't pin map '%s'", path);
	}
	return 0;
}

/* The resized connection table pinned over the old one's pin (a rename: never absent). */
static int repin_conns(struct chlb_dp *dp, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc;

	if (map_pin_path(dp, CHLB_MAP_CONNS, path, sizeof(path)) ||
	    pin_path(dp, "conns_new", tmp, sizeof(tmp)))
		return -ENAMETOOLONG;
	rc = dp_pin_replace(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), path, tmp);
	if (rc)
		return chlb_syserr(err, errlen, rc,
				   "couldn't pin the resized connection table '%s'", path);
	return 0;
}

int chlb_dp_unpin(struct chlb_dp *dp, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int m;

	if (!dp->pin_dir[0])
		return 0;
	for (m = 0; m < CHLB_MAP_COUNT; m++) {
		if (map_pin_path(dp, m, path, sizeof(path)))
			return -ENAMETOOLONG;
		if (unlink(path) && errno != ENOENT)
			return chlb_syserr(err, errlen, -errno, "couldn't unpin '%s'", path);
	}
	rmdir(dp->pin_dir); /* fails harmlessly while links are still pinned there */
	return 0;
}

static int filter_add_cb(const struct chlb_flow *f, const struct chlb_conn *c, void *dp)
{
	(void)c;
	return chlb_dp_filter_add(dp, f);
}

/*
 * Adopted connection entries but a fresh filter (pins from a data plane
 * with another filter layout, or a lost pin): every entry must get its
 * bits, or its flow would be taken for one without an entry.
 */
static int rebuild_conn_filter(struct chlb_dp *dp)
{
	return chlb_dp_conns_foreach(dp, filter_add_cb, dp);
}

int chlb_dp_open(const struct chlb_dp_opts *opts, struct chlb_dp **out, char *err, size_t errlen)
{
	struct chlb_dp_opts def = { 0 };
	struct chlb_dp *dp;
	int rc, i, n;

	if (!opts)
		opts = &def;
	*out = NULL;
	libbpf_set_print(opts->verbose ? libbpf_print_verbose : libbpf_print_quiet);
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return chlb_syserr(err, errlen, -ENOMEM, "couldn't allocate data plane state");
	for (i = 0; i < 16; i++)
		dp->link_fd[i] = -1;
	dp->rs.old_fd = -1;
	n = libbpf_num_possible_cpus();
	if (n <= 0) {
		rc = chlb_syserr(err, errlen, n ? n : -EINVAL, "couldn't count possible CPUs");
		goto fail;
	}
	dp->ncpus = n;
	if (opts->pin_dir && snprintf(dp->pin_dir, sizeof(dp->pin_dir), "%s", opts->pin_dir) >=
				 (int)sizeof(dp->pin_dir)) {
		rc = chlb_syserr(err, errlen, -ENAMETOOLONG, "pin directory '%s'", opts->pin_dir);
		goto fail;
	}
	dp->skel = chlb_bpf__open();
	if (!dp->skel) {
		rc = chlb_syserr(err, errlen, -errno, "couldn't open the data plane BPF object");
		goto fail;
	}
	dp->skel->rodata->cfg_udp_idle_ns =
	    (__u64)(opts->udp_idle_ms ? opts->udp_idle_ms : CHLB_DP_DEFAULT_UDP_IDLE_MS) *
	    1000000ull;
	dp->skel->rodata->cfg_tcp_idle_ns = (__u64)opts->tcp_idle_ms * 1000000ull;
	/* at most 2^24: the budget's refill arithmetic stays within 64 bits */
	dp->skel->rodata->cfg_moved_inserts_per_s = CHLB_MOVED_INSERTS_PER_S;
	if (opts->moved_inserts_per_s)
		dp->skel->rodata->cfg_moved_inserts_per_s =
		    opts->moved_inserts_per_s < 1u << 24 ? opts->moved_inserts_per_s : 1u << 24;
	rc = dp_sync_configure(dp, opts->sync_ring_bytes);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc, "couldn't size the sync ring to %u bytes",
				 opts->sync_ring_bytes);
		goto fail;
	}
	rc = bpf_map__set_max_entries(dp->skel->maps.conns,
				      opts->conn_max ? opts->conn_max : CHLB_DP_DEFAULT_CONN_MAX);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc, "couldn't size the connection table");
		goto fail;
	}
	rc = bpf_map__set_max_entries(dp->skel->maps.persist, opts->persist_max
								  ? opts->persist_max
								  : CHLB_PERSIST_DEFAULT_MAX);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc, "couldn't size the client affinity table");
		goto fail;
	}
	if (dp->pin_dir[0]) {
		rc = adopt_pinned(dp, opts, err, errlen);
		if (rc)
			goto fail;
	}
	/* only the entry point attached: each one is ~0.5 s of verifier (dp.h) */
	if (opts->entry == CHLB_DP_ENTRY_XDP)
		bpf_program__set_autoload(dp->skel->progs.chlb_tc, false);
	else if (opts->entry == CHLB_DP_ENTRY_TC)
		bpf_program__set_autoload(dp->skel->progs.chlb_xdp, false);
	rc = chlb_bpf__load(dp->skel);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc,
				 "couldn't load the data plane (run with -v for the verifier log)");
		goto fail;
	}
	rc = dp_filter_open(dp);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc, "couldn't map the connection filter");
		goto fail;
	}
	if (dp->rs.old_fd >= 0) {
		rc = dp_conns_resize_begin(dp);
		if (rc) {
			rc = chlb_syserr(
			    err, errlen, rc,
			    "couldn't copy the connection table (%u entries) into one of %u",
			    dp->rs.old_max, dp->rs.new_max);
			goto fail;
		}
	}
	if (dp->map_adopted[CHLB_MAP_CONNS] && !dp->map_adopted[CHLB_MAP_CONN_FILTER]) {
		rc = rebuild_conn_filter(dp);
		if (rc) {
			rc = chlb_syserr(err, errlen, rc, "couldn't rebuild the connection filter");
			goto fail;
		}
		dp->filter_from_open = true;
	}
	rc = dp_views_open(dp);
	if (rc) {
		rc = chlb_syserr(err, errlen, rc,
				 "couldn't bring the VIP index in step with 'vips'");
		goto fail;
	}
	if (dp->pin_dir[0]) {
		rc = chlb_dp_pin(dp, err, errlen);
		if (!rc && dp->rs.old_fd >= 0)
			rc = repin_conns(dp, err, errlen);
		if (rc)
			goto fail;
	}
	*out = dp;
	return 0;
fail:
	chlb_dp_close(dp);
	return rc;
}

void chlb_dp_close(struct chlb_dp *dp)
{
	int i;

	if (!dp)
		return;
	for (i = 0; i < 16; i++)
		if (dp->link_fd[i] >= 0)
			close(dp->link_fd[i]);
	dp_conns_resize_free(dp);
	dp_views_close(dp);
	dp_filter_close(dp);
	dp_grace_close(dp);
	dp_tables_unmap(dp);
	chlb_bpf__destroy(dp->skel);
	free(dp);
}
