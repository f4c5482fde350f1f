/* contract.c - virtualized_infos' contract: REST name "virt", no sub-probes, no snoopers (seed 000). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "virt_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct virt_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};
/* clang-format on */

/* Seed 000 gives virt no sub-probes and no monitoring targets ("NA"). */
GG_CONTRACT_NOSUB(
	virtualized_infos, "virt", 0,
	"qemu processes of the host and their guests' names and uuids (command line, libvirt's run directory)");
