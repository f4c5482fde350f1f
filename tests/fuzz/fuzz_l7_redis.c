/* fuzz_l7_redis.c - libFuzzer target: l7probe's redis parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_REDIS
#include "fuzz_l7.h"
