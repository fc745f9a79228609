// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The daemon's one global, D (chlbd.h): its options and runtime state.
 * Defined here, below every other file of chlbd, so that reading it ties
 * no file to main.c.
 */
#include "chlbd.h"

struct chlbd D = { .listen_fd = -1, .epfd = -1, .socket_gid = -1, .lock_fd = -1 };
