/* contract.c - ioprobe's contract: REST name "io", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "io_conf.h"
#endif

/* clang-format off */
/* page_cache is opt-in: its hooks fire on every page cache lookup and dirtying of the host. */
static const struct gg_subprobe subprobes[] = {
	{"io_trace", GG_BIT(SP_TRACE), 1, 0}, {"io_err", GG_BIT(SP_ERR), 1, 0},
	{"io_count", GG_BIT(SP_COUNT), 1, 0}, {"page_cache", GG_BIT(SP_PAGECACHE), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct io_conf, period_s)),
	GG_PARAM_SAMPLE_PERIOD,
	GG_PARAM_THR("latency_thr", "ms", "-T", "an event when a request takes this long",
		     GG_STORE(struct io_conf, latency_thr)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "dev_name", .type = GG_PT_NAME, .def_str = "", .restart = 1, .flag = "-d", .help = "only this disk",
	 GG_STORE(struct io_conf, dev_name)},
};
/* clang-format on */

GG_CONTRACT(ioprobe, "io", 0, "per disk latency, errors, counts, issuers and page cache activity");
