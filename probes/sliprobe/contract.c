/* contract.c - sliprobe's contract: REST name "sli", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "sli_conf.h"
#endif

/* clang-format off */
/* gala-gopher's six: three choose the hooks (cpu, mem, io), three the tables (node, container,
 * histogram). All on without -P or a live list, as gala-gopher has them. */
static const struct gg_subprobe subprobes[] = {
	{"cpu", GG_BIT(SLI_SP_CPU), 1, 0},             {"mem", GG_BIT(SLI_SP_MEM), 1, 0},
	{"io", GG_BIT(SLI_SP_IO), 1, 0},               {"node", GG_BIT(SLI_SP_NODE), 1, 0},
	{"container", GG_BIT(SLI_SP_CONTAINER), 1, 0}, {"histogram", GG_BIT(SLI_SP_HISTOGRAM), 1, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct sli_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};
/* clang-format on */

GG_CONTRACT(sliprobe, "sli", GG_SNOOP_CONTAINER_ID | GG_SNOOP_POD_ID,
	    "per node and per container CPU scheduling, memory stall and block IO latency (SLIs)");
