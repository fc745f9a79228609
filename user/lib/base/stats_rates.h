/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rates from two `stats` replies of ONE reader. chlbd reports counters and
 * the time it read them (time_ns, CLOCK_MONOTONIC), never rates: a reader
 * that keeps its previous reply computes its own, over its own interval,
 * so readers never disturb each other (chlbctl stats --watch does this).
 */
#ifndef CHLB_STATS_RATES_H
#define CHLB_STATS_RATES_H

#include <json-c/json.h>

/*
 * Adds to cur, from prev (the same reader's previous reply):
 *  - "interval_s": seconds between the two reads;
 *  - per service row (the same "service" and "id") and backend row (the
 *    same "slot" and "gen": the same occupant): "pps", "bps" (bits),
 *    "new_flows_per_s", "no_route_per_s";
 *  - "global_per_s": each reason per second.
 * A row new in cur, a row whose counters went down (maps recreated by a
 * restart), and every row when a `stats reset` came between the two reads
 * ("resets" differs) get no rates.
 * Returns the interval in seconds, or -1 (and adds nothing) when a reply
 * has no time or the time did not advance.
 */
double chlb_stats_rates(json_object *prev, json_object *cur);

#endif /* CHLB_STATS_RATES_H */
