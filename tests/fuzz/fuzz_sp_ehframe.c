/* fuzz_sp_ehframe.c - libFuzzer target: stackprobe's .eh_frame parser (probes/stackprobe/ehframe.c) on
 * arbitrary section contents; the first 4 bytes are the section's address. The rows must come out
 * sorted, within the limit, and the lookup must agree with them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ehframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_uw_row *rows = NULL;
	struct sp_eh_stats st;
	uint32_t addr = 0;
	size_t n = 0;

	if (size >= 4) {
		memcpy(&addr, data, 4);
		data += 4;
		size -= 4;
	}
	if (sp_ehframe__parse(data, size, addr, 4096, &rows, &n, &st) == 0) {
		if (n > 4096)
			abort();
		for (size_t i = 1; i < n; i++)
			if (rows[i - 1].pc >= rows[i].pc)
				abort();
		for (size_t i = 0; i < n; i++)
			if (sp_ehframe__find(rows, n, rows[i].pc) != &rows[i] || rows[i].kind > SP_UW_END)
				abort();
		free(rows);
	}
	return 0;
}
