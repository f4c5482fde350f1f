/* fuzz_l7_kafka.c - libFuzzer target: l7probe's kafka parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_KAFKA
#include "fuzz_l7.h"
