/* contract.c - jvmprobe's contract: REST name "jvm", no sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "jvm_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct jvm_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};
/* clang-format on */

/* Seed 000 gives jvm no sub-probes ("NA"). */
GG_CONTRACT_NOSUB(jvmprobe, "jvm", GG_SNOOP_ALL,
		  "JVM classes, threads, heap and non-heap pools, GC, safepoints and JIT from HotSpot's perf counters "
		  "(hsperfdata; no attach)");
