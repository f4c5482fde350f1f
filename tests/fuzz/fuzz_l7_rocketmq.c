/* fuzz_l7_rocketmq.c - libFuzzer target: l7probe's rocketmq parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_ROCKETMQ
#include "fuzz_l7.h"
