// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `chlbctl help` for the daemon commands: written from the grammar's table
 * (config/grammar_table.c), as docs/chlb.5 and docs/chlbctl.8's GRAMMAR are.
 */
#include <stdio.h>
#include "chlbctl.h"
#include "config/grammar_table.h"

void control_usage(void)
{
	chlb_grammar_help(stdout);
}
