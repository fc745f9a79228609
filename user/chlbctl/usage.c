// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `chlbctl help` for the daemon commands; docs/chlbctl.8 and README say the same. */
#include <stdio.h>
#include "chlbctl.h"

void control_usage(void)
{
	printf("Daemon commands (talk to chlbd over -s SOCKET):\n"
	       "  service add VIP [algo ring|jump|maglev|jtable] [vnodes K] [table M]\n"
	       "                  [fwd l2dsr|ipip] [hash 5tuple|src] [mtu N] [encap-src ADDR]\n"
	       "                  [force|--force]                                [--dry-run]\n"
	       "  service set VIP OPTION VALUE... [force|--force]                [--dry-run]\n"
	       "  service del VIP                                                [--dry-run]\n"
	       "  service list [VIP]          options, backends, table fingerprint, swaps\n"
	       "  backend add VIP ADDR [weight W]      W 0..10000, default 100  [--dry-run]\n"
	       "  backend set VIP ADDR weight W        0 = drain: no new flows  [--dry-run]\n"
	       "  backend del VIP ADDR                                          [--dry-run]\n"
	       "  backend list [VIP]          weight, slot, state, conns (live entries)\n"
	       "  stats                       packets, bytes, new flows, rates since last call,\n"
	       "                              connection-table size, entries, evictions\n"
	       "  conns [VIP] [--backend ADDR] [--json]\n"
	       "                              connection entries per service and backend:\n"
	       "                              live, ended (FIN/RST), stale; --json lists them\n"
	       "                              (at most 100000)\n"
	       "  which SRC:PORT DST:PORT tcp|udp   table decisions and connection entry\n"
	       "  save                        the state in this grammar\n"
	       "  apply -f FILE [--dry-run] [--force]\n"
	       "                              converge to FILE (one bad line: nothing applied);\n"
	       "                              a FILE that deletes every service needs --force\n"
	       "  batch -f FILE|- [--dry-run] the changes in FILE as one transaction\n"
	       "  shutdown [--detach]         stop chlbd; --detach also detaches and unpins\n"
	       "  version                     this chlbctl's and the running chlbd's version and\n"
	       "                              BPF build id; a differing BPF build is flagged\n"
	       "VIP is ADDR:PORT/PROTO ([v6]:PORT/PROTO); port 0 = every port, written :0.\n"
	       "A VIP that is one of chlbd's own addresses needs force (kept in the state).\n"
	       "Defaults: algo ring, vnodes 160, table 65537 (prime, > backends), fwd ipip,\n"
	       "hash 5tuple.\n"
	       "jtable: jump's bucket order compiled into a Maglev-format table (O(1) lookup,\n"
	       "jump's disruption), size M like maglev.\n"
	       "--dry-run prints the share of the keyspace that would move, per backend, and\n"
	       "what happens to running flows; for a hash-field change, the share of new\n"
	       "flows that go to another backend.\n");
}
