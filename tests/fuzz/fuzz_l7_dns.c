/* fuzz_l7_dns.c - libFuzzer target: l7probe's dns parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_DNS
#include "fuzz_l7.h"
