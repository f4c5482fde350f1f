/* fuzz_hw_decode.c - libFuzzer target: hwprobe's tracefs format parser on the first part of the input
 * and its record decoders (mc_event, net_dev_xmit_timeout) on the rest, with that format. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hw_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_agg a;
	const uint8_t *sep = memchr(data, 0, size);
	size_t flen = sep ? (size_t)(sep - data) : size;
	const uint8_t *rec = sep ? sep + 1 : data + size;
	size_t rlen = size - flen - (sep ? 1 : 0);
	struct hw_mc_rec r;
	struct hw_nic *n;
	struct hw_mc *m;

	memset(&a, 0, sizeof(a));
	if (tp_format__parse((const char *)data, flen, &a.mc_fmt) == 0) {
		a.xmit_fmt = a.mc_fmt;
		a.has_mc_fmt = a.has_xmit_fmt = 1;
		(void)hw_agg__mc_event(&a, rec, rlen, &r, &m);
		(void)hw_agg__xmit_timeout(&a, rec, rlen, &n);
	}
	return 0;
}
