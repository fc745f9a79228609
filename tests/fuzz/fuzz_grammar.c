// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the one command parser: every input is fed as a
 * config/request text through chlb_state_exec_text (tokenizer, statement
 * parser, validation, jump orders) and, when it parses, formatted and parsed
 * again: the saved form must reload to the same text. `make fuzz`.
 */
#include <stdlib.h>
#include <string.h>
#include "config/state.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct chlb_state a, b;
	char err[CHLB_ERR_MAX];
	char *text, *t1, *t2;

	if (size > 1 << 16)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	chlb_state_init(&a);
	chlb_state_init(&b);
	if (!chlb_state_exec_text(&a, text, "fuzz", err, sizeof(err))) {
		t1 = chlb_state_format(&a, true);
		if (!t1 || !chlb_state_text_intact(t1))
			abort();
		if (chlb_state_exec_text(&b, t1, "saved", err, sizeof(err)))
			abort(); /* what we save must load */
		t2 = chlb_state_format(&b, true);
		if (!t2 || strcmp(t1, t2))
			abort(); /* and load to the same state */
		free(t1);
		free(t2);
	}
	chlb_state_free(&a);
	chlb_state_free(&b);
	free(text);
	return 0;
}
