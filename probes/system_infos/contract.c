/* contract.c - system_infos' contract: REST name "baseinfo", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "system_infos.h"
#endif

/* clang-format off */
static const struct gg_subprobe subprobes[] = {
	{"cpu", GG_BIT(SI_CPU), 1, 0},   {"mem", GG_BIT(SI_MEM), 1, 0}, {"nic", GG_BIT(SI_NIC), 1, 0},
	{"disk", GG_BIT(SI_DISK), 1, 0}, {"net", GG_BIT(SI_NET), 1, 0}, {"fs", GG_BIT(SI_FS), 1, 0},
	{"proc", GG_BIT(SI_PROC), 1, 0}, {"host", GG_BIT(SI_HOST), 1, 0},
};

static const struct gg_param_spec params[] = {
	/* The REST range follows the binary's -t (1..600, default 5), not the seed's 5..600 default 60:
	 * gala-gopher's baseinfo scripts are run with -t. */
	{.name = "report_period", .type = GG_PT_INT, .def = 5, .min = 1, .max = 600, .unit = "s", .flag = "-t",
	 .help = "report period", GG_STORE(struct si_conf, period_s)},
	GG_PARAM_THR("drops_thr", "packets", NULL, NULL, GG_NOSTORE),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "dev_name", .type = GG_PT_NAME, .def_str = "", .restart = 1, .flag = "-d",
	 .help = "only this interface and disk", GG_STORE(struct si_conf, dev_name)},
	{.name = "proc_top", .type = GG_PT_INT, .def = 50, .min = 0, .max = 1024, .flag = "--proc-top",
	 .help = "without snoopers, the processes with the most CPU + memory reported by proc (0: all)",
	 GG_STORE(struct si_conf, proc_top)},
};
/* clang-format on */

GG_CONTRACT(system_infos, "baseinfo", GG_SNOOP_ALL, "host metrics from /proc, /sys and statvfs", .subprobe_flag = "-P",
	    .extend_params = (const char *const[]){"report_period", NULL});
