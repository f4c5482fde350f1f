/* contract.c - pgsliprobe's contract: REST name "postgre_sli" (gala-gopher's PostgreSQL SLI probe),
 * parameters (ipc/contract.h). The binary is l7probe's program in its PostgreSQL SLI mode (main.c). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "../l7probe/l7_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct l7_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "dev_name", .type = GG_PT_NAME, .def_str = "", .restart = 1,
	 .help = "accepted, no effect (requests are read from the socket calls, not a device)"},
	GG_PARAM_BOOL("support_ssl", "-s", "follow SSL_read/SSL_write of OpenSSL", GG_STORE(struct l7_conf, ssl)),
};
/* clang-format on */

GG_CONTRACT_NOSUB(pgsliprobe, "postgre_sli", GG_SNOOP_ALL,
		  "PostgreSQL server latency per connection and statement type (pg_sli, pg_max_sli), from l7probe's "
		  "capture");
