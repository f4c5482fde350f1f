/* contract.c - stackprobe's contract: REST name "flamegraph", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "stackprobe.h"
#endif

static const struct gg_subprobe subprobes[] = {
	{"oncpu", GG_BIT(1u << SP_EV_ONCPU), 1, 0},
	{"offcpu", GG_BIT(1u << SP_EV_OFFCPU), 0, 0},
	{"mem", GG_BIT(1u << SP_EV_MEM), 0, 0},
	{"io", 0, 0, 1}, /* gala-gopher's fourth kind: the binary accepts it (not implemented), REST does not */
};

/* clang-format off */
static const struct gg_param_spec params[] = {
	{.name = "report_period", .type = GG_PT_INT, .def = 60, .min = 5, .max = 600, .unit = "s", .flag = "-t",
	 .help = "report period of the stats records", .cli_def = 60, .cli_min = 1, .cli_max = 600,
	 GG_STORE(struct sp_conf, report_period_s)},
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	GG_PARAM_BOOL("multi_instance", "--multi-instance", "one graph per process", GG_STORE(struct sp_conf, multi_instance)),
	GG_PARAM_BOOL("native_stack", "--native-stack", "accepted for compatibility (Java), no effect", GG_STORE(struct sp_conf, native_stack)),
	{.name = "pyroscope_server", .type = GG_PT_HOSTPORT, .def_str = "localhost:4040", .cli_def_str = "",
	 .flag = "--pyroscope-server",
	 .help = "upload to this Pyroscope server (\"\": off)", GG_STORE(struct sp_conf, pyroscope)},
	/* the binary takes short periods (tests); REST the seed's 30..600 */
	{.name = "svg_period", .type = GG_PT_INT, .def = 180, .min = 30, .max = 600, .unit = "s", .flag = "--svg-period",
	 .help = "flame graph period", .cli_def = 180, .cli_min = 1, .cli_max = 600, GG_STORE(struct sp_conf, svg_period_s)},
	{.name = "perf_sample_period", .type = GG_PT_INT, .def = 10, .min = 10, .max = 1000, .unit = "ms",
	 .flag = "--perf-sample-period", .help = "oncpu sampling period", GG_STORE(struct sp_conf, perf_period_ms)},
	{.name = "svg_dir", .type = GG_PT_OUT_DIR, .def_str = "/var/log/gala-gopher/stacktrace", .flag = "--svg-dir",
	 .help = "SVG files", GG_STORE(struct sp_conf, svg_dir)},
	{.name = "flame_dir", .type = GG_PT_OUT_DIR, .def_str = "/var/log/gala-gopher/flamegraph", .flag = "--flame-dir",
	 .help = "folded, pprof and profile store files", GG_STORE(struct sp_conf, flame_dir)},
	{.name = "min_block_us", .type = GG_PT_INT, .def = 1000, .min = 1, .max = 10000000, .unit = "us",
	 .flag = "--min-block-us", .help = "off-CPU blocks shorter than this are ignored",
	 GG_STORE(struct sp_conf, min_block_us)},
	{.name = "profile_retention", .type = GG_PT_INT, .def = 3600, .min = 60, .max = 604800, .unit = "s",
	 .flag = "--retention", .help = "profile store retention", GG_STORE(struct sp_conf, retention_s)},
	GG_PARAM_BOOL("mem_alloc", "--mem-alloc", "with mem: uprobes on malloc & co, bytes per stack", GG_STORE(struct sp_conf, mem_alloc)),
	GG_PARAM_BOOL("mem_live", "--mem-live", "with mem: bytes allocated and not freed yet per stack (malloc & co, free; anonymous mmap, brk)", GG_STORE(struct sp_conf, mem_live)),
	{.name = "dwarf_unwind", .type = GG_PT_BOOL, .def = 1, .min = 0, .max = 1, .flag = "--dwarf-unwind",
	 .help = "user stacks by .eh_frame tables (frame pointers where a pc has none); 0: frame pointers only",
	 GG_STORE(struct sp_conf, dwarf_unwind)},
};
/* clang-format on */

GG_CONTRACT(stackprobe, "flamegraph", GG_SNOOP_ALL,
	    "on-CPU, off-CPU, page fault and allocation stacks: flame graphs, pprof, profile store");
