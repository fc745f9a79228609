/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * JSON as chlbd and chlbctl print it: json-c objects, one line, "/" not
 * escaped (JSON_C_TO_STRING_NOSLASHESCAPE), and always valid JSON. json-c
 * copies string bytes as they are, so an invalid UTF-8 byte from a request
 * or an interface name would make the whole document invalid; it prints a
 * NaN or an infinity as NaN / Infinity, which JSON does not have either.
 * chlb_json_dump() replaces every invalid UTF-8 byte inside a string with
 * \ufffd (U+FFFD, the replacement character) and such numbers with null.
 */
#ifndef CHLB_JSON_OUT_H
#define CHLB_JSON_OUT_H

#include <stddef.h>
#include <json-c/json.h>

/* o serialized as above: malloc'd, NUL-terminated, no newline; NULL if out of memory. */
char *chlb_json_dump(json_object *o);

/*
 * text (len bytes, JSON as json-c writes it) made valid as above; malloc'd
 * and NUL-terminated, NULL if out of memory.
 */
char *chlb_json_sanitize(const char *text, size_t len);

/* A number printed with exactly `decimals` digits after the point ("%.*f"). */
json_object *chlb_json_fixed(double v, int decimals);

/*
 * Building and reading replies, the one set of helpers chlbd and chlbctl
 * share. Adding: o[k] = v. Reading: o[k] if present and not null, else
 * dflt; chlb_json_array: o[k] if it is an array, else NULL.
 */
void chlb_json_add_u64(json_object *o, const char *k, unsigned long long v);
void chlb_json_add_fixed(json_object *o, const char *k, double v, int decimals);
const char *chlb_json_str(json_object *o, const char *k, const char *dflt);
double chlb_json_double(json_object *o, const char *k, double dflt);
json_object *chlb_json_array(json_object *o, const char *k);

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
size_t chlb_utf8_seq(const unsigned char *s, size_t n);

#endif /* CHLB_JSON_OUT_H */
