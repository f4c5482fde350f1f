/* contract.c - trace_haproxy's contract: REST name "haproxy" (gala-gopher's), its elf_path (which
 * executable is HAProxy) and the usual snoopers. */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "hap_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct hap_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "elf_path", .type = GG_PT_ELF_PATH, .def_str = "", .flag = "--elf-path",
	 .help = "the HAProxy executable: its processes are read (\"\": every process whose name is haproxy)",
	 GG_STORE(struct hap_conf, elf_path)},
};
/* clang-format on */

GG_CONTRACT_NOSUB(trace_haproxy, "haproxy", GG_SNOOP_ALL,
		  "HAProxy's links client -> frontend address -> server, from each HAProxy process's runtime API "
		  "(show sess)");
