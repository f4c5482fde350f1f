/* fuzz_batch.c - libFuzzer target: ipc_batch__decode on arbitrary bytes, then walk every record it accepts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ipc_batch_hdr h;
	const char *payload, *cur, *end, *line;
	uint8_t *copy, hdrbuf[IPC_BATCH_HDR_LEN];
	size_t llen;
	uint64_t n = 0, bytes = 0;

	/* An exact-size heap copy, so ASan catches any read past the message. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (ipc_batch__decode(copy, size, &h, &payload) != 0) {
		free(copy);
		return 0;
	}
	/* Accepted: the promises decode makes must hold. */
	if (memchr(h.probe, '\0', sizeof(h.probe)) == NULL || h.probe[0] == '\0')
		abort();
	if (h.payload_len > IPC_BATCH_MAX_PAYLOAD || payload < (const char *)copy ||
	    payload + h.payload_len != (const char *)copy + size)
		abort();
	cur = payload;
	end = payload + h.payload_len;
	while (ipc_batch__next_record(&cur, end, &line, &llen) == 1) {
		if (llen == 0 || llen > IPC_RECORD_MAX_LEN || memchr(line, '\n', llen) || memchr(line, '\0', llen))
			abort();
		n++;
		bytes += llen + 1;
	}
	if (n != h.nrecords || bytes != h.payload_len)
		abort();
	/* The header re-encodes to what decode read: name, then pid..payload length (offsets 40..75).
	 * Bytes after the name's NUL are not checked by decode, so they are not compared. */
	ipc_batch_hdr__encode(&h, hdrbuf);
	if (strcmp((const char *)hdrbuf + 8, h.probe) != 0 || memcmp(hdrbuf + 40, copy + 40, 36) != 0)
		abort();
	free(copy);
	return 0;
}
