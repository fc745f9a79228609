// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Readiness (ready.h). STUB: being written; always ready. */
#include "ready.h"

bool chlbd_ready(const char **why)
{
	*why = "";
	return true;
}
