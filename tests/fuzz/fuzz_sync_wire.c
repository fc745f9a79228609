// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the entry-sync wire codec (user/lib/wire/sync_wire.h),
 * the only code that decodes what a network peer sends: every input is cut
 * into messages as chlbd's receiver does; a message's length never passes
 * the bytes given, and every record that decodes encodes back to the same
 * 80 bytes (nothing accepted that the format does not say). `make fuzz`.
 */
#include <stdlib.h>
#include <string.h>
#include "wire/sync_wire.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		enum sync_msg_type type;
		const char *why = NULL;
		__u16 count;
		int n = sync_wire_msg(data + off, size - off, &type, &count, &why);

		if (n < 0) {
			if (!why)
				abort(); /* a refusal always says why */
			return 0;
		}
		if (!n)
			return 0; /* incomplete: the receiver waits for more */
		if ((size_t)n > size - off || n < SYNC_WIRE_HDR)
			abort();
		for (__u16 i = 0; type == SYNC_MSG_RECORDS && i < count; i++) {
			struct sync_entry e;
			__u8 again[SYNC_WIRE_REC];

			if (sync_wire_get(data + off, i, &e, &why))
				continue;
			sync_wire_put(again, &e);
			if (memcmp(again, data + off + SYNC_WIRE_HDR + (size_t)i * SYNC_WIRE_REC,
				   SYNC_WIRE_REC))
				abort();
		}
		off += (size_t)n;
	}
	return 0;
}
