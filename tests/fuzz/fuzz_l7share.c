/* fuzz_l7share.c - libFuzzer target: the parser of l7probe's per-process aggregates file (probes/lib/l7share.c),
 * read by autotrace from the run directory, on any bytes; every entry it hands out is in range. */
#include <stddef.h>
#include <stdint.h>

#include "l7share.h"

static int on_entry(void *ctx, const struct l7s_entry *e)
{
	(void)ctx;
	if (!e->tgid || (e->role != L7S_ROLE_CLIENT && e->role != L7S_ROLE_SERVER))
		__builtin_trap();
	(void)l7s_quantile(e->hist, 0.99);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct l7s_hdr hdr;
	uint64_t bad;

	(void)l7s_parse((const char *)data, size, &hdr, on_entry, NULL, &bad);
	return 0;
}
