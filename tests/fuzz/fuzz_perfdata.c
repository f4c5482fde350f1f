/* fuzz_perfdata.c - libFuzzer target: jvmprobe's hsperfdata parser (prologue, entries, counters) on any
 * bytes, as a file another user's JVM writes could hold. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "perfdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pd_jvm j;
	struct pd_iter it;
	struct pd_entry e;
	char s[16];

	if (size > PD_FILE_MAX)
		return 0;
	(void)pd_jvm__parse(data, size, &j);
	/* every entry the walk hands out must lie inside the buffer */
	if (pd_iter__init(&it, data, size) == 0)
		while (pd_iter__next(&it, &e) > 0) {
			if ((const uint8_t *)e.name < data || (const uint8_t *)e.data < data ||
			    (const uint8_t *)e.data + e.data_len > data + size ||
			    (const uint8_t *)e.name + strlen(e.name) >= data + size)
				__builtin_trap();
			(void)pd_entry__long(&e);
			pd_entry__str(&e, s, sizeof(s));
		}
	return 0;
}
