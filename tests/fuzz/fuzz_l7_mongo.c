/* fuzz_l7_mongo.c - libFuzzer target: l7probe's mongo parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_MONGO
#include "fuzz_l7.h"
