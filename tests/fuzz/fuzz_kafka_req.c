/* fuzz_kafka_req.c - libFuzzer target: kafkaprobe's request parser (probes/kafkaprobe/kafka_req.c) on a
 * request's first bytes, as the kernel half hands them over (the size prefix first); every partition it
 * reports must name a topic inside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kafka_req.h"

struct span {
	const uint8_t *p;
	size_t n;
};

static void on_part(void *arg, int api_key, const char *topic, size_t topic_len, int32_t partition, int64_t value)
{
	const struct span *in = arg;

	(void)api_key;
	(void)partition;
	(void)value;
	if ((const uint8_t *)topic < in->p || (const uint8_t *)topic + topic_len > in->p + in->n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span in = {data, size};
	struct kreq_hdr h;
	unsigned int cut;

	(void)kreq_parse(data, size, on_part, &in, &h, &cut);
	return 0;
}
