/* test_sup_rest.c - unit tests of the REST API's pure parts: body decoding, validation of every
 * field (all or nothing, messages naming the field and range), path confinement, cgroup path
 * layouts, snooper resolution on a fake /proc tree, atomic persistence. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"

#include "../../supervisor/rest/persist.h"
#include "../../supervisor/rest/validate.h"
#include "../../supervisor/rest/snoopers.h"
#include "test_tmpdir.h"

static char tmpdir[64];

static void write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			mkdir(buf, 0755);
			*p = '/';
		}
	}
	mkdir(buf, 0755);
}

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---- body decoding --------------------------------------------------------------------------------- */

static int decode(const char *body, const char *ctype, char **json, char *err)
{
	return gg_rest_body__decode(body, strlen(body), ctype, json, err, 256);
}

GG_TEST(test_body_forms)
{
	char err[256], *json = NULL;

	/* curl --data-urlencode json='{...}' */
	assert_int_equal(
		decode("json=%7B%22state%22%3A%20%22running%22%7D", "application/x-www-form-urlencoded", &json, err),
		0);
	assert_string_equal(json, "{\"state\": \"running\"}");
	free(json);
	/* '+' is a space in the encoded form */
	assert_int_equal(decode("json=%7B%22a%22:+1%7D", NULL, &json, err), 0);
	assert_string_equal(json, "{\"a\": 1}");
	free(json);
	/* curl -d json='{...}': raw, with '&', '+' and '%' kept as typed */
	assert_int_equal(decode("json={ \"cmd\": {\"probe\": [\"a&b+c%41\"] } }", "application/x-www-form-urlencoded",
				&json, err),
			 0);
	assert_string_equal(json, "{ \"cmd\": {\"probe\": [\"a&b+c%41\"] } }");
	free(json);
	/* multi-line raw JSON after json= */
	assert_int_equal(decode("json=\n{\n\"state\": \"stopped\"\n}", NULL, &json, err), 0);
	assert_string_equal(json, "\n{\n\"state\": \"stopped\"\n}");
	free(json);
	/* a raw JSON body, with or without the content type */
	assert_int_equal(decode("  {\"state\":\"running\"}", "application/json", &json, err), 0);
	assert_string_equal(json, "{\"state\":\"running\"}");
	free(json);
	assert_int_equal(decode("{\"x\":1}", NULL, &json, err), 0);
	free(json);
	/* json= as a later field */
	assert_int_equal(decode("a=1&json=%7B%7D", NULL, &json, err), 0);
	assert_string_equal(json, "{}");
	free(json);
}

GG_TEST(test_body_errors)
{
	char err[256], *json = NULL, big[8000];

	assert_int_equal(decode("", NULL, &json, err), 400);
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(decode("state=running", NULL, &json, err), 400);
	assert_non_null(strstr(err, "json="));
	assert_int_equal(decode("json=%7", NULL, &json, err), 400);
	assert_non_null(strstr(err, "URL encoding"));
	assert_int_equal(decode("json=%zz", NULL, &json, err), 400);
	assert_int_equal(decode("json=%00", NULL, &json, err), 400);
	assert_int_equal(gg_rest_body__decode("json={\0}", 8, NULL, &json, err, sizeof(err)), 400);
	/* 2048 characters of JSON pass, 2049 are refused with 413, in either encoding */
	memset(big, ' ', sizeof(big));
	memcpy(big, "json={", 6);
	big[5 + 2047] = '}';
	big[5 + 2048] = 0;
	assert_int_equal(decode(big, NULL, &json, err), 0);
	assert_int_equal(strlen(json), 2048);
	free(json);
	big[5 + 2048] = '}';
	big[5 + 2049] = 0;
	assert_int_equal(decode(big, NULL, &json, err), 413);
	assert_non_null(strstr(err, "2049 characters (at most 2048)"));
	{
		/* URL-encoded: 700 x "%20" is 2100 bytes of body but only 700 characters of JSON */
		char enc[3000];
		size_t n = (size_t)sprintf(enc, "json=%%7B");

		for (int i = 0; i < 700; i++)
			n += (size_t)sprintf(enc + n, "%%20");
		sprintf(enc + n, "%%7D");
		assert_int_equal(decode(enc, NULL, &json, err), 0);
		assert_int_equal(strlen(json), 702);
		free(json);
	}
}

/* ---- validation ------------------------------------------------------------------------------------ */

static struct gg_rest_check_ctx ctx;
static char out_base[128], elf_dir[128];

static int check(const char *probe, const char *json, char *err, cJSON **ret)
{
	const struct gg_probe_def *def = gg_probe_defs__find(probe);
	cJSON *out = NULL;
	char bin[256];
	int st;

	assert_non_null(def);
	/* the registered binary: the table's name under /opt/gg/probes */
	snprintf(bin, sizeof(bin), "/opt/gg/probes/%s", def->bin);
	ctx.registered_bin = bin;
	st = gg_rest_conf__check(def, &ctx, json, &out, err, 512);
	if (ret)
		*ret = out;
	else
		cJSON_Delete(out);
	if (st)
		assert_null(out);
	return st;
}

/* The body json sent to probe gets status and an error message holding msg_part (NULL: any); where
 * names the case in a failure (NULL: the body does). */
static void expect_at(const char *where, const char *probe, const char *json, int status, const char *msg_part)
{
	char err[512] = "";
	int st = check(probe, json, err, NULL);

	if (st != status || (msg_part && !strstr(err, msg_part)))
		fail_msg("%s%s%s %s: got %d \"%s\", want %d \"%s\"", where ? where : "", where ? ": " : "", probe, json,
			 st, err, status, msg_part ? msg_part : "");
}

static void expect(const char *probe, const char *json, int status, const char *msg_part)
{
	expect_at(NULL, probe, json, status, msg_part);
}

GG_TEST(test_table)
{
	static const char *const names[][2] = {
		{"baseinfo", "system_infos"},
		{"tcp", "tcpprobe"},
		{"socket", "endpoint"},
		{"io", "ioprobe"},
		{"proc", "taskprobe"},
		{"flamegraph", "stackprobe"},
		{"l7", "l7probe"},
		{"tprofiling", "tprofiling"},
		{"sli", "sliprobe"},
		{"jvm", "jvmprobe"},
		{"hw", "hwprobe"},
		{"virt", "virtualized_infos"},
		{"autotrace", "autotrace"},
		{"tprofiling", "tprofiling"},
		{"kdiag", "kdiag"},
	};
	const char *more[] = {"ksli", "postgre_sli", "opengauss_sli", "nginx", "haproxy", "lvs", "kafka", "dnsmasq"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct gg_probe_def *d = gg_probe_defs__find(names[i][0]);

		assert_non_null(d);
		assert_string_equal(d->bin, names[i][1]);
		assert_ptr_equal(gg_probe_defs__find_bin(names[i][1]), d);
	}
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		assert_non_null(gg_probe_defs__find(more[i]));
	assert_int_equal(gg_probe_defs__count(), 22); /* the probes above, the more[] list and the rest of the table */
	assert_null(gg_probe_defs__find("nope"));
	/* per-probe variants: baseinfo's period follows system_infos (-t 1..600, default 5) */
	assert_int_equal(gg_param_spec__find(gg_probe_defs__find("baseinfo"), "report_period")->min, 1);
	assert_int_equal(gg_param_spec__find(gg_probe_defs__find("tcp"), "report_period")->min, 5);
	assert_int_equal(gg_param_spec__find(gg_probe_defs__find("tcp"), "report_period")->def, 60);
	assert_null(gg_param_spec__find(gg_probe_defs__find("baseinfo"), "svg_dir"));
}

GG_TEST(test_valid_seed_examples)
{
	char err[512];
	cJSON *out = NULL;
	char *txt;

	/* seed 000: the flamegraph examples (cmd.bin names the stock install path) */
	assert_int_equal(
		check("flamegraph",
		      "{\"cmd\":{\"bin\":\"/opt/gala-gopher/extend_probes/stackprobe\",\"check_cmd\":\"\","
		      "\"probe\":[\"oncpu\",\"offcpu\"]},\"snoopers\":{\"proc_id\":[101,102],\"proc_name\":["
		      "{\"comm\":\"app1\",\"cmdline\":\"\",\"debugging_dir\":\"\"},{\"comm\":\"app2\",\"cmdline\":\"\","
		      "\"debugging_dir\":\"\"}],\"pod_id\":[\"pod1\",\"pod2\"],\"container_id\":[\"container1\","
		      "\"container2\"]}}",
		      err, &out),
		0);
	txt = cJSON_PrintUnformatted(out);
	assert_non_null(strstr(txt, "\"bin\":\"/opt/gg/probes/stackprobe\""));
	assert_non_null(strstr(txt, "\"probe\":[\"oncpu\",\"offcpu\"]"));
	free(txt);
	cJSON_Delete(out);
	/* sample_period is io/tcp only (seed's own table): gala-gopher ignores it elsewhere, so do we, and say so */
	ctx.warnings = cJSON_CreateArray();
	assert_int_equal(check("flamegraph",
			       "{\n\"params\": {\n\"report_period\": 180,\n\"sample_period\": 180,\n\"metrics_type\": "
			       "[\n\"raw\",\n\"telemetry\"\n]\n}\n}",
			       err, &out),
			 0);
	assert_int_equal(cJSON_GetArraySize(ctx.warnings), 1);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(ctx.warnings, 0)),
			    "params.sample_period: not a parameter of probe flamegraph (gala-gopher applies it to io, "
			    "tcp); accepted and ignored");
	txt = cJSON_PrintUnformatted(out);
	assert_non_null(strstr(txt, "\"sample_period\":180")); /* stored: GET shows what was sent */
	free(txt);
	cJSON_Delete(out);
	cJSON_Delete(ctx.warnings);
	ctx.warnings = NULL;
	/* still checked against gala-gopher's range, and names gala-gopher does not know are refused */
	expect("flamegraph", "{\"params\":{\"sample_period\":99}}", 400, "params.sample_period: 99 is out of range");
	expect("flamegraph", "{\"params\":{\"sample_perod\":100}}", 400,
	       "params.sample_perod: not a parameter of probe flamegraph (allowed: ");
	expect("socket", "{\"params\":{\"latency_thr\":5}}", 400, "params.latency_thr: 5 is out of range");
	expect("socket", "{\"params\":{\"latency_thr\":50, \"kafka_port\": 9093, \"l7_protocol\": [\"dns\"]}}", 0,
	       NULL);
	expect("socket", "{\"params\":{\"l7_protocol\": [\"crpc\"]}}", 400, "params.l7_protocol[0]: must be one of");
	expect("socket", "{\"params\":{\"ringbuf_map_size\": 2}}", 400, "not a parameter of probe socket");
	assert_int_equal(check("tcp",
			       "{\n\"params\": {\n\"report_period\": 180,\n\"sample_period\": 180,\n\"metrics_type\": "
			       "[\n\"raw\",\n\"telemetry\"\n]\n}\n}",
			       err, NULL),
			 0);
	expect("tcp", "{\"params\": {\"sample_period\": 99}}", 400,
	       "params.sample_period: 99 is out of range; must be an integer in [100, 10000] ms (default 5000)");
	expect("flamegraph", "{\n\"state\": \"running\" // optional: running, stopped\n}", 0, NULL);
	expect("flamegraph",
	       "{ \"cmd\": { \"check_cmd\": \"\", \"probe\": [\"oncpu\", \"offcpu\", \"mem\"] }, \"snoopers\": { "
	       "\"proc_name\": "
	       "[{ \"comm\": \"cadvisor\", \"cmdline\": \"\", \"debugging_dir\": \"\" }, { \"comm\": \"java\", "
	       "\"cmdline\": \"\", "
	       "\"debugging_dir\": \"\" }] }, \"params\": { \"perf_sample_period\": 100, \"svg_period\": 300, "
	       "\"svg_dir\": "
	       "\"/var/log/gala-gopher/stacktrace\", \"flame_dir\": \"/var/log/gala-gopher/flamegraph\", "
	       "\"pyroscope_server\": "
	       "\"localhost:4040\", \"multi_instance\": 1, \"native_stack\": 0 }, \"state\": \"running\"}",
	       403, "params.svg_dir: \"/var/log/gala-gopher/stacktrace\" is outside"); /* base is a temp dir here */
	expect("tprofiling",
	       "{\"cmd\": {\"probe\": [\"oncpu\", \"syscall_file\", \"syscall_net\", \"syscall_sched\", "
	       "\"syscall_lock\"]}, "
	       "\"snoopers\": {\"proc_name\": [{\"comm\": \"java\"}]}, \"state\": \"running\"}",
	       0, NULL);
	expect("tprofiling", "{\"state\": \"stopped\"}", 0, NULL);
	/* the sli example in the seed is not valid JSON */
	expect("sli",
	       "{\"params\":{\"report_period\":15}, \"snoopers\":{\"container_id\":[{\"container_id\": "
	       "\"abcd12345678\","
	       "\"abcd87654321\"}]}, \"state\":\"running\"}",
	       400, "invalid JSON");
	/* its intended form is accepted, in either list style */
	assert_int_equal(check("sli",
			       "{\"params\":{\"report_period\":15}, \"snoopers\":{\"container_id\":[{\"container_id\": "
			       "\"abcd12345678\"}, \"abcd87654321\"]}, \"state\":\"running\"}",
			       err, &out),
			 0);
	txt = cJSON_PrintUnformatted(out);
	assert_string_equal(txt, "{\"snoopers\":{\"container_id\":[\"abcd12345678\",\"abcd87654321\"]},\"params\":"
				 "{\"report_period\":15},\"state\":\"running\"}");
	free(txt);
	cJSON_Delete(out);
}

/* One case a line of data/rest_check_cases.txt: "probe status body", then " => " and a part of the error
 * message when one is wanted; a failure names the line. */
#define REST_CASES   "tests/unit/data/rest_check_cases.txt"
#define REST_CASES_N 76 /* the file's cases: a file cut short fails */

GG_TEST(test_errors_name_field_and_range)
{
	FILE *f = fopen(REST_CASES, "r");
	char line[1024], where[64], probe[32];
	int lineno = 0, ncases = 0, status, off;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *body, *msg;

		lineno++;
		assert_non_null(strchr(line, '\n')); /* no line longer than the buffer */
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		snprintf(where, sizeof(where), REST_CASES ":%d", lineno);
		if (sscanf(line, "%31s %d %n", probe, &status, &off) != 2)
			fail_msg("%s: not \"probe status body\"", where);
		body = line + off;
		msg = strstr(body, " => ");
		if (msg) {
			*msg = 0;
			msg += 4;
		}
		expect_at(where, probe, body, status, msg);
		ncases++;
	}
	fclose(f);
	assert_int_equal(ncases, REST_CASES_N);
	/* the configured check_cmd is accepted too */
	ctx.check_cmd = "lsmod | grep ip_vs | wc -l";
	expect("tcp", "{\"cmd\":{\"check_cmd\":\"lsmod | grep ip_vs | wc -l\"}}", 0, NULL);
	ctx.check_cmd = "";
	/* messages with user text stay printable ASCII */
	{
		char err[512];

		assert_int_equal(check("tcp", "{\"cmd\":{\"bin\":\"\\u0001\\n\xc3\xa9\"}}", err, NULL), 403);
		for (const char *p = err; *p; p++)
			assert_true(*p >= 0x20 && *p < 0x7f);
	}
}

GG_TEST(test_paths)
{
	char p[PATH_MAX + 64], json[PATH_MAX + 200], outside[PATH_MAX + 64];

	/* written directories: under out_base, existing or not, symlinks resolved */
	snprintf(json, sizeof(json), "{\"params\":{\"svg_dir\":\"%s/svg/new\",\"flame_dir\":\"%s\"}}", out_base,
		 out_base);
	expect("flamegraph", json, 0, NULL);
	expect("flamegraph", "{\"params\":{\"svg_dir\":\"relative/dir\"}}", 400,
	       "params.svg_dir: must be an absolute path");
	snprintf(json, sizeof(json), "{\"params\":{\"svg_dir\":\"%s/../escape\"}}", out_base);
	expect("flamegraph", json, 400, "without '.' or '..'");
	expect("flamegraph", "{\"params\":{\"svg_dir\":\"/etc/cron.d\"}}", 403, "is outside");
	/* a symlink inside the base pointing out of it */
	snprintf(p, sizeof(p), "%s/link", out_base);
	snprintf(outside, sizeof(outside), "%s/outside", tmpdir);
	mkdirs(outside);
	assert_int_equal(symlink(outside, p), 0);
	snprintf(json, sizeof(json), "{\"params\":{\"flame_dir\":\"%s/link/x\"}}", out_base);
	expect("flamegraph", json, 403, "(symbolic links resolved)");
	/* a file where a directory is wanted */
	snprintf(p, sizeof(p), "%s/afile", out_base);
	write_file(p, "x", 1);
	snprintf(json, sizeof(json), "{\"params\":{\"svg_dir\":\"%s\"}}", p);
	expect("flamegraph", json, 400, "is not a directory");
	/* elf_path: an existing regular file under an ELF base */
	snprintf(p, sizeof(p), "%s/nginx", elf_dir);
	write_file(p,
		   "\x7f"
		   "ELF",
		   4);
	snprintf(json, sizeof(json), "{\"params\":{\"elf_path\":\"%s\"}}", p);
	expect("nginx", json, 0, NULL);
	snprintf(json, sizeof(json), "{\"params\":{\"elf_path\":\"%s/missing\"}}", elf_dir);
	expect("nginx", json, 400, "does not exist");
	snprintf(json, sizeof(json), "{\"params\":{\"elf_path\":\"%s\"}}", elf_dir);
	expect("nginx", json, 400, "naming a regular file");
	snprintf(json, sizeof(json), "{\"params\":{\"elf_path\":\"%s/afile\"}}", out_base);
	expect("nginx", json, 403, "is outside");
	expect("nginx", "{\"params\":{\"elf_path\":\"\"}}", 0, NULL);
	/* gg_path__confine directly */
	assert_int_equal(gg_path__confine("/", "/", 0, 0), 0);
	assert_int_equal(gg_path__confine("/a/./b", "/", 0, 0), -EINVAL);
	assert_int_equal(gg_path__confine("/nonexistent-gg/x", "/nonexistent-gg", 0, 0), 0);
	assert_int_equal(gg_path__confine("/nonexistent-gg2/x", "/nonexistent-gg", 0, 0), -EACCES);
	assert_int_equal(gg_path__confine("/usr/bin", "/usr/bi", 0, 0), -EACCES); /* a prefix is not a parent */
}

/* ---- snooper resolution on a fake /proc ----------------------------------------------------------------- */

/* The snoopers of a REST body's "snoopers" object, given as JSON text (NULL: none). */
static void snoopers_of(const char *json, struct gg_snoopers *ret)
{
	cJSON *j = json ? cJSON_Parse(json) : NULL;

	assert_true(!json || j);
	gg_snoopers__from_json(j, ret);
	cJSON_Delete(j);
}

static void fake_proc(const char *root, int pid, const char *comm, const char *cmdline, size_t cmdlen, const char *cg)
{
	char d[PATH_MAX + 32], f[PATH_MAX + 64];

	snprintf(d, sizeof(d), "%s/%d", root, pid);
	mkdirs(d);
	snprintf(f, sizeof(f), "%s/comm", d);
	write_file(f, comm, strlen(comm));
	snprintf(f, sizeof(f), "%s/cmdline", d);
	write_file(f, cmdline, cmdlen);
	snprintf(f, sizeof(f), "%s/cgroup", d);
	write_file(f, cg, strlen(cg));
}

static uint64_t ino_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_ino;
}

static void bin_check(const struct gg_rest_check_ctx *c, const char *path, int want)
{
	char json[2 * PATH_MAX], err[512] = "";
	cJSON *out = NULL;
	int st;

	snprintf(json, sizeof(json), "{\"cmd\":{\"bin\":\"%s\"}}", path);
	st = gg_rest_conf__check(gg_probe_defs__find("flamegraph"), c, json, &out, err, sizeof(err));
	cJSON_Delete(out);
	if (st != want)
		fail_msg("cmd.bin %s: got %d \"%s\", want %d", path, st, err, want);
}

/* cmd.bin: another spelling of the registered binary's path is accepted when both resolve, through
 * root-owned paths, to one file; anything else is refused. */
GG_TEST(test_cmd_bin_canonical)
{
	char dir[256], reg[PATH_MAX], other[PATH_MAX], p[PATH_MAX], json[PATH_MAX];
	struct gg_rest_check_ctx c = ctx;
	int fd;

	snprintf(dir, sizeof(dir), "%s/binroot", tmpdir);
	mkdirs(dir);
	snprintf(p, sizeof(p), "%s/probes", dir);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/config", dir);
	mkdirs(p);
	snprintf(reg, sizeof(reg), "%s/probes/stackprobe", dir);
	snprintf(other, sizeof(other), "%s/probes/other", dir);
	for (int i = 0; i < 2; i++) {
		fd = open(i ? other : reg, O_CREAT | O_WRONLY | O_TRUNC, 0755);
		assert_true(fd >= 0);
		close(fd);
	}
	c.registered_bin = reg;
	/* config/.. and doubled slashes: the same file */
	snprintf(p, sizeof(p), "%s/config/../probes//stackprobe", dir);
	bin_check(&c, p, 0);
	/* a symbolic link set up by root to the registered binary */
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_int_equal(symlink(reg, p), 0);
	bin_check(&c, p, 0);
	/* a link to another binary, and the other binary itself */
	snprintf(p, sizeof(p), "%s/link2", dir);
	assert_int_equal(symlink(other, p), 0);
	bin_check(&c, p, 403);
	bin_check(&c, other, 403);
	/* the registered file through a directory others may write to */
	snprintf(p, sizeof(p), "%s/open", dir);
	mkdirs(p);
	assert_int_equal(chmod(p, 0777), 0);
	snprintf(json, sizeof(json), "%s/open/link", dir);
	assert_int_equal(symlink(reg, json), 0);
	snprintf(p, sizeof(p), "%s/open/link", dir);
	bin_check(&c, p, 403);
	/* a link owned by another user */
	snprintf(p, sizeof(p), "%s/link3", dir);
	assert_int_equal(symlink(reg, p), 0);
	if (geteuid() == 0) {
		assert_int_equal(lchown(p, 65534, 65534), 0);
		bin_check(&c, p, 403);
	}
	/* not existing, relative */
	snprintf(p, sizeof(p), "%s/probes/nope", dir);
	bin_check(&c, p, 403);
	bin_check(&c, "probes/stackprobe", 403);
	/* the registered binary writable by others: no spelling but the exact one matches */
	assert_int_equal(chmod(reg, 0777), 0);
	snprintf(p, sizeof(p), "%s/config/../probes/stackprobe", dir);
	bin_check(&c, p, 403);
	bin_check(&c, reg, 0);
}

/* gala-gopher's parameter table (seed 000) and the probes' contracts agree on each name's type, and the
 * table has the seed's 26 names once each. */
GG_TEST(test_gala_params_table)
{
	assert_int_equal(gg_gala_params__count(), 26);
	for (unsigned int i = 0; i < gg_gala_params__count(); i++) {
		const struct gg_gala_param *g = gg_gala_params__at(i);

		assert_ptr_equal(gg_gala_params__find(g->spec.name), g);
		assert_non_null(g->scope);
	}
	assert_null(gg_gala_params__find("ringbuf_map_size"));
	for (unsigned int i = 0; i < gg_probe_defs__count(); i++) {
		const struct gg_contract *c = gg_probe_defs__at(i)->contract;

		for (unsigned int j = 0; j < c->nparams; j++) {
			const struct gg_gala_param *g = gg_gala_params__find(c->params[j].name);

			if (g && g->spec.type != c->params[j].type)
				fail_msg("%s: params.%s is type %d in its contract, %d in gala-gopher's table",
					 c->rest_name, c->params[j].name, c->params[j].type, g->spec.type);
		}
	}
}

/* The scope is a filter (not everything) of exactly these pids and cgroup ids, in this order. */
static void expect_scope(const struct gg_scope *s, uint32_t ntgid, const uint32_t *tgid, uint32_t ncgrp,
			 const uint64_t *cgrp)
{
	assert_false(s->all);
	assert_int_equal(s->ntgid, ntgid);
	for (uint32_t i = 0; i < ntgid; i++)
		assert_int_equal(s->tgid[i], tgid[i]);
	assert_int_equal(s->ncgrp, ncgrp);
	for (uint32_t i = 0; i < ncgrp; i++)
		assert_true(s->cgrp[i] == cgrp[i]);
}

static int fake_cname_calls;

static const char *fake_cname(void *calls, uint32_t pid)
{
	(*(int *)calls)++;
	return pid == 200 ? "my-web-1" : pid == 300 ? "api" : "";
}

GG_TEST(test_resolve)
{
	char proc[PATH_MAX], cg[PATH_MAX], p[PATH_MAX + 200];
	const char *docker = "/system.slice/docker-" ID64 ".scope";
	const char *pod = "/kubepods.slice/kubepods-besteffort.slice/"
			  "kubepods-besteffort-pod1a2b3c4d_0000_1111_2222_333344445555.slice/"
			  "cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope";
	struct gg_snoopers a, b, c, d;
	const struct gg_snoopers *sets[4] = {&a, &b, &c, &d};
	static struct gg_scope sc[4];
	struct gg_scan_opts o;
	struct gg_scan_stats st;
	cJSON *j;
	uint64_t docker_ino, pod_ino;

	snprintf(proc, sizeof(proc), "%s/proc", tmpdir);
	snprintf(cg, sizeof(cg), "%s/cgroup", tmpdir);
	snprintf(p, sizeof(p), "%s%s", cg, docker);
	mkdirs(p);
	docker_ino = ino_of(p);
	snprintf(p, sizeof(p), "%s%s", cg, pod);
	mkdirs(p);
	pod_ino = ino_of(p);
	fake_proc(proc, 100, "nginx\n", "nginx\0-g\0daemon off;\0", 22, "0::/system.slice/nginx.service\n");
	fake_proc(proc, 101, "nginx\n", "nginx: worker\0", 14, "0::/system.slice/nginx.service\n");
	fake_proc(proc, 200, "java\n", "java\0-jar\0app.jar\0", 18, "0::/system.slice/docker-" ID64 ".scope\n");
	fake_proc(proc, 300, "python3\n", "python3\0srv.py\0", 15,
		  "12:pids:/x\n0::/kubepods.slice/kubepods-besteffort.slice/"
		  "kubepods-besteffort-pod1a2b3c4d_0000_1111_2222_333344445555.slice/"
		  "cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope\n");
	fake_proc(proc, 400, "bash\n", "bash\0", 5, "0::/user.slice\n");
	snprintf(p, sizeof(p), "%s/self", proc);
	mkdirs(p); /* not a pid: skipped */

	snoopers_of("{\"proc_id\":[400,999],\"proc_name\":[{\"comm\":\"nginx\",\"cmdline\":\"daemon off\"}]}", &a);
	snoopers_of("{\"container_id\":[\"0123456789AB\"]}", &b);
	snoopers_of("{\"pod_id\":[\"pod1a2b3c4d_0000_1111_2222_333344445555\"],\"container_id\":[\"0123456789a\"]}",
		    &c);
	gg_snoopers__from_json(NULL, &d);
	for (int i = 0; i < 4; i++)
		gg_scope__init(&sc[i]);
	o.proc_root = proc;
	o.cgroup_root = cg;
	assert_int_equal(gg_snoopers__resolve(sets, 4, sc, &o, &st), 0);
	assert_int_equal(st.procs, 5);
	/* a: pid 400 (999 does not exist), nginx with "daemon off" in its command line (not the worker) */
	expect_scope(&sc[0], 2, (const uint32_t[]){100, 400}, 0, NULL);
	/* b: docker container by a 12-character prefix (case folded): pid and its cgroup */
	expect_scope(&sc[1], 1, (const uint32_t[]){200}, 1, &docker_ino);
	/* c: the pod (the 11-character container prefix is too short to match) */
	expect_scope(&sc[2], 1, (const uint32_t[]){300}, 1, &pod_ino);
	/* d: no targets: everything */
	assert_true(sc[3].all);
	assert_int_equal(sc[3].ntgid, 0);
	j = gg_scope__to_json(&sc[1]);
	{
		char *txt = cJSON_PrintUnformatted(j), want[200];

		snprintf(want, sizeof(want), "{\"all\":false,\"pids\":[200],\"cgroup_ids\":[%llu]}",
			 (unsigned long long)docker_ino);
		assert_string_equal(txt, want);
		free(txt);
	}
	cJSON_Delete(j);
	/* the same scan again is equal; a process gone changes it */
	{
		static struct gg_scope again[4];

		for (int i = 0; i < 4; i++)
			gg_scope__init(&again[i]);
		assert_int_equal(gg_snoopers__resolve(sets, 4, again, &o, NULL), 0);
		for (int i = 0; i < 4; i++)
			assert_true(gg_scope__equal(&sc[i], &again[i]));
		snprintf(p, sizeof(p), "%s/100", proc); /* test-owned temp dir */
		assert_int_equal(rm_tree(p), 0);
		assert_int_equal(gg_snoopers__resolve(sets, 4, again, &o, NULL), 0);
		assert_false(gg_scope__equal(&sc[0], &again[0]));
		assert_int_equal(again[0].ntgid, 1);
	}
	/* container_name: a substring of the resolver's name of the process's container; processes outside
	 * containers are never asked about; no resolver, no match */
	{
		struct gg_snoopers e;
		const struct gg_snoopers *one = &e;
		static struct gg_scope se;
		struct gg_scan_opts eo = o;

		snoopers_of("{\"container_name\":[\"web\"]}", &e);
		assert_false(gg_snoopers__empty(&e));
		eo.container_name = fake_cname;
		eo.ctx = &fake_cname_calls;
		fake_cname_calls = 0;
		gg_scope__init(&se);
		assert_int_equal(gg_snoopers__resolve(&one, 1, &se, &eo, NULL), 0);
		expect_scope(&se, 1, (const uint32_t[]){200}, 1, &docker_ino);
		assert_int_equal(fake_cname_calls, 2); /* 200 and 300, the two in containers */
		eo.container_name = NULL;
		gg_scope__init(&se);
		assert_int_equal(gg_snoopers__resolve(&one, 1, &se, &eo, NULL), 0);
		expect_scope(&se, 0, NULL, 0, NULL);
	}
	/* blacklist: left out of the scope; a cgroup holding a blacklisted process is not watched whole;
	 * with no snoopers, every other process by pid */
	{
		struct gg_snoopers w1, b1, w2, b2, w3, b3;
		const struct gg_snoopers *ws[3] = {&w1, &w2, &w3}, *bs[3] = {&b1, &b2, &b3};
		static struct gg_scope sb[3];
		struct gg_scan_opts bo = o;

		snoopers_of("{\"proc_name\":[{\"comm\":\"^ngi\"}],\"proc_id\":[400]}", &w1);
		snoopers_of("{\"proc_id\":[101,400]}", &b1);
		snoopers_of(
			"{\"container_id\":[\"0123456789ab\"],\"pod_id\":[\"1a2b3c4d-0000-1111-2222-333344445555\"]}",
			&w2);
		snoopers_of("{\"proc_name\":[{\"comm\":\"^java$\"}]}", &b2);
		gg_snoopers__from_json(NULL, &w3);
		snoopers_of("{\"proc_name\":[{\"comm\":\"^(nginx|bash)$\"}]}", &b3);
		bo.exclude = bs;
		for (int i = 0; i < 3; i++)
			gg_scope__init(&sb[i]);
		assert_int_equal(gg_snoopers__resolve(ws, 3, sb, &bo, NULL), 0);
		/* nginx (pid 101: pid 100 was removed above) and 400, both blacklisted */
		expect_scope(&sb[0], 0, NULL, 0, NULL);
		/* java left out of its container: neither its pid nor the docker cgroup; the pod stays */
		expect_scope(&sb[1], 1, (const uint32_t[]){300}, 1, &pod_ino);
		/* everything but nginx and bash: java and python3, by pid */
		expect_scope(&sb[2], 2, (const uint32_t[]){200, 300}, 0, NULL);
	}
	/* a missing /proc fails and leaves the scopes as they were */
	o.proc_root = "/nonexistent-gg-proc";
	assert_int_equal(gg_snoopers__resolve(sets, 4, sc, &o, NULL), -ENOENT);
	assert_int_equal(sc[0].ntgid, 2);
}

/* proc_name.comm: a POSIX ERE anywhere in the comm (gala-gopher's regex_pattern_matched), bounded. */
GG_TEST(test_comm_patterns)
{
	static const char *const bad[] = {
		"",
		"0123456789012345678901234567890123456789012345678901234567890123x", /* 65 characters */
		"(a)\\1",							     /* back-reference */
		"(a+)\\1b",
		"a{17}", /* interval count */
		"a{1,17}",
		"a{2}b{2}c{2}", /* three intervals */
		"(",
		"[z-a]",
		"a**{",
		"a{,17}",		/* "{,m}" is an interval */
		"((a{,16}){,16}){,16}", /* nested: 4096 copies once compiled, the fuzzer's way to 2 GB */
		"c++",			/* stacked quantifiers: each '+' copies what it follows */
		"json=c++++++++++++++++++++++++++++++++++++++a", /* the fuzzer's way to 3 GB */
		"a*{2}",
		"a{2}+",
		"a+b+c+d+e+f+g+h+i+j+k+l+m+", /* 2^13 copies */
		"(a{16}b+)+{,16}",
	};
	static const char *const good[] = {"a{16}", "[{]x{2}", "\\{3", "[[:digit:]]{1,16}", "^nginx$"};
	/* Patterns that make a backtracking matcher take exponential time on "aaaa...": glibc's matcher
	 * does not backtrack without back-references, and a comm has at most 15 characters. */
	static const char *const slow[] = {"(a|a)*(a|a)*(a|a)*b", "(a*)*b",	"((a+)+)+b",
					   "(a|aa)+$x",		  "(.*a){16}b", "(a?){16}a{16}"};
	char why[160];
	struct timespec t0, t1;
	double ms;

	assert_true(gg_comm__match("nginx", "nginx"));
	assert_true(gg_comm__match("gin", "nginx")); /* unanchored */
	assert_false(gg_comm__match("^gin", "nginx"));
	assert_true(gg_comm__match("^(java|nginx)$", "nginx"));
	assert_false(gg_comm__match("^(java|nginx)$", "nginx2"));
	assert_true(gg_comm__match("py.*[[:digit:]]$", "python3"));
	assert_false(gg_comm__match("NGINX", "nginx")); /* case matters, as in gala-gopher */
	assert_false(gg_comm__match("(", "("));		/* does not compile: matches nothing */
	assert_false(gg_comm__match("(a)\\1", "aa"));	/* refused by the bounds: matches nothing */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gg_comm_pattern__check(bad[i], why, sizeof(why)) != -EINVAL)
			fail_msg("pattern %s accepted", bad[i]);
	}
	assert_int_equal(gg_comm_pattern__check("(a)\\1", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "back-references (\\1) are not allowed");
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (gg_comm_pattern__check(good[i], why, sizeof(why)))
			fail_msg("pattern %s refused: %s", good[i], why);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < sizeof(slow) / sizeof(slow[0]); i++) {
		if (gg_comm_pattern__check(slow[i], why, sizeof(why)))
			fail_msg("pattern %s refused: %s", slow[i], why);
		for (int k = 0; k < 2000; k++)
			assert_false(gg_comm__match(slow[i], "aaaaaaaaaaaaaaa"));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* 12,000 matches of the worst patterns on the longest comm: well under a scan period (500 ms) */
	if (ms > 400)
		fail_msg("pathological patterns took %.1f ms", ms);
	print_message("12000 pathological comm matches: %.1f ms\n", ms);
	/* more patterns than the cache holds: still right, recompiled as needed */
	for (int k = 0; k < 300; k++) {
		char pat[16];

		snprintf(pat, sizeof(pat), "^x%d$", k);
		assert_false(gg_comm__match(pat, "nginx"));
	}
	assert_true(gg_comm__match("gin", "nginx"));
	gg_comm__cache_clear();
	assert_true(gg_comm__match("gin", "nginx"));
	gg_comm__cache_clear();
}

/* The unified hierarchy is found wherever it is mounted (/sys/fs/cgroup, or .../unified on hybrid). */
GG_TEST(test_cgroup2_mount)
{
	char mp[PATH_MAX], f[PATH_MAX + 32];

	assert_int_equal(gg_cgroup2_mount(mp, sizeof(mp)), 0);
	snprintf(f, sizeof(f), "%s/cgroup.procs", mp);
	assert_int_equal(access(f, R_OK), 0);
	assert_int_equal(gg_cgroup2_mount(mp, 4), -ENOENT); /* does not fit */
}

/* The real /proc: this test process is found by pid and by its comm. */
GG_TEST(test_resolve_real_proc)
{
	struct gg_snoopers s;
	const struct gg_snoopers *set = &s;
	static struct gg_scope sc;
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "r");
	cJSON *j = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(j, "proc_name"), *n = cJSON_CreateObject();

	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	cJSON_AddStringToObject(n, "comm", comm);
	cJSON_AddItemToArray(names, n);
	gg_snoopers__from_json(j, &s);
	cJSON_Delete(j);
	gg_scope__init(&sc);
	assert_int_equal(gg_snoopers__resolve(&set, 1, &sc, NULL, NULL), 0);
	assert_false(sc.all);
	{
		int found = 0;

		for (unsigned int i = 0; i < sc.ntgid; i++)
			found |= sc.tgid[i] == (uint32_t)getpid();
		assert_true(found);
	}
}

/* ---- persistence -------------------------------------------------------------------------------------- */

GG_TEST(test_persist)
{
	char dir[PATH_MAX + 32], tmp[PATH_MAX + 64], *txt = NULL;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/state/rest", tmpdir);
	assert_int_equal(gg_persist__load(dir, "tcp", 1024, &txt), -ENOENT);
	assert_int_equal(gg_persist__save(dir, "tcp", "{\"state\":\"running\"}"), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(gg_persist__load(dir, "tcp", 1024, &txt), 0);
	assert_string_equal(txt, "{\"state\":\"running\"}");
	free(txt);
	assert_int_equal(gg_persist__save(dir, "tcp", "{\"state\":\"stopped\"}"), 0);
	/* an interrupted save (temp file left behind) does not disturb the saved file, and is cleaned */
	snprintf(tmp, sizeof(tmp), "%s/.tcp.json.tmp", dir);
	write_file(tmp, "{\"sta", 5);
	assert_int_equal(gg_persist__load(dir, "tcp", 1024, &txt), 0);
	assert_string_equal(txt, "{\"state\":\"stopped\"}");
	free(txt);
	assert_int_not_equal(access(tmp, F_OK), 0);
	assert_int_equal(gg_persist__load(dir, "tcp", 5, &txt), -EFBIG);
	assert_int_equal(gg_persist__save(dir, "../evil", "{}"), -EINVAL);
	assert_int_equal(gg_persist__save(dir, "", "{}"), -EINVAL);
	assert_int_equal(gg_persist__remove(dir, "tcp"), 0);
	assert_int_equal(gg_persist__remove(dir, "tcp"), 0);
	assert_int_equal(gg_persist__load(dir, "tcp", 1024, &txt), -ENOENT);
	assert_int_equal(gg_persist__save("/proc/gg-no", "tcp", "{}") < 0, 1);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gg-rest-unit-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(out_base, sizeof(out_base), "%s/out", tmpdir);
	snprintf(elf_dir, sizeof(elf_dir), "%s/elf", tmpdir);
	mkdirs(out_base);
	mkdirs(elf_dir);
	ctx = (struct gg_rest_check_ctx){.registered_bin = "/opt/gg/probes/stackprobe",
					 .check_cmd = "",
					 .out_base = out_base,
					 .elf_bases = elf_dir};
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return rm_tree(tmpdir) == 0 ? 0 : -1; /* our own mkdtemp directory */
}

GG_TEST_GROUP(setup, teardown);
