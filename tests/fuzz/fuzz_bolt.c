/* fuzz_bolt.c - libFuzzer target: the bbolt reader (supervisor/bolt.c) on any bytes as a database file:
 * it must find nothing, or pairs within the page it read, never read out of bounds or loop. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../supervisor/bolt.h"

static int pair(void *ctx, const char *k, size_t kn, const char *v, size_t vn)
{
	size_t *total = ctx;

	/* the bytes are read (ASan checks they are inside the page) */
	for (size_t i = 0; i < kn; i++)
		*total += (unsigned char)k[i];
	for (size_t i = 0; i < vn; i++)
		*total += (unsigned char)v[i];
	return 0;
}

/* Give the meta page at off a valid checksum, so that mutations reach the pages behind it. */
static void fix_meta(uint8_t *d, size_t size, size_t off)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	if (off + 16 + 64 > size)
		return;
	for (unsigned int i = 0; i < 56; i++) {
		h ^= d[off + 16 + i];
		h *= 0x100000001b3ULL;
	}
	for (int i = 0; i < 8; i++)
		d[off + 16 + 56 + i] = (uint8_t)(h >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const path[] = {"v1", "k8s.io", "containers", "a", "labels"};
	uint8_t *d = malloc(size ? size : 1);
	struct gg_bolt_mem m = {.data = d, .len = size};
	struct gg_bolt_src src = {.read = gg_bolt__mem_read, .ctx = &m, .size = size};
	size_t total = 0;

	if (!d)
		return 0;
	memcpy(d, data, size);
	/* odd first byte: the input as it is (checksums too); even: meta checksums made valid */
	if (size && !(data[0] & 1)) {
		fix_meta(d, size, 0);
		fix_meta(d, size, 4096);
	}
	for (unsigned int n = 1; n <= 5; n++)
		(void)gg_bolt__bucket_pairs(&src, path, n, 64, pair, &total);
	free(d);
	return 0;
}
