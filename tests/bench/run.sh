#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make bench`: every benchmark, JSON reports under $BUILD/bench/.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
mkdir -p "$BUILD/bench"

echo "== data plane (XDP, BPF_PROG_TEST_RUN, one CPU)"
"$BUILD/tests/bench/dataplane" "$BUILD/bench/dataplane.json"

echo "== control plane (chlbd swaps and restart, network namespace)"
BUILD=$BUILD bash tests/bench/control.sh "$BUILD/bench/control.json"

echo "== entry sync (sealing per record; a 1M-entry dump between two chlbds, network namespaces)"
BUILD=$BUILD bash tests/bench/sync.sh "$BUILD/bench/sync.json"

echo "== live frames (chlb in native XDP on a veth vs a bare XDP_TX, network namespaces)"
BUILD=$BUILD bash tests/bench/live.sh "$BUILD/bench/live.json"

echo "== no torn reads at bench size (10^8 reader packets while CPU 1 rewrites; tests/bpf/test_torn_reads.c)"
CHLB_TORN_PACKETS=100000000 "$BUILD/tests/bpf/test_torn_reads" | tee "$BUILD/bench/torn.txt"

echo "== conns LRU: common vs BPF_F_NO_COMMON_LRU (inserts into a full table on one and two CPUs, RSS move, eviction fairness, memory)"
"$BUILD/tests/bench/lru" "$BUILD/bench/lru.json"
