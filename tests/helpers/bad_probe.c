/* bad_probe.c - a native probe that misbehaves on purpose, for the supervisor's integration tests. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "tool_usage.h"

#define PROG "bad_probe"

/* Same table as tests/schema/test_bad.meta. */
static const char *const test_bad_fields[] = {"k", "l", "g", "c"};
static const unsigned char test_bad_kinds[] = {PROBE_F_KEY, PROBE_F_LABEL, PROBE_F_GAUGE, PROBE_F_COUNTER};
static const struct probe_table TBL_test_bad = {"test_bad", 4, test_bad_fields, test_bad_kinds};

/* One of each rejection reason the validator has for a plain table, in a fixed order. */
static const char *const bad_lines[] = {
	"|test_bad|k1|l|1|",	    /* field_count */
	"|no_such_table|k1|l|1|2|", /* unknown_table */
	"|test_bad|k1|l|abc|2|",    /* not_numeric */
	"|test_bad|k1|l|1|-5|",	    /* negative_counter */
	"|test_bad||l|1|2|",	    /* empty_key */
	"test_bad|k1|l|1|2",	    /* malformed (framing) */
};

enum mode { MODE_VALID, MODE_MALFORMED, MODE_EXIT, MODE_CRASH, MODE_FLOOD, MODE_IDLE, MODE_LEAK, MODE_SPIN, MODE_FORK };
static const char *const mode_names[] = {"valid", "malformed", "exit", "crash", "flood",
					 "idle",  "leak",      "spin", "fork"};

static void usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " [-m valid|malformed|exit|crash|flood|idle] [-n N] [-k K] [-l LEVEL]\n"
		   "A test probe for table test_bad (tests/schema/test_bad.meta).\n"
		   "  -m valid      one valid record per second (default): |test_bad|k1|lbl|1.5|7|\n"
		   "  -m malformed  per second: one valid record and one each of: wrong field count, unknown\n"
		   "                table, non-numeric gauge, negative counter, empty key, broken framing\n"
		   "  -m exit       exit with status 3 at once\n"
		   "  -m crash      raise SIGSEGV after 1 s\n"
		   "  -m flood      emit N (-n, default 100000) valid records as fast as possible, then idle\n"
		   "                (records |test_bad|f<i mod K>|lbl|<i>|<i>|)\n"
		   "  -m idle       emit nothing, just run until stopped\n"
		   "  -m leak       one valid record per second, and 4 MiB allocated and touched every 10 ms\n"
		   "                (never freed: a leak for the memory limit)\n"
		   "  -m spin       one valid record per second, burning CPU in between\n"
		   "  -m fork       start N (-n) sleeping children, then log how many it could start\n"
		   "  -k K          distinct keys used by flood (default 100)\n"
		   "  -l LEVEL      log level (default info)\n"
		   "Live configuration: any JSON object is applied (and logged), except one with\n"
		   "\"params\": {\"fail\": true}, which is refused.\n");
}

static int emit_valid(struct probe_rt *rt, const char *key, double g, uint64_t c)
{
	struct probe_rec rec;

	probe_rec__begin(&rec, &TBL_test_bad);
	probe_rec__str(&rec, key);
	probe_rec__str(&rec, "lbl");
	probe_rec__f64(&rec, g);
	probe_rec__u64(&rec, c);
	return probe_rt__emit(rt, &rec);
}

static int on_config(void *ctx, uint64_t version, const struct gg_ctrl_msg *msg)
{
	const cJSON *fail = msg->params ? cJSON_GetObjectItemCaseSensitive(msg->params, "fail") : NULL;
	int err = cJSON_IsTrue(fail) ? -EINVAL : 0;
	char *json = NULL;

	(void)ctx;
	(void)gg_ctrl_msg__encode(msg, &json);
	probe_log(PLOG_INFO, "configuration %llu %s: %.200s", (unsigned long long)version, err ? "refused" : "applied",
		  json ? json : "?");
	free(json);
	return err;
}

int main(int argc, char **argv)
{
	enum mode mode = MODE_VALID;
	enum probe_log_level level = PLOG_INFO;
	unsigned long n = 100000, nkeys = 100;
	struct probe_rt_opts opts = {.name = PROG, .on_config = on_config};
	struct probe_rt *rt;
	int c;

	while ((c = getopt(argc, argv, "m:n:k:l:h")) != -1) {
		switch (c) {
		case 'm':
			for (c = 0; c <= MODE_FORK && strcmp(optarg, mode_names[c]); c++)
				;
			if (c > MODE_FORK) {
				fprintf(stderr, PROG ": unknown mode '%s'\n", optarg);
				return 2;
			}
			mode = (enum mode)c;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'k':
			nkeys = strtoul(optarg, NULL, 10);
			if (!nkeys)
				nkeys = 1;
			break;
		case 'l':
			if (probe_log_level__parse(optarg, &level)) {
				fprintf(stderr, PROG ": invalid log level '%s'\n", optarg);
				return 2;
			}
			break;
		default:
			return tool_usage_exit(usage, c);
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (mode == MODE_EXIT)
		return 3;

	opts.log_level = level;
	rt = probe_rt__new(&opts);
	if (!rt) {
		fprintf(stderr, PROG ": cannot set up the runtime: %s\n", strerror(errno));
		return 1;
	}
	probe_log(PLOG_INFO, "started in mode %s", mode_names[mode]);

	if (mode == MODE_CRASH) {
		if (probe_rt__wait(rt, 1000) == 0) {
			signal(SIGSEGV, SIG_DFL);
			raise(SIGSEGV);
		}
	} else if (mode == MODE_FLOOD) {
		char key[32];

		for (unsigned long i = 0; i < n && !probe_rt__stopping(rt); i++) {
			snprintf(key, sizeof(key), "f%lu", i % nkeys);
			(void)emit_valid(rt, key, (double)i, i);
		}
		(void)probe_rt__flush(rt);
		probe_log(PLOG_INFO, "flood done: %llu records", (unsigned long long)probe_rt__records_emitted(rt));
		while (!probe_rt__wait(rt, 60000))
			;
	} else if (mode == MODE_IDLE) {
		while (!probe_rt__wait(rt, 60000))
			;
	} else if (mode == MODE_LEAK) {
		for (unsigned long i = 0; !probe_rt__stopping(rt); i++) {
			char *p = malloc(4u << 20);

			if (p)
				memset(p, (int)(i & 0xff) | 1, 4u << 20);
			if (i % 100 == 0) {
				(void)emit_valid(rt, "k1", (double)i, i);
				(void)probe_rt__flush(rt);
			}
			if (probe_rt__wait(rt, 10))
				break;
		}
	} else if (mode == MODE_SPIN) {
		while (!probe_rt__stopping(rt)) {
			struct timespec t0, t;
			volatile unsigned long x = 0;

			(void)emit_valid(rt, "k1", 1.5, 7);
			(void)probe_rt__flush(rt);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			do {
				for (int i = 0; i < 100000; i++)
					x += (unsigned long)i;
				clock_gettime(CLOCK_MONOTONIC, &t);
			} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000000L);
			if (probe_rt__wait(rt, 0))
				break;
		}
	} else if (mode == MODE_FORK) {
		unsigned long started = 0;

		for (unsigned long i = 0; i < n; i++) {
			pid_t pid = fork();

			if (pid == 0) {
				pause();
				_exit(0);
			}
			if (pid < 0)
				break;
			started++;
		}
		probe_log(PLOG_INFO, "fork: started %lu of %lu children", started, n);
		while (!probe_rt__wait(rt, 60000))
			;
	} else {
		while (!probe_rt__stopping(rt)) {
			(void)emit_valid(rt, "k1", 1.5, 7);
			if (mode == MODE_MALFORMED)
				for (unsigned int i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++)
					(void)probe_rt__emit_line(rt, bad_lines[i], strlen(bad_lines[i]));
			(void)probe_rt__flush(rt);
			if (probe_rt__wait(rt, 1000))
				break;
		}
	}
	probe_rt__free(rt);
	return 0;
}
