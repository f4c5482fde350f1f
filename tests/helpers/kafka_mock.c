/* kafka_mock.c - a Kafka-protocol broker for tests: librdkafka's mock cluster on loopback. Prints the
 * bootstrap address on the first line of stdout, then takes commands on stdin, one per line:
 *   down N | down all   take broker N (1-based) down: connections closed, new ones refused
 *   up N   | up all     bring it back
 *   quit                exit (so does end of input)
 * and answers each with "ok" or "error: ...". */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include "tool_usage.h"

#define PROG	   "kafka_mock"
#define TOPICS_MAX 16

static void usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " [-b BROKERS] [-t TOPIC]... [-p PARTITIONS]\n"
		   "Runs librdkafka's mock Kafka cluster on 127.0.0.1 and prints its bootstrap address.\n"
		   "  -b N   brokers (default 1)\n"
		   "  -t T   create topic T at start (repeatable; others are auto-created)\n"
		   "  -p N   partitions of the topics created with -t (default 1)\n"
		   "stdin: \"down N|all\", \"up N|all\", \"quit\"; each answered with \"ok\".\n");
}

static int set_state(rd_kafka_mock_cluster_t *mc, int nbrokers, const char *arg, int up)
{
	int lo, hi;

	if (!strcmp(arg, "all")) {
		lo = 1;
		hi = nbrokers;
	} else {
		lo = hi = atoi(arg);
		if (lo < 1 || lo > nbrokers)
			return -EINVAL;
	}
	for (int id = lo; id <= hi; id++) {
		rd_kafka_resp_err_t e =
			up ? rd_kafka_mock_broker_set_up(mc, id) : rd_kafka_mock_broker_set_down(mc, id);

		if (e)
			return -EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *topics[TOPICS_MAX];
	int ntopics = 0, nbrokers = 1, partitions = 1, c;
	char errstr[512], line[256];
	rd_kafka_conf_t *conf;
	rd_kafka_mock_cluster_t *mc;
	rd_kafka_t *rk;

	while ((c = getopt(argc, argv, "b:t:p:h")) != -1) {
		switch (c) {
		case 'b':
			nbrokers = atoi(optarg);
			break;
		case 't':
			if (ntopics < TOPICS_MAX)
				topics[ntopics++] = optarg;
			break;
		case 'p':
			partitions = atoi(optarg);
			break;
		default:
			return tool_usage_exit(usage, c);
		}
	}
	if (nbrokers < 1 || partitions < 1 || optind != argc) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);

	/* The mock cluster lives inside a client instance; this one never produces. */
	conf = rd_kafka_conf_new();
	(void)rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)); /* no "no bootstrap.servers" notice */
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk) {
		fprintf(stderr, PROG ": rd_kafka_new: %s\n", errstr);
		return 1;
	}
	mc = rd_kafka_mock_cluster_new(rk, nbrokers);
	if (!mc) {
		fprintf(stderr, PROG ": cannot start the mock cluster\n");
		rd_kafka_destroy(rk);
		return 1;
	}
	for (int i = 0; i < ntopics; i++) {
		if (rd_kafka_mock_topic_create(mc, topics[i], partitions, 1)) {
			fprintf(stderr, PROG ": cannot create topic %s\n", topics[i]);
			return 1;
		}
	}
	printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);

	while (fgets(line, sizeof(line), stdin)) {
		char cmd[32] = "", arg[64] = "";
		int n = sscanf(line, "%31s %63s", cmd, arg), err = -EINVAL;

		if (n >= 1 && !strcmp(cmd, "quit"))
			break;
		if (n == 2 && !strcmp(cmd, "down"))
			err = set_state(mc, nbrokers, arg, 0);
		else if (n == 2 && !strcmp(cmd, "up"))
			err = set_state(mc, nbrokers, arg, 1);
		if (err)
			printf("error: %s\n", strerror(-err));
		else
			printf("ok\n");
		fflush(stdout);
	}
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
