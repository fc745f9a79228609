# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlb build. Everything lands under $(BUILD)/; `make help` lists the targets.
# Sources are found by wildcard, so adding a file needs no Makefile edit:
#   bpf/*.bpf.c          -> build/<name>.bpf.o + build/<name>.skel.h
#   user/lib/LAYER/*.c   -> build/libchlb.a (shared by chlbd, chlbctl, tests); the
#                           layers, lowest first: base table config engine dp (docs/design.md,
#                           "user/lib layers"; scripts/check_layers.sh checks them)
#   user/chlbd/*.c, user/chlbd/ROOM/*.c -> build/chlbd (rooms: user/chlbd/README.md)
#   user/chlbctl/*.c     -> build/chlbctl
#   tests/unit/test_*.c  -> build/tests/unit/test_*  (+ ASan/UBSan copies in build/asan/)
#   tests/bpf/test_*.c   -> build/tests/bpf/test_*   (need root + BPF)
#   tests/tools/*.c      -> build/tests/tools/*      (traffic helpers for shell tests)
#   scripts/             repo tooling: check_layers.sh (make lint), grammar_docs.sh
#                        (make grammar-docs), gen_crc32c_table.py
#   tests/bench/*.c      -> build/tests/bench/*

.DELETE_ON_ERROR:
.SUFFIXES:
.DEFAULT_GOAL := all

BUILD ?= build
V ?= 0
Q := $(if $(filter 1,$(V)),,@)
msg = $(if $(filter 1,$(V)),,@printf '  %-8s %s\n' '$(1)' '$(2)';)

CC ?= cc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
ARCH_INC := /usr/include/$(shell uname -m)-linux-gnu

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS ?= -O2 -g
ALL_CFLAGS := $(CFLAGS) -std=gnu11 $(WARN) -ffp-contract=off -D_GNU_SOURCE -Iinclude -Iuser/lib -I$(BUILD)
LDLIBS := -lbpf -lelf -lz -ljson-c -lm -lpthread
CHLBD_LDLIBS := -lsystemd -lsodium # sd_notify() (a no-op when NOTIFY_SOCKET is unset); sync's HMAC
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# -mcpu=v3: 32-bit ALU ops and 32-bit compares. The hash and table code is
# 32-bit arithmetic; without them every 32-bit result is masked back to 32
# bits with extra instructions (v3 measured ~8 ns a packet faster; needs 5.1).
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Wall -Werror -Iinclude -Ibpf -I$(ARCH_INC)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.bpf.o)
SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)
BPF_HDRS := $(wildcard bpf/*.h) $(wildcard include/*.h)
USER_HDRS := $(wildcard user/lib/*/*.h user/chlbd/*.h user/chlbd/*/*.h user/chlbctl/*.h) $(wildcard include/*.h)

# user/lib in layers, each a folder, lowest first; an include points down only
LIB_LAYERS := base table config engine dp wire
LIB_SRCS := $(foreach l,$(LIB_LAYERS),$(wildcard user/lib/$(l)/*.c))
LIB := $(BUILD)/libchlb.a
ASAN_LIB := $(BUILD)/asan/libchlb.a
CHLBD_SRCS := $(wildcard user/chlbd/*.c user/chlbd/*/*.c)
# chlbd's files include its headers by their path under user/chlbd ("sync/sync.h")
CHLBD_INC := -Iuser/chlbd
CHLBCTL_SRCS := $(wildcard user/chlbctl/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
BPFTEST_SRCS := $(wildcard tests/bpf/test_*.c)
TOOL_SRCS := $(wildcard tests/tools/*.c)
BENCH_SRCS := $(wildcard tests/bench/*.c)

UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/%)
ASAN_UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/asan/%)
BPFTEST_BINS := $(BPFTEST_SRCS:%.c=$(BUILD)/%)
TOOL_BINS := $(TOOL_SRCS:%.c=$(BUILD)/%)
BENCH_BINS := $(BENCH_SRCS:%.c=$(BUILD)/%)
PROGS := $(if $(CHLBD_SRCS),$(BUILD)/chlbd) $(if $(CHLBCTL_SRCS),$(BUILD)/chlbctl)

DEB_PACKAGES := gcc libc6-dev clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcmocka-dev \
	libjson-c-dev linux-libc-dev pkg-config iproute2 ethtool socat procps jq python3 \
	clang-format cppcheck libclang-rt-14-dev libsystemd-dev prometheus curl \
	bird2 libsodium-dev python3-cryptography iperf3

.PHONY: all deps test check-root lint bench bench-live demo clean help fuzz install uninstall grammar-docs dist FORCE

all: $(PROGS) $(UNIT_BINS) $(ASAN_UNIT_BINS) $(BPFTEST_BINS) $(TOOL_BINS) $(BENCH_BINS)

help:
	@echo 'chlb make targets:'
	@echo '  deps   install missing Debian packages (apt-get; needs root)'
	@echo '  all    build chlbd, chlbctl, the BPF object and every test binary into $(BUILD)/'
	@echo '  test   deps + all, then run every test (root: BPF and network namespaces)'
	@echo '  lint   clang-format check and cppcheck over user/ include/ bpf/ tests/'
	@echo '  check  lint + unit tests + their ASan/UBSan builds: no root, no apt-get (a missing'
	@echo '         tool is named with its package); the quick loop, part of test'
	@echo '  bench  benchmarks; JSON reports under $(BUILD)/bench/'
	@echo '  bench-live  only the live-traffic bench (part of bench): $(BUILD)/bench/live.json'
	@echo '  demo   deps + all, then show chlb balancing real TCP in network namespaces'
	@echo '  fuzz   fuzz the command parser and the sync wire codec (libFuzzer)'
	@echo '  grammar-docs  rewrite the sections of docs/chlb.5 and docs/chlbctl.8 generated from'
	@echo '         the grammar table (user/lib/config/grammar_table.c); make check fails until then'
	@echo '  install    binaries, man pages, systemd unit, example config, bash completion'
	@echo '             (PREFIX=$(PREFIX), DESTDIR=; see the Install section of README.md)'
	@echo '  uninstall  remove what install put there (a config you changed stays)'
	@echo '  dist   $(BUILD)/chlb-VERSION.tar.gz, the release tarball (the files git tracks; VERSION'
	@echo '         is the file VERSION): make and make install work from it without git'
	@echo '  clean  remove $(BUILD)/'
	@echo 'V=1 shows the full commands.'

# Installs only what is missing; silent when everything is present.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: need root to apt-get install: $$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
			{ echo "deps: apt-get install failed for: $$missing" >&2; exit 1; }; \
	fi

# ---- BPF ----
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) Makefile | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# Objects that include a skeleton (or any header) rebuild when it changes:
# the compiler writes each object's header list (-MMD) into a .d file beside
# it. The order-only | $(SKELS) below only makes sure skeletons exist for
# the first build, before there are .d files.
DEPFLAGS = -MMD -MP
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- userspace ----
$(BUILD)/%.o: %.c $(USER_HDRS) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/asan/%.o: %.c $(USER_HDRS) | $(SKELS)
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(DEPFLAGS) -c $< -o $@

$(LIB): $(LIB_SRCS:%.c=$(BUILD)/%.o)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(ASAN_LIB): $(LIB_SRCS:%.c=$(BUILD)/asan/%.o)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CHLBD_SRCS:%.c=$(BUILD)/%.o): ALL_CFLAGS += $(CHLBD_INC)

$(BUILD)/chlbd: $(CHLBD_SRCS:%.c=$(BUILD)/%.o) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) $(CHLBD_LDLIBS) -o $@

$(BUILD)/chlbctl: $(CHLBCTL_SRCS:%.c=$(BUILD)/%.o) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -lcmocka -o $@

$(BUILD)/asan/tests/unit/%: $(BUILD)/asan/tests/unit/%.o $(ASAN_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $^ $(LDLIBS) -lcmocka -o $@

$(BUILD)/tests/bpf/%: $(BUILD)/tests/bpf/%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -lcmocka -o $@

$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/bench/%: $(BUILD)/tests/bench/%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -o $@

# the sync authentication bench runs chlbd's own sync/sync_auth.c
$(BUILD)/tests/bench/sync_auth.o: ALL_CFLAGS += $(CHLBD_INC)
$(BUILD)/tests/bench/sync_auth: $(BUILD)/tests/bench/sync_auth.o $(BUILD)/user/chlbd/sync/sync_auth.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -lsodium -o $@

$(BUILD):
	$(Q)mkdir -p $@

# ---- version: `chlbd --version`, `chlbctl version`, `make dist` ----
# The release number lives in one place, the file VERSION (0.x.y; NEWS.md
# says what each release changed). A build in a git tree adds the commit
# (`git rev-parse --short HEAD`, plus -dirty when tracked files differ from
# HEAD: what `describe --dirty` reports, without the index.lock it takes,
# on which a concurrent `git commit` would fail); a build outside one (a
# release tarball) has none. The BPF build id is the first 64 bits of the
# SHA-256 of chlb.bpf.o, the object the skeleton embeds: any change under
# bpf/ that changes the program changes it. The header is rewritten only
# when its text changes, so a build with nothing new recompiles nothing.
VERSION := $(strip $(file <VERSION))
VERSION_OBJS := $(BUILD)/user/chlbd/version.o $(BUILD)/user/chlbctl/cmd_version.o

$(VERSION_OBJS): $(BUILD)/chlb_version.h
$(BUILD)/user/chlbd/metrics/metrics_text.o: $(BUILD)/chlb_version.h # chlb_build_info{version}

$(BUILD)/chlb_version.h: $(BUILD)/chlb.bpf.o VERSION FORCE
	$(Q)echo '$(VERSION)' | grep -qxE '[0-9]+\.[0-9]+\.[0-9]+' || \
		{ echo "VERSION: '$(VERSION)' is not a version (MAJOR.MINOR.PATCH)" >&2; exit 1; }
	$(Q)c=$$(if [ -e .git ] && c=$$(git rev-parse --short HEAD 2>/dev/null); then \
		git --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null | \
			grep -q . && c=$$c-dirty; echo "$$c"; fi); \
	id=$$(sha256sum $< | cut -c1-16); \
	printf '/* generated by the Makefile */\n#define CHLB_VERSION "%s"\n#define CHLB_COMMIT "%s"\n#define CHLB_VERSION_LONG "%s"\n#define CHLB_BPF_BUILD_ID "%s"\n' \
		'$(VERSION)' "$$c" '$(VERSION)'"$${c:+ (git $$c)}" "$$id" >$@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@ && \
		printf '  %-8s %s (%s%s, bpf %s)\n' GEN $@ '$(VERSION)' "$${c:+ git $$c}" "$$id"; fi

# make dist: $(BUILD)/chlb-VERSION.tar.gz, the files git tracks as they are
# in the work tree (a file forgotten by `git add` is missing, so the test
# that builds the tarball fails), under chlb-VERSION/. Built from it (no
# .git), chlbd knows VERSION and no commit. The same tree gives the same
# bytes: names sorted, owner root, modes 644/755, the time of the last commit.
DIST := chlb-$(VERSION)
dist:
	$(Q)[ -e .git ] || { echo "make dist needs the git tree (it packs the files git tracks)" >&2; exit 1; }
	$(Q)mkdir -p $(BUILD)
	$(Q)git --no-optional-locks status --porcelain --untracked-files=no | grep -q . && \
		echo "dist: tracked files differ from HEAD: the tarball has them as they are; commit first for a release" >&2; \
	{ git ls-files -z; git ls-files -z --deleted; } | sort -z | uniq -zu | \
		tar --null -T - --sort=name --owner=0 --group=0 --numeric-owner --mode='u+rw,go=u-w' \
			--mtime=@$$(git log -1 --format=%ct) --transform 's|^|$(DIST)/|' \
			-I 'gzip -9n' -cf $(BUILD)/$(DIST).tar.gz.tmp && \
		mv $(BUILD)/$(DIST).tar.gz.tmp $(BUILD)/$(DIST).tar.gz
	$(call msg,DIST,$(BUILD)/$(DIST).tar.gz)

FORCE:

# ---- fuzzing: the command parser under libFuzzer + ASan/UBSan (clang) ----
FUZZ_TIME ?= 60
FUZZ_LIB_SRCS := $(filter-out %/json_out.c %/stats_rates.c,$(wildcard user/lib/base/*.c)) \
	$(filter-out %/sim.c,$(wildcard user/lib/table/*.c)) \
	user/lib/config/check.c user/lib/config/grammar.c user/lib/config/grammar_table.c \
	user/lib/config/state.c user/lib/config/state_io.c

$(BUILD)/fuzz/fuzz_grammar: tests/fuzz/fuzz_grammar.c $(FUZZ_LIB_SRCS) $(USER_HDRS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser/lib \
		-fsanitize=fuzzer,address,undefined $< $(FUZZ_LIB_SRCS) -o $@

# the sync wire codec: the only code that decodes bytes from the network
$(BUILD)/fuzz/fuzz_sync_wire: tests/fuzz/fuzz_sync_wire.c user/lib/wire/sync_wire.c $(USER_HDRS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser/lib \
		-fsanitize=fuzzer,address,undefined $< user/lib/wire/sync_wire.c -o $@

fuzz: $(BUILD)/fuzz/fuzz_grammar $(BUILD)/fuzz/fuzz_sync_wire
	$(Q)mkdir -p $(BUILD)/fuzz/corpus && cp -n tests/fuzz/corpus/* $(BUILD)/fuzz/corpus/
	$(Q)$(BUILD)/fuzz/fuzz_grammar -max_total_time=$(FUZZ_TIME) -max_len=4096 \
		$(BUILD)/fuzz/corpus
	$(Q)mkdir -p $(BUILD)/fuzz/corpus_sync_wire && \
		cp -n tests/fuzz/corpus_sync_wire/* $(BUILD)/fuzz/corpus_sync_wire/
	$(Q)$(BUILD)/fuzz/fuzz_sync_wire -max_total_time=$(FUZZ_TIME) -max_len=45000 \
		$(BUILD)/fuzz/corpus_sync_wire

# ---- the man pages' sections generated from the grammar table ----
# Between `.\" BEGIN GENERATED NAME` and `.\" END GENERATED NAME`: what
# `chlbctl help --man NAME` prints. tests/unit/test_grammar_table.c fails
# while they differ.
grammar-docs: $(BUILD)/chlbctl
	$(Q)BUILD=$(BUILD) scripts/grammar_docs.sh

# ---- checks ----
FORMAT_SRCS = $(filter-out include/chlb_crc32c_table.h,$(wildcard bpf/*.c bpf/*.h include/*.h user/*/*.c user/*/*.h user/*/*/*.c user/*/*/*.h tests/*/*.c tests/*/*.h))

lint:
	$(call msg,LAYERS,user/lib and chlbd)
	$(Q)BUILD=$(BUILD) scripts/check_layers.sh
	$(call msg,FORMAT,check)
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)
	$(call msg,REFS,docs tests sources)
	$(Q)scripts/check_refs.sh
	$(call msg,CPPCHECK,user include)
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --suppress=missingIncludeSystem -D__x86_64__ -Iinclude -Iuser/lib -Iuser/chlbd \
		user include

# make check: the part of `make test` that needs no root and no network:
# lint, the unit tests and their ASan/UBSan builds (tests/run.sh --check,
# the same runner and closing "N passed, N failed" line). No deps: a missing
# tool or library is named with its Debian package instead. It builds only
# what it runs: the unit tests, their ASan/UBSan builds and chlbctl (test_sim
# runs it).
.PHONY: check
CHECK_ENV = BUILD='$(BUILD)' CC='$(CC)' CLANG='$(CLANG)' BPFTOOL='$(BPFTOOL)'
check:
	$(Q)$(CHECK_ENV) tests/run.sh --tools
	$(Q)$(MAKE) -s --no-print-directory $(UNIT_BINS) $(ASAN_UNIT_BINS) $(BUILD)/chlbctl
	+$(Q)$(CHECK_ENV) tests/run.sh --check

# Names the goal the user typed (demo and bench need root too, and said
# "make test needs root"), and what runs without root.
check-root:
	@[ "$$(id -u)" = 0 ] || { echo "make $(or $(firstword $(filter test bench bench-live demo,$(MAKECMDGOALS))),test) needs root (BPF, XDP, network namespaces); run it as root (make check runs the part that needs none)" >&2; exit 1; }

test: deps check-root
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) tests/run.sh

bench: deps check-root
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) tests/bench/run.sh

# live frames through chlb in native XDP against a bare XDP_TX (docs/bench-live.md)
bench-live: deps check-root
	$(Q)$(MAKE) --no-print-directory all
	$(Q)mkdir -p $(BUILD)/bench
	$(Q)BUILD=$(BUILD) tests/bench/live.sh $(BUILD)/bench/live.json

demo: deps check-root
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) tests/e2e/demo.sh

clean:
	rm -rf $(BUILD)

# ---- install ----
# Programs, man pages and the bash completion go under PREFIX (/usr/local:
# what an administrator installs by hand, which dpkg never touches). The
# systemd unit goes where systemd reads units of that origin: under
# /usr/local/lib/systemd/system for PREFIX=/usr/local ("units installed by
# the administrator", systemd.unit(5)), and to /lib/systemd/system for
# PREFIX=/usr, where Debian 12 packages put theirs (dh_installsystemd,
# pkg-config's systemdsystemunitdir), so a package build (make install
# PREFIX=/usr DESTDIR=debian/chlb) lays it out as Debian expects. bash-completion
# loads completions from each XDG_DATA_DIRS entry, /usr/local/share included.
# The config files live in /etc whatever the prefix (the unit reads them
# there) and are installed only when absent: an upgrade keeps the operator's.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MAN5DIR ?= $(PREFIX)/share/man/man5
MAN8DIR ?= $(PREFIX)/share/man/man8
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
DOCDIR ?= $(PREFIX)/share/doc/chlb
SYSCONFDIR ?= /etc
ifeq ($(PREFIX),/usr)
SYSTEMDUNITDIR ?= /lib/systemd/system
else
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
endif
# installed file (under DESTDIR), its source, mode; config files listed apart
INSTALL_FILES := $(SBINDIR)/chlbd:$(BUILD)/chlbd:0755 $(SBINDIR)/chlbctl:$(BUILD)/chlbctl:0755 \
	$(MAN8DIR)/chlbd.8:docs/chlbd.8:0644 $(MAN8DIR)/chlbctl.8:docs/chlbctl.8:0644 \
	$(MAN5DIR)/chlb.5:docs/chlb.5:0644 \
	$(SYSTEMDUNITDIR)/chlbd.service:$(BUILD)/chlbd.service:0644 \
	$(BASHCOMPDIR)/chlbctl:dist/chlbctl.bash-completion:0644 \
	$(foreach d,README.md NEWS.md $(wildcard docs/*.md) $(wildcard docs/examples/*.conf),\
		$(DOCDIR)/$(d):$(d):0644)
INSTALL_CONFS := $(SYSCONFDIR)/chlb/chlb.conf:dist/chlb.conf:0644 \
	$(SYSCONFDIR)/default/chlbd:dist/chlbd.default:0644

$(BUILD)/chlbd.service: dist/chlbd.service.in FORCE | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

install: $(BUILD)/chlbd $(BUILD)/chlbctl $(BUILD)/chlbd.service
	$(Q)set -e; for f in $(INSTALL_FILES); do \
		dst=$$(echo "$$f" | cut -d: -f1); src=$$(echo "$$f" | cut -d: -f2); \
		printf '  %-8s %s\n' INSTALL "$(DESTDIR)$$dst"; \
		install -D -m "$${f##*:}" "$$src" "$(DESTDIR)$$dst"; \
	done; \
	for f in $(INSTALL_CONFS); do \
		dst=$$(echo "$$f" | cut -d: -f1); src=$$(echo "$$f" | cut -d: -f2); \
		if [ -e "$(DESTDIR)$$dst" ]; then \
			printf '  %-8s %s (exists: kept)\n' KEEP "$(DESTDIR)$$dst"; \
		else \
			printf '  %-8s %s\n' INSTALL "$(DESTDIR)$$dst"; \
			install -D -m "$${f##*:}" "$$src" "$(DESTDIR)$$dst"; \
		fi; \
	done
	$(Q)if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# Config files go only if unchanged from what install put there (as dpkg
# treats conffiles on remove); directories only if empty. The directories
# are those install -D may have created for chlb's files (on a fresh Debian
# 12, all of these for PREFIX=/usr/local), leaf first, never the FHS ones
# above them (PREFIX/sbin, PREFIX/share/man, /etc/default), so the host is
# left as it was before install.
UNINSTALL_DIRS := $(SYSCONFDIR)/chlb $(SYSTEMDUNITDIR) $(patsubst %/,%,$(dir $(SYSTEMDUNITDIR))) \
	$(BASHCOMPDIR) $(patsubst %/,%,$(dir $(BASHCOMPDIR))) $(MAN5DIR) $(MAN8DIR) \
	$(DOCDIR)/docs/examples $(DOCDIR)/docs $(DOCDIR) $(patsubst %/,%,$(dir $(DOCDIR)))
uninstall:
	$(Q)for f in $(INSTALL_FILES); do \
		dst=$(DESTDIR)$$(echo "$$f" | cut -d: -f1); \
		if [ -e "$$dst" ]; then printf '  %-8s %s\n' RM "$$dst"; rm -f "$$dst"; fi; \
	done; \
	for f in $(INSTALL_CONFS); do \
		dst=$(DESTDIR)$$(echo "$$f" | cut -d: -f1); src=$$(echo "$$f" | cut -d: -f2); \
		if [ ! -e "$$dst" ]; then :; \
		elif cmp -s "$$src" "$$dst"; then printf '  %-8s %s\n' RM "$$dst"; rm -f "$$dst"; \
		else printf '  %-8s %s (changed: kept)\n' KEEP "$$dst"; fi; \
	done; \
	for d in $(UNINSTALL_DIRS); do \
		if rmdir "$(DESTDIR)$$d" 2>/dev/null; then printf '  %-8s %s\n' RMDIR "$(DESTDIR)$$d"; fi; \
	done; true
	$(Q)if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

.SECONDARY:
