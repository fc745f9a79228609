/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* chlbctl's side of the control socket: one request, one JSON reply. */
#ifndef CHLBCTL_CLIENT_H
#define CHLBCTL_CLIENT_H

#include <json-c/json.h>

/*
 * Sends text, returns CHLBCTL_EXIT_OK with *reply (caller puts it), or an
 * exit code after reporting: UNREACHABLE, PROTOCOL, or (the reply was
 * {"error": ..., "kind": ...}, already printed) USAGE for kind "usage" (a
 * bad value chlbd found), else FAIL.
 */
int ctl_request(const char *text, json_object **reply);

/* Joins argv into one statement line: "service add VIP algo ring". malloc'd. */
char *ctl_join(const char *head, int argc, char **argv);
/*
 * Each argument one word of the statement? 0, or a usage error naming the
 * argument: joined, "10.1.0.2 weight 7" would become three words and a
 * leading '#' a comment that drops the words after it.
 */
int ctl_check_words(int argc, char **argv);

/* Removes every "--dry-run" (or "-n") from argv; returns true if one was there. */
bool ctl_take_flag(int *argc, char **argv, const char *long_flag, const char *short_flag);

/* Parses the statement locally (grammar.c) so usage errors need no daemon. */
int ctl_check_statement(const char *line);

#endif /* CHLBCTL_CLIENT_H */
