// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Replies of the control socket, built here and nowhere else: one JSON
 * object, one line, valid whatever the request held (base/json_out.h).
 * {"error": msg, "kind": kind} says what failed (chlbd.h, CHLBD_ERR_*).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chlbd.h"
#include "ctl/ctl.h"
#include "base/json_out.h"

/* numbers with 6 decimals */
char *chlbd_reply(json_object *o)
{
	static bool fixed;
	char *s;

	if (!fixed)
		fixed = !json_c_set_serialization_double_format("%.6f", JSON_C_OPTION_GLOBAL);
	s = chlb_json_dump(o);
	json_object_put(o);
	return s;
}

char *chlbd_reply_splice(json_object *o, const char *key, const char *list, size_t len)
{
	const char *head = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	size_t hlen = strlen(head), klen = strlen(key);
	char *s = malloc(hlen + klen + len + 16);

	if (s) {
		/* without the final '}': ,"KEY":[LIST]} */
		snprintf(s, hlen + klen + len + 16, "%.*s,\"%s\":[%.*s]}", (int)hlen - 1, head, key,
			 (int)len, list ? list : "");
	}
	json_object_put(o);
	return s;
}

json_object *chlbd_jerr(const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

json_object *chlbd_jerr_kind(const char *msg, const char *kind)
{
	json_object *o = chlbd_jerr(msg);

	json_object_object_add(o, "kind", json_object_new_string(kind));
	return o;
}

char *chlbd_error_reply(const char *msg, const char *kind)
{
	return chlbd_reply(chlbd_jerr_kind(msg, kind));
}

/* Sent without an allocation: to a client refused at the descriptor limit. */
const char chlbd_busy_reply[] = "{\"error\":\"chlbd: too many clients\",\"kind\":\"failed\"}\n";
