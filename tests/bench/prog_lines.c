// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where each source line of a loaded BPF program sits in its JIT image:
 * one line per line-info record, "FUNC+0xOFFSET FILE:LINE SOURCE", the
 * offset from the start of the function's kernel symbol - what `perf
 * script -F sym,symoff` prints for a sample - so a profile of the running
 * program (tests/bench/live.sh, LIVE_PERF) maps to source lines without
 * bpftool's disassembler (Debian's bpftool has no libbfd).
 *
 *   prog_lines PROG_ID
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), nl, nf, i, f;
	struct bpf_line_info *li;
	struct bpf_func_info *fi;
	__u64 *jl, *ks;
	__u32 *flen;
	struct btf *btf;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: prog_lines PROG_ID\n");
		return 2;
	}
	fd = bpf_prog_get_fd_by_id(strtoul(argv[1], NULL, 0));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "prog_lines: program %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	nl = info.nr_jited_line_info;
	nf = info.nr_jited_ksyms;
	if (!nl || !nf || info.nr_line_info != nl || info.nr_func_info != nf) {
		fprintf(stderr, "prog_lines: no line info (JIT off, or no BTF)\n");
		return 1;
	}
	li = calloc(nl, sizeof(*li));
	jl = calloc(nl, sizeof(*jl));
	fi = calloc(nf, sizeof(*fi));
	ks = calloc(nf, sizeof(*ks));
	flen = calloc(nf, sizeof(*flen));
	if (!li || !jl || !fi || !ks || !flen)
		return 1;
	memset(&info, 0, sizeof(info));
	info.nr_line_info = nl;
	info.line_info_rec_size = sizeof(*li);
	info.line_info = (__u64)(unsigned long)li;
	info.nr_jited_line_info = nl;
	info.jited_line_info_rec_size = sizeof(*jl);
	info.jited_line_info = (__u64)(unsigned long)jl;
	info.nr_func_info = nf;
	info.func_info_rec_size = sizeof(*fi);
	info.func_info = (__u64)(unsigned long)fi;
	info.nr_jited_ksyms = nf;
	info.jited_ksyms = (__u64)(unsigned long)ks;
	info.nr_jited_func_lens = nf;
	info.jited_func_lens = (__u64)(unsigned long)flen;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		perror("prog_lines: line info");
		return 1;
	}
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf) {
		perror("prog_lines: BTF");
		return 1;
	}
	for (i = 0; i < nl; i++) {
		const char *name = "?", *file, *src;

		for (f = 0; f < nf; f++)
			if (jl[i] >= ks[f] && jl[i] < ks[f] + flen[f])
				break;
		if (f == nf)
			continue;
		name = btf__name_by_offset(btf, btf__type_by_id(btf, fi[f].type_id)->name_off);
		file = btf__name_by_offset(btf, li[i].file_name_off);
		src = btf__name_by_offset(btf, li[i].line_off);
		if (file && strrchr(file, '/'))
			file = strrchr(file, '/') + 1;
		printf("%s+0x%llx %s:%u %s\n", name ? name : "?",
		       (unsigned long long)(jl[i] - ks[f]), file ? file : "?",
		       BPF_LINE_INFO_LINE_NUM(li[i].line_col), src ? src : "");
	}
	btf__free(btf);
	return 0;
}
