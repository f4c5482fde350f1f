/* contract.c - pg_stat_probe's contract: REST name "opengauss_sli" (gala-gopher's), its targets as the
 * "gaussdb" snoopers ({dbip, dbport, dbname, dbuser, dbpass}; seed 000: "the monitoring target for
 * opengauss is a DB instance"). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "pgs_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct pgs_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "query_timeout", .type = GG_PT_INT, .def = 5, .min = 1, .max = 60, .unit = "s", .flag = "--timeout",
	 .help = "how long connecting to a server, or one query, may take before the server counts as down",
	 GG_STORE(struct pgs_conf, timeout_s)},
};
/* clang-format on */

GG_CONTRACT_NOSUB(pg_stat_probe, "opengauss_sli", GG_SNOOP_GAUSSDB,
		  "transactions committed and rolled back per database of openGauss/PostgreSQL servers, read over "
		  "SQL from pg_stat_database");
