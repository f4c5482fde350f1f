/* contract.c - hwprobe's contract: REST name "hw", sub-probes hw_nic and hw_mem, parameters. */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "hw_conf.h"
#endif

/* clang-format off */
static const struct gg_subprobe subprobes[] = {
	{"hw_nic", GG_BIT(HW_SP_NIC), 1, 0},
	{"hw_mem", GG_BIT(HW_SP_MEM), 1, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct hw_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};
/* clang-format on */

GG_CONTRACT(hwprobe, "hw", 0,
	    "hardware faults: NIC transmit timeouts and carrier changes, memory controller (EDAC) errors; events");
