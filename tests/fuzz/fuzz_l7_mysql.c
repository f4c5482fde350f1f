/* fuzz_l7_mysql.c - libFuzzer target: l7probe's mysql parser (and inference) on any script of chunks. */
#define FUZZ_L7_PROTO L7_PROTO_MYSQL
#include "fuzz_l7.h"
