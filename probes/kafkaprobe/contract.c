/* contract.c - kafkaprobe's contract: REST name "kafka" (gala-gopher's), parameters dev_name and
 * kafka_port (gala-gopher's) and idle_timeout (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "kp_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct kp_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "dev_name", .type = GG_PT_NAME, .def_str = "", .cli_def_str = "eth0", .restart = 1, .flag = "-d",
	 .help = "the device whose incoming packets are parsed (XDP); \"\": eth0", GG_STORE(struct kp_conf, dev_name)},
	{.name = "kafka_port", .type = GG_PT_INT, .def = 9092, .min = 1, .max = 65535, .restart = 1, .flag = "-k",
	 .help = "the brokers' TCP port", GG_STORE(struct kp_conf, port)},
	{.name = "idle_timeout", .type = GG_PT_INT, .def = 300, .min = 1, .max = 86400, .unit = "s", .flag = "--idle",
	 .help = "a key (client connection, topic) not seen this long is forgotten: its series ends",
	 GG_STORE(struct kp_conf, idle_s)},
};
/* clang-format on */

GG_CONTRACT_NOSUB(kafkaprobe, "kafka", 0,
		  "Kafka messages produced and consumed per client, topic and broker, from the Kafka requests "
		  "arriving at a device (XDP)");
