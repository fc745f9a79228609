// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Data-plane state: backends, tables, service views, stats, connections,
 * and test runs. Thin wrappers over the map syscalls; the one with logic is
 * chlb_dp_write_table() (see the atomicity contract in dp/dp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "dp/dp_int.h"
#include "base/time.h"
#include "chlb_table.h"

#define CHUNK_BYTES (CHLB_CHUNK_WORDS * sizeof(__u32))

static int sys_rc(int rc)
{
	return rc < 0 ? -errno : rc;
}

/*
 * The kernel copies a record into the array with memcpy, under readers and
 * in pieces of its choosing: writing state, generation and address at once
 * could show a reader the new occupant LIVE with the old generation, and
 * send a replaced backend's entries to its successor (the issue the
 * generation exists for). So a record is never made LIVE and changed in the
 * same copy (include/chlb_maps.h, struct chlb_backend):
 *  1. a LIVE record that changes occupant, address or generation, or stops
 *     being LIVE, first gets only its state byte changed (one byte: no
 *     reader sees half of it); the data plane stops using it;
 *  2. the new record is written with a state that is not LIVE;
 *  3. its state byte flips to LIVE, alone.
 * The data plane reads state and generation with one load and the rest
 * after them (bpf/chlb_stick.h, be_check); each step is one syscall, whose
 * stores another CPU sees in order (x86-TSO; see docs/design.md for weaker
 * memory models). A LIVE record that stays LIVE with the same occupant (a
 * next hop refresh, the owner's flags) is one copy: state and generation
 * keep their bytes.
 */
int chlb_dp_set_backend(struct chlb_dp *dp, __u32 slot, const struct chlb_backend *be)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_BACKENDS);
	struct chlb_backend old, tmp;

	if (slot >= CHLB_MAX_BACKENDS)
		return -ERANGE;
	if (bpf_map_lookup_elem(fd, &slot, &old))
		return -errno;
	if (old.state == CHLB_BE_LIVE && be->state == CHLB_BE_LIVE && old.gen == be->gen &&
	    old.family == be->family && !memcmp(old.addr, be->addr, sizeof(old.addr)))
		return sys_rc(bpf_map_update_elem(fd, &slot, be, 0));
	if (old.state == CHLB_BE_LIVE) {
		tmp = old;
		tmp.state = be->state == CHLB_BE_LIVE ? CHLB_BE_DEAD : be->state;
		if (bpf_map_update_elem(fd, &slot, &tmp, 0))
			return -errno;
		old = tmp;
	}
	tmp = *be;
	if (be->state == CHLB_BE_LIVE)
		tmp.state = old.state; /* not LIVE: step 1 saw to it */
	if (bpf_map_update_elem(fd, &slot, &tmp, 0))
		return -errno;
	if (tmp.state == be->state)
		return 0;
	return sys_rc(bpf_map_update_elem(fd, &slot, be, 0));
}

int chlb_dp_get_backend(struct chlb_dp *dp, __u32 slot, struct chlb_backend *be)
{
	if (slot >= CHLB_MAX_BACKENDS)
		return -ERANGE;
	return sys_rc(bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_BACKENDS), &slot, be));
}

/* fd of the inner map in table slot `slot` (caller closes), or -ENOENT. */
static int inner_fd(struct chlb_dp *dp, __u32 slot, __u32 *chunks)
{
	struct bpf_map_info info = { 0 };
	__u32 id, len = sizeof(info);
	int fd;

	if (bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_TABLES), &slot, &id))
		return -ENOENT;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return -errno;
	}
	*chunks = info.max_entries;
	return fd;
}

__u32 chlb_dp_table_capacity(struct chlb_dp *dp, __u32 slot)
{
	__u32 chunks = 0;
	int fd = inner_fd(dp, slot, &chunks);

	if (fd < 0)
		return 0;
	close(fd);
	return chunks * CHLB_CHUNK_WORDS;
}

/* The words of chunks 1.. of inner into words (chunk 0, first, holds the header). */
static int read_chunks(int inner, const __u32 *first, __u32 *words, __u32 nwords)
{
	static __u32 chunk[CHLB_CHUNK_WORDS];

	for (__u32 c = 0; c * CHLB_CHUNK_WORDS < nwords; c++) {
		__u32 n = nwords - c * CHLB_CHUNK_WORDS;

		if (c && bpf_map_lookup_elem(inner, &c, chunk))
			return -errno;
		memcpy(words + c * CHLB_CHUNK_WORDS, c ? chunk : first,
		       (n < CHLB_CHUNK_WORDS ? n : CHLB_CHUNK_WORDS) * 4);
	}
	return 0;
}

int chlb_dp_read_table(struct chlb_dp *dp, __u32 slot, struct chlb_table_hdr *hdr, __u32 **words)
{
	int outer = chlb_dp_map_fd(dp, CHLB_MAP_TABLES), inner, rc = 0;
	static __u32 first[CHLB_CHUNK_WORDS];
	__u32 id, zero = 0, *w;

	if (words)
		*words = NULL;
	if (outer < 0 || bpf_map_lookup_elem(outer, &slot, &id))
		return -ENOENT;
	inner = bpf_map_get_fd_by_id(id);
	if (inner < 0)
		return -errno;
	if (bpf_map_lookup_elem(inner, &zero, first)) {
		rc = -errno;
		goto out;
	}
	memcpy(hdr, first, sizeof(*hdr));
	if (!words)
		goto out;
	/* 2^26 words: past any table the builders make (a 2^20-vnode ring is ~4.5M) */
	if (hdr->magic != CHLB_TABLE_MAGIC || hdr->words < CHLB_TBL_HDR_WORDS ||
	    hdr->words > (1u << 26)) {
		rc = -EINVAL;
		goto out;
	}
	w = malloc((size_t)hdr->words * 4);
	if (!w) {
		rc = -ENOMEM;
		goto out;
	}
	rc = read_chunks(inner, first, w, hdr->words);
	if (rc)
		free(w);
	else
		*words = w;
out:
	close(inner);
	return rc;
}

/*
 * memcpy into the map, bypassing the cache on x86: the destination is cold
 * (last written a swap or two ago) and a plain copy reads every line in
 * before overwriting it. glibc only streams above ~3/4 of the L3 size, which
 * a VM may report as hundreds of MB. dst is page aligned.
 */
static void copy_to_map(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	__m128i *d = dst;
	const __m128i *s = src;
	size_t i, n = len / sizeof(*d);

	for (i = 0; i < n; i++)
		_mm_stream_si128(&d[i], _mm_loadu_si128(&s[i]));
	_mm_sfence(); /* streamed stores are ordered before the view that names them */
	memcpy((char *)dst + n * sizeof(*d), (const char *)src + n * sizeof(*d),
	       len - n * sizeof(*d));
#else
	memcpy(dst, src, len);
#endif
}

/* Copy words into the (mmapable) inner map fd of `chunks` chunks; zero the rest. */
static int fill_inner(int fd, __u32 chunks, const __u32 *words, __u32 nwords)
{
	size_t size = (size_t)chunks * CHUNK_BYTES;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (mem == MAP_FAILED)
		return -errno;
	if (nwords)
		copy_to_map(mem, words, (size_t)nwords * sizeof(__u32));
	memset((char *)mem + (size_t)nwords * sizeof(__u32), 0, size - nwords * sizeof(__u32));
	munmap(mem, size);
	return 0;
}

static void tmap_drop(struct chlb_dp *dp, __u32 slot)
{
	if (dp->tmap[slot].mem)
		munmap(dp->tmap[slot].mem, dp->tmap[slot].size);
	memset(&dp->tmap[slot], 0, sizeof(dp->tmap[slot]));
}

void dp_tables_unmap(struct chlb_dp *dp)
{
	for (__u32 i = 0; i < CHLB_TABLE_SLOTS; i++)
		tmap_drop(dp, i);
}

/*
 * Table slot `slot`'s inner map, mapped, if it holds `chunks` chunks: the
 * kept mapping while the slot holds the same map, else a new one (kept).
 * NULL with *rc = 0 when the slot is missing or too small.
 */
static void *tmap_get(struct chlb_dp *dp, __u32 slot, __u32 chunks, int *rc)
{
	struct bpf_map_info info = { 0 };
	__u32 id, len = sizeof(info);
	void *mem;
	int fd;

	*rc = 0;
	if (bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_TABLES), &slot, &id))
		return NULL;
	if (dp->tmap[slot].mem && dp->tmap[slot].id == id)
		return dp->tmap[slot].size >= (size_t)chunks * CHUNK_BYTES ? dp->tmap[slot].mem
									   : NULL;
	tmap_drop(dp, slot);
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0) {
		*rc = -errno;
		return NULL;
	}
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		*rc = -errno;
		close(fd);
		return NULL;
	}
	if (info.max_entries < chunks) {
		close(fd);
		return NULL;
	}
	mem = mmap(NULL, (size_t)info.max_entries * CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd); /* the mapping holds the map */
	if (mem == MAP_FAILED) {
		*rc = -errno;
		return NULL;
	}
	dp->tmap[slot].id = id;
	dp->tmap[slot].mem = mem;
	dp->tmap[slot].size = (size_t)info.max_entries * CHUNK_BYTES;
	return mem;
}

/* Create an inner map of `chunks` chunks, fill it, and put it into the slot. */
static int new_inner(struct chlb_dp *dp, __u32 slot, __u32 chunks, const __u32 *words, __u32 nwords)
{
	struct bpf_map_create_opts opts = { .sz = sizeof(struct bpf_map_create_opts),
					    .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE };
	int fd, rc;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "chlb_table", sizeof(__u32), CHUNK_BYTES, chunks,
			    &opts);
	if (fd < 0)
		return -errno;
	tmap_drop(dp, slot); /* the map it named leaves the slot */
	rc = fill_inner(fd, chunks, words, nwords);
	/* the one slow call: the kernel waits for an RCU grace period */
	if (!rc)
		rc =
		    sys_rc(bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_TABLES), &slot, &fd, 0));
	close(fd);
	return rc;
}

int chlb_dp_prealloc_table(struct chlb_dp *dp, __u32 slot, __u32 nwords)
{
	__u32 chunks = (nwords + CHLB_CHUNK_WORDS - 1) / CHLB_CHUNK_WORDS, have = 0;
	int fd;

	if (slot >= CHLB_TABLE_SLOTS)
		return -ERANGE;
	if (!chunks)
		chunks = 1;
	fd = inner_fd(dp, slot, &have);
	if (fd >= 0) {
		close(fd);
		if (have >= chunks)
			return 0;
	}
	return new_inner(dp, slot, chunks, NULL, 0);
}

int chlb_dp_prealloc_tables(struct chlb_dp *dp, const __u32 *slot, const __u32 *nwords, __u32 n,
			    __u64 until_ns)
{
	struct bpf_map_batch_opts opts = { .sz = sizeof(opts) };
	__u32 *keys = calloc(n ? n : 1, sizeof(*keys)), done = 0, nnew = 0, count;
	int *fds = calloc(n ? n : 1, sizeof(*fds)), rc = 0;

	if (!keys || !fds) {
		free(keys);
		free(fds);
		return -ENOMEM;
	}
	/* create what is missing (no grace period yet), as many as fit before until_ns */
	for (; done < n && (!done || chlb_now_ns() <= until_ns); done++) {
		__u32 chunks = (nwords[done] + CHLB_CHUNK_WORDS - 1) / CHLB_CHUNK_WORDS, have = 0;
		struct bpf_map_create_opts copts = { .sz = sizeof(copts),
						     .map_flags =
							 BPF_F_INNER_MAP | BPF_F_MMAPABLE };
		int fd;

		if (slot[done] >= CHLB_TABLE_SLOTS) {
			rc = -ERANGE;
			break;
		}
		if (!chunks)
			chunks = 1;
		fd = inner_fd(dp, slot[done], &have);
		if (fd >= 0) {
			close(fd);
			if (have >= chunks)
				continue;
		}
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "chlb_table", sizeof(__u32), CHUNK_BYTES,
				    chunks, &copts);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		rc = fill_inner(fd, chunks, NULL, 0);
		if (rc) {
			close(fd);
			break;
		}
		tmap_drop(dp, slot[done]); /* the map it names leaves the slot */
		keys[nnew] = slot[done];
		fds[nnew++] = fd;
	}
	/* every slot of the batch in one update: one grace period for all of them */
	count = nnew;
	if (nnew &&
	    bpf_map_update_batch(chlb_dp_map_fd(dp, CHLB_MAP_TABLES), keys, fds, &count, &opts)) {
		rc = -errno;
		if (count == 0 &&
		    !bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_TABLES), &keys[0], &fds[0], 0))
			count = 1; /* no batch updates here: one slot per call */
	}
	if (count < nnew) { /* the slots up to the first not installed are done */
		for (done = 0; done < n && slot[done] != keys[count]; done++)
			;
	}
	for (__u32 i = 0; i < nnew; i++)
		close(fds[i]);
	free(keys);
	free(fds);
	return done ? (int)done : rc;
}

int chlb_dp_write_table(struct chlb_dp *dp, __u32 slot, const __u32 *words, __u32 nwords)
{
	__u32 chunks = (nwords + CHLB_CHUNK_WORDS - 1) / CHLB_CHUNK_WORDS;
	void *mem;
	int rc;

	if (slot >= CHLB_TABLE_SLOTS)
		return -ERANGE;
	if (nwords < CHLB_TBL_HDR_WORDS)
		return -EINVAL;
	mem = tmap_get(dp, slot, chunks, &rc);
	if (rc)
		return rc;
	if (mem) {
		size_t len = (size_t)nwords * sizeof(__u32);

		copy_to_map(mem, words, len);
		memset((char *)mem + len, 0, dp->tmap[slot].size - len);
		return 0;
	}
	return new_inner(dp, slot, chunks, words, nwords);
}

int chlb_dp_set_service(struct chlb_dp *dp, const struct chlb_vip_key *key,
			const struct chlb_service *svc)
{
	struct chlb_service v = *svc;
	int rc;

	if (svc->id >= CHLB_MAX_SERVICES || svc->ntables < 1 || svc->ntables > CHLB_HISTORY_MAX)
		return -EINVAL;
	/* the data plane hashes IPv6 flows with the VIP address's share precomputed */
	v.vip_crc = chlb_vip_crc(key->addr);
	/* the data plane's copy first: once the registry has it, packets do too */
	rc = dp_views_set(dp, key, &v);
	if (rc)
		return rc;
	return sys_rc(bpf_map_update_elem(chlb_dp_map_fd(dp, CHLB_MAP_VIPS), key, &v, 0));
}

int chlb_dp_del_service(struct chlb_dp *dp, const struct chlb_vip_key *key)
{
	int rc = dp_views_del(dp, key);

	if (rc && rc != -ENOENT)
		return rc;
	return sys_rc(bpf_map_delete_elem(chlb_dp_map_fd(dp, CHLB_MAP_VIPS), key));
}

int chlb_dp_get_service(struct chlb_dp *dp, const struct chlb_vip_key *key,
			struct chlb_service *svc)
{
	return sys_rc(bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_VIPS), key, svc));
}

void chlb_dp_vip_key(struct chlb_vip_key *key, int family, const void *addr, __u16 port_host,
		     __u8 proto)
{
	memset(key, 0, sizeof(*key));
	if (family == CHLB_AF_INET) {
		key->addr[10] = 0xff;
		key->addr[11] = 0xff;
		memcpy(key->addr + 12, addr, 4);
	} else {
		memcpy(key->addr, addr, 16);
	}
	key->port = htobe16(port_host);
	key->proto = proto;
}

/* Sum a per-CPU value of n u64 counters. */
static int read_percpu(struct chlb_dp *dp, enum chlb_dp_map m, __u32 idx, __u64 *out, size_t n)
{
	size_t stride = (n * sizeof(__u64) + 7) & ~(size_t)7;
	char *buf = calloc(dp->ncpus, stride);
	int c, rc;
	size_t i;

	if (!buf)
		return -ENOMEM;
	rc = sys_rc(bpf_map_lookup_elem(chlb_dp_map_fd(dp, m), &idx, buf));
	memset(out, 0, n * sizeof(__u64));
	for (c = 0; !rc && c < dp->ncpus; c++) {
		const __u64 *v = (const __u64 *)(buf + c * stride);

		for (i = 0; i < n; i++)
			out[i] += v[i];
	}
	free(buf);
	return rc;
}

int chlb_dp_read_global(struct chlb_dp *dp, struct chlb_global_stats *out)
{
	return read_percpu(dp, CHLB_MAP_GLOBAL_STATS, 0, out->reason, CHLB_R_MAX);
}

#define COUNTERS_N (sizeof(struct chlb_counters) / sizeof(__u64))

int chlb_dp_read_service_stats(struct chlb_dp *dp, __u32 svc_id, struct chlb_counters *out)
{
	return read_percpu(dp, CHLB_MAP_SVC_STATS, svc_id, (__u64 *)out, COUNTERS_N);
}

int chlb_dp_read_backend_stats(struct chlb_dp *dp, __u32 slot, struct chlb_counters *out)
{
	return read_percpu(dp, CHLB_MAP_BE_STATS, slot, (__u64 *)out, COUNTERS_N);
}

/* Elements first..first+n-1 of a per-CPU array: zero on every CPU. */
static int zero_percpu(struct chlb_dp *dp, enum chlb_dp_map m, __u32 first, __u32 n, size_t vsize)
{
	size_t stride = (vsize + 7) & ~(size_t)7;
	char *buf = calloc(dp->ncpus, stride);
	int rc = 0;
	__u32 i;

	if (!buf)
		return -ENOMEM;
	for (i = first; i < first + n && !rc; i++)
		rc = sys_rc(bpf_map_update_elem(chlb_dp_map_fd(dp, m), &i, buf, 0));
	free(buf);
	return rc;
}

/* Every service's and backend slot's counters to zero, on every CPU. */
static int zero_service_and_backend_counters(struct chlb_dp *dp)
{
	int rc =
	    zero_percpu(dp, CHLB_MAP_SVC_STATS, 0, CHLB_MAX_SERVICES, sizeof(struct chlb_counters));

	if (!rc)
		rc = zero_percpu(dp, CHLB_MAP_BE_STATS, 0, CHLB_MAX_BACKENDS,
				 sizeof(struct chlb_counters));
	return rc;
}

int chlb_dp_reset_stats(struct chlb_dp *dp)
{
	int rc = zero_percpu(dp, CHLB_MAP_GLOBAL_STATS, 0, 1, sizeof(struct chlb_global_stats));

	return rc ? rc : zero_service_and_backend_counters(dp);
}

int chlb_dp_reset_backend_stats(struct chlb_dp *dp, __u32 slot)
{
	if (slot >= CHLB_MAX_BACKENDS)
		return -EINVAL;
	return zero_percpu(dp, CHLB_MAP_BE_STATS, slot, 1, sizeof(struct chlb_counters));
}

int chlb_dp_reset_service_stats(struct chlb_dp *dp, __u32 svc_id)
{
	if (svc_id >= CHLB_MAX_SERVICES)
		return -EINVAL;
	return zero_percpu(dp, CHLB_MAP_SVC_STATS, svc_id, 1, sizeof(struct chlb_counters));
}

/*
 * Every reason but ct_insert to zero, on every CPU: one read and one write
 * of the per-CPU value. An increment a CPU makes between the two is lost
 * (ct_insert's too: the write puts back what was read).
 */
static int zero_reasons_but_ct_insert(struct chlb_dp *dp)
{
	int fd = chlb_dp_map_fd(dp, CHLB_MAP_GLOBAL_STATS), c, rc;
	size_t stride = (sizeof(struct chlb_global_stats) + 7) & ~(size_t)7;
	char *buf = calloc(dp->ncpus, stride);
	__u32 zero = 0;

	if (!buf)
		return -ENOMEM;
	rc = sys_rc(bpf_map_lookup_elem(fd, &zero, buf));
	for (c = 0; !rc && c < dp->ncpus; c++) {
		struct chlb_global_stats *g = (struct chlb_global_stats *)(buf + c * stride);
		__u64 keep = g->reason[CHLB_R_CT_INSERT];

		memset(g, 0, sizeof(*g));
		g->reason[CHLB_R_CT_INSERT] = keep;
	}
	if (!rc)
		rc = sys_rc(bpf_map_update_elem(fd, &zero, buf, 0));
	free(buf);
	return rc;
}

int chlb_dp_reset_counters(struct chlb_dp *dp)
{
	int rc = zero_reasons_but_ct_insert(dp);

	return rc ? rc : zero_service_and_backend_counters(dp);
}

int chlb_dp_conn_lookup(struct chlb_dp *dp, const struct chlb_flow *flow, struct chlb_conn *out)
{
	return sys_rc(bpf_map_lookup_elem(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), flow, out));
}

int chlb_dp_conn_delete(struct chlb_dp *dp, const struct chlb_flow *flow)
{
	return sys_rc(bpf_map_delete_elem(chlb_dp_map_fd(dp, CHLB_MAP_CONNS), flow));
}

int chlb_dp_test_run(struct chlb_dp *dp, enum chlb_dp_prog which, const void *in, __u32 in_len,
		     void *out, __u32 *out_len, __u32 *verdict)
{
	struct bpf_test_run_opts opts = { .sz = sizeof(struct bpf_test_run_opts),
					  .data_in = in,
					  .data_size_in = in_len,
					  .data_out = out,
					  .data_size_out = *out_len,
					  .repeat = 1 };
	int rc = bpf_prog_test_run_opts(chlb_dp_prog_fd(dp, which), &opts);

	if (rc)
		return -errno;
	*out_len = opts.data_size_out;
	*verdict = opts.retval;
	return 0;
}
