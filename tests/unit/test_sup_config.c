/* test_sup_config.c - unit tests of the supervisor's configuration loader and argument splitting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "../../supervisor/config.h"

static char warnings[4096];

static void collect_warn(const char *msg)
{
	strncat(warnings, msg, sizeof(warnings) - strlen(warnings) - 2);
	strcat(warnings, "\n");
}

static struct gg_config cfg;

static int load(const char *text, char *err, size_t errlen)
{
	warnings[0] = 0;
	return gg_config__load_buf(&cfg, "/etc/gg/test.conf", text, err, errlen, collect_warn);
}

GG_TEST(test_defaults_and_compat)
{
	/* gala-gopher.conf as shipped (excerpt), including sections we accept without using them. */
	const char *text =
		"global = { log_file_name = \"gopher.log\"; log_level = \"debug\"; pin_path = \"/sys/fs/bpf/x\"; };\n"
		"metric = { out_channel = \"web_server\"; kafka_topic = \"gala_gopher\"; };\n"
		"event = { out_channel = \"kafka\"; kafka_topic = \"gala_gopher_event\"; timeout = 600; desc_language "
		"= \"zh_CN\"; };\n"
		"meta = { out_channel = \"\"; kafka_topic = \"gala_gopher_metadata\"; };\n"
		"ingress = { interval = 5; };\negress = { interval = 5; time_range = 5; };\n"
		"imdb = { max_tables_num = 1024; max_records_num = 1024; max_metrics_num = 1024; record_timeout = 60; "
		"};\n"
		"web_server = { port = 8888; };\n"
		"rest_api_server = { port = 9999; ssl_auth = \"off\"; private_key = \"\"; cert_file = \"\"; ca_file = "
		"\"\"; };\n"
		"kafka = { kafka_broker = \"localhost:9092\"; batch_num_messages = 10000; compression_codec = \"none\";"
		" queue_buffering_max_messages = 100000; queue_buffering_max_kbytes = 1048576; queue_buffering_max_ms "
		"= 5; };\n"
		"logs = { metric_dir = \"/var/log/gala-gopher/metrics\"; event_dir = \"/var/log/gala-gopher/event\";"
		" meta_dir = \"/var/log/gala-gopher/meta\"; debug_dir = \"/var/log/gala-gopher/debug\"; };\n"
		"probes = ( { name = \"example\"; param = \"\"; switch = \"off\"; },\n"
		"  { name = \"system_infos\"; param = \"-t 5 -l warn\"; switch = \"off\"; } );\n"
		"extend_probes = ( { name = \"tcp\"; command = \"/opt/gala-gopher/extend_probes/tcpprobe\";"
		" param = \"-l warn -c 1 -P 7\"; switch = \"off\"; start_check = \"lsmod | grep ip_vs | wc -l\"; "
		"check_type = \"count\"; } );\n";
	char err[512] = "";

	assert_int_equal(load(text, err, sizeof(err)), 0);
	assert_string_equal(warnings, "");
	assert_int_equal(cfg.metric.out, GG_OUT_WEB_SERVER);
	assert_int_equal(cfg.event.out, GG_OUT_KAFKA);
	assert_int_equal(cfg.meta.out, GG_OUT_OFF);
	assert_string_equal(cfg.event_desc_language, "zh_CN");
	assert_int_equal(cfg.web_server.port, 8888);
	assert_string_equal(cfg.web_server.bind_addr, "127.0.0.1");
	assert_int_equal(cfg.nprobes, 3);
	assert_string_equal(cfg.probes[1].name, "system_infos");
	assert_true(cfg.probes[1].native);
	assert_string_equal(cfg.probes[1].command, "/opt/gala-gopher/probes/system_infos");
	assert_false(cfg.probes[2].native);
	assert_string_equal(cfg.probes[2].check_cmd, "lsmod | grep ip_vs | wc -l");
	gg_config__fini(&cfg);
}

GG_TEST(test_relative_paths_and_brokers)
{
	char err[512] = "";

	assert_int_equal(load("global = { run_dir = \"run\"; probes_dir = \"../bin\"; };\n"
			      "kafka = { kafka_broker = ( \"k1:9092\", \"k2:9092\" ); };\n"
			      "probes = ( { name = \"p\"; switch = \"off\"; params = { report_period = 7; dev = "
			      "\"eth0\"; }; } );\n",
			      err, sizeof(err)),
			 0);
	assert_string_equal(cfg.global.run_dir, "/etc/gg/run");
	assert_string_equal(cfg.probes[0].command, "/etc/gg/../bin/p");
	assert_string_equal(cfg.kafka.kafka_broker, "k1:9092,k2:9092");
	assert_non_null(cfg.probes[0].params_json);
	assert_string_equal(cfg.probes[0].params_json, "{\"params\":{\"report_period\":7,\"dev\":\"eth0\"}}");
	gg_config__fini(&cfg);
}

static void expect_error(const char *text, const char *want)
{
	char err[512] = "";

	assert_int_equal(load(text, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("error \"%s\" does not mention \"%s\"", err, want);
	assert_int_equal(cfg.nprobes, 0);
}

GG_TEST(test_errors_name_the_key)
{
	expect_error("web_server = { port = 0; };", "test.conf:1: web_server.port: 0 is out of range [1, 65535]");
	expect_error("web_server = { port = \"80x\"; };", "web_server.port: must be an integer");
	expect_error("rest_api_server = { ssl_auth = \"yes\"; };",
		     "rest_api_server.ssl_auth: must be \"on\" or \"off\"");
	expect_error("rest_api_server = { ssl_auth = \"on\"; };", "private_key and cert_file are required");
	expect_error("metric = { out_channel = \"prometheus\"; };", "metric.out_channel: must be one of");
	expect_error("event = { desc_language = \"fr_FR\"; };", "event.desc_language: must be one of en_US, zh_CN");
	expect_error("kafka = { compression_codec = \"brotli\"; };", "kafka.compression_codec");
	expect_error("logs = 3;", "logs: must be a group");
	expect_error("probes = { name = \"x\"; };", "probes: must be a list");
	expect_error("probes = ( { param = \"\"; } );", "probes[0].name: required");
	expect_error("probes = ( { name = \"../x\"; } );", "probes[0].name");
	expect_error("probes = ( { name = \"a\"; }, { name = \"a\"; } );", "\"a\" is defined twice");
	expect_error("probes = ( { name = \"a\"; param = \"-x 'unterminated\"; } );",
		     "probes.a.param: unbalanced quote");
	expect_error("probes = ( { name = \"a\"; switch = \"on\"; command = \"/nonexistent/bin\"; } );",
		     "is not an executable file");
	expect_error("extend_probes = ( { name = \"e\"; } );", "extend_probes.e.command: required");
	expect_error("probes = ( { name = \"a\"; params = { x = ( 1, 2 ); }; } );", "probes.a.params.x");
	expect_error("global = { x = ", "syntax error");
}

GG_TEST(test_unknown_keys_warn)
{
	char err[512] = "";

	assert_int_equal(load("global = { colour = \"blue\"; };\nsurprise = 1;\n"
			      "probes = ( { name = \"p\"; switch = \"off\"; flavour = \"x\"; } );\n",
			      err, sizeof(err)),
			 0);
	assert_non_null(strstr(warnings, "unknown key 'global.colour'"));
	assert_non_null(strstr(warnings, "unknown section 'surprise'"));
	assert_non_null(strstr(warnings, "unknown key 'probes.p.flavour'"));
	gg_config__fini(&cfg);
}

GG_TEST(test_split_args)
{
	char **argv = NULL;

	assert_int_equal(gg_split_args("  -t 5  -w '/a b/c' -x\"y z\" ", &argv), 5);
	assert_string_equal(argv[0], "-t");
	assert_string_equal(argv[1], "5");
	assert_string_equal(argv[2], "-w");
	assert_string_equal(argv[3], "/a b/c");
	assert_string_equal(argv[4], "-xy z");
	assert_null(argv[5]);
	gg_free_args(argv);
	assert_int_equal(gg_split_args("", &argv), 0);
	assert_null(argv[0]);
	gg_free_args(argv);
	assert_int_equal(gg_split_args("a 'b", &argv), -EINVAL);
	/* no expansion of any kind: what a shell would interpret stays literal */
	assert_int_equal(gg_split_args("$(reboot) `id` ;|&", &argv), 3);
	assert_string_equal(argv[0], "$(reboot)");
	assert_string_equal(argv[2], ";|&");
	gg_free_args(argv);
}

/* gala-gopher's settings: rest_api_on as a boolean or a string, the "json" and "off" channels, the
 * machine id source, the identity section with its defaults. */
GG_TEST(test_gala_gopher_settings)
{
	char err[512] = "";

	assert_int_equal(load("", err, sizeof(err)), 0);
	assert_int_equal(cfg.global.rest_api_on, 1);
	assert_string_equal(cfg.global.machine_id, "machine-id");
	assert_string_equal(cfg.global.product_uuid_file, "/sys/class/dmi/id/product_uuid");
	assert_int_equal(cfg.identity.enabled, 1);
	assert_string_equal(cfg.identity.containerd_dir, "/run/containerd/io.containerd.runtime.v2.task");
	assert_string_equal(cfg.identity.crio_dir, "/run/containers/storage");
	assert_string_equal(cfg.identity.storage_dir, "/var/lib/containers/storage");
	assert_string_equal(cfg.identity.docker_dir, "/var/lib/docker");
	gg_config__fini(&cfg);
	assert_int_equal(load("global = { rest_api_on = false; machine_id = \"dmi-ip\"; product_uuid_file = \"u\"; };\n"
			      "metric = { out_channel = \"json\"; };\nevent = { out_channel = \"off\"; };\n"
			      "identity = { enabled = \"off\"; docker_dir = \"d\"; max_procs = 100; };\n",
			      err, sizeof(err)),
			 0);
	assert_string_equal(warnings, "");
	assert_int_equal(cfg.global.rest_api_on, 0);
	assert_string_equal(cfg.global.machine_id, "dmi-ip");
	assert_string_equal(cfg.global.product_uuid_file, "/etc/gg/u");
	assert_int_equal(cfg.metric.out, GG_OUT_JSON);
	assert_string_equal(gg_out_channel__str(cfg.metric.out), "json");
	assert_int_equal(cfg.event.out, GG_OUT_OFF);
	assert_int_equal(cfg.identity.enabled, 0);
	assert_string_equal(cfg.identity.docker_dir, "/etc/gg/d");
	assert_int_equal(cfg.identity.max_procs, 100);
	gg_config__fini(&cfg);
	assert_int_equal(load("global = { rest_api_on = \"true\"; };", err, sizeof(err)), 0);
	assert_int_equal(cfg.global.rest_api_on, 1);
	gg_config__fini(&cfg);
	expect_error("global = { rest_api_on = 3; };", "global.rest_api_on: must be a string");
	expect_error("global = { rest_api_on = \"maybe\"; };", "global.rest_api_on: must be \"on\" or \"off\"");
	expect_error("global = { machine_id = \"uuid\"; };", "global.machine_id: must be one of machine-id, dmi-ip");
	expect_error("identity = { max_procs = 1; };", "identity.max_procs: 1 is out of range");
}
