/* fuzz_l7_http.c - libFuzzer target: l7probe's http parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_HTTP
#include "fuzz_l7.h"
