// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Valid, unescaped-slash, one-line JSON from json-c objects (see json_out.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/json_out.h"

size_t chlb_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned int cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0; /* a continuation byte, an overlong lead (c0, c1) or beyond U+10FFFF */
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong, a UTF-16 surrogate, or beyond the last code point */
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* NaN, Infinity or -Infinity at p (outside a string): its length, else 0. */
static size_t non_number(const char *p, size_t n)
{
	static const char *const words[] = { "NaN", "-NaN", "Infinity", "-Infinity" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t len = strlen(words[i]);

		if (n >= len && !memcmp(p, words[i], len))
			return len;
	}
	return 0;
}

/* One pass over text: writes to out when it is not NULL; returns the output length. */
static size_t sanitize(const char *text, size_t len, char *out)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, o = 0, n;
	int in_str = 0;

#define EMIT(p, k)                                 \
	do {                                       \
		if (out)                           \
			memcpy(out + o, (p), (k)); \
		o += (k);                          \
	} while (0)
	while (i < len) {
		if (!in_str) {
			n = non_number(text + i, len - i);
			if (n) {
				EMIT("null", 4);
				i += n;
				continue;
			}
			in_str = s[i] == '"';
			EMIT(text + i, 1);
			i++;
			continue;
		}
		if (s[i] == '\\' && i + 1 < len) { /* an escape: both bytes as they are */
			EMIT(text + i, 2);
			i += 2;
			continue;
		}
		if (s[i] == '"')
			in_str = 0;
		n = chlb_utf8_seq(s + i, len - i);
		if (!n) {
			EMIT("\\ufffd", 6);
			i++;
			continue;
		}
		EMIT(text + i, n);
		i += n;
	}
#undef EMIT
	return o;
}

char *chlb_json_sanitize(const char *text, size_t len)
{
	size_t n = sanitize(text, len, NULL);
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	sanitize(text, len, out);
	out[n] = '\0';
	return out;
}

char *chlb_json_dump(json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE);

	return s ? chlb_json_sanitize(s, strlen(s)) : NULL;
}

json_object *chlb_json_fixed(double v, int decimals)
{
	char buf[64];

	if (!isfinite(v))
		return NULL; /* null: JSON has no NaN or infinity */
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

void chlb_json_add_u64(json_object *o, const char *k, unsigned long long v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

void chlb_json_add_fixed(json_object *o, const char *k, double v, int decimals)
{
	json_object_object_add(o, k, chlb_json_fixed(v, decimals));
}

const char *chlb_json_str(json_object *o, const char *k, const char *dflt)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : dflt;
}

double chlb_json_double(json_object *o, const char *k, double dflt)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_double(v) : dflt;
}

json_object *chlb_json_array(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_array)
		   ? v
		   : NULL;
}
