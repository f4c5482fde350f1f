/* fuzz_l7_pgsql.c - libFuzzer target: l7probe's pgsql parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_PGSQL
#include "fuzz_l7.h"
