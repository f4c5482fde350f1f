/* ipc_sink.c - benchmark subscriber: receives batches from N ipc_pub processes, splits every record, counts loss. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "clock.h"
#include "decimal.h"
#include "ipc.h"
#include "../tests/helpers/tool_usage.h"

#define MAX_PROBES 256
#define MAX_FIELDS 64

/* Gap accounting per probe name, as the supervisor will keep it. */
struct probe_stat {
	char name[IPC_PROBE_NAME_MAX];
	struct ipc_seq_tracker t;
};

/* Roughly what validation will cost: split into fields, check the table and field count, parse the
 * numbers. Returns 0 for a good record. */
static int check_record(const char *line, size_t len)
{
	const char *f[MAX_FIELDS];
	size_t fl[MAX_FIELDS];
	const char *p = line + 1, *end = line + len;
	unsigned int nf = 0;
	uint64_t a, b;

	if (len < 2 || line[0] != '|' || line[len - 1] != '|')
		return -1;
	while (p < end) {
		const char *bar = memchr(p, '|', (size_t)(end - p));

		if (!bar || nf == MAX_FIELDS)
			return -1;
		f[nf] = p;
		fl[nf++] = (size_t)(bar - p);
		p = bar + 1;
	}
	if (nf != 4 || fl[0] != 5 || memcmp(f[0], "bench", 5) != 0 || fl[1] == 0)
		return -1;
	if (gg_parse_u64(f[2], fl[2], &a) < 0 || gg_parse_u64(f[3], fl[3], &b) < 0 || b != a * 2)
		return -1;
	return 0;
}

static struct probe_stat *lookup(struct probe_stat *ps, unsigned int *nps, const char *name)
{
	for (unsigned int i = 0; i < *nps; i++)
		if (strcmp(ps[i].name, name) == 0)
			return &ps[i];
	if (*nps == MAX_PROBES)
		return NULL;
	memset(&ps[*nps], 0, sizeof(ps[0]));
	strcpy(ps[*nps].name, name);
	return &ps[(*nps)++];
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ipc_sink -u URL -p NPUB -r RECORDS_EACH [-B RECVBUF] [-i IDLE_MS]\n"
		   "  ends when every expected record is received or counted lost, or after IDLE_MS\n"
		   "  (default 3000) without a message\n");
}

int main(int argc, char **argv)
{
	static struct probe_stat ps[MAX_PROBES];
	unsigned long long npub = 0, each = 0;
	unsigned int nps = 0;
	uint64_t expected, recs = 0, lost_b = 0, lost_r = 0, bad_rec = 0, bad_msg = 0, msgs = 0, bytes = 0;
	uint64_t first = 0, last = 0;
	int recvbuf = 0, idle_ms = 3000, c;
	const char *url = NULL;
	struct ipc_sub *sub;
	struct rusage ru;
	double secs;

	while ((c = getopt(argc, argv, "u:p:r:B:i:h")) != -1) {
		switch (c) {
		case 'u':
			url = optarg;
			break;
		case 'p':
			npub = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			each = strtoull(optarg, NULL, 0);
			break;
		case 'B':
			recvbuf = atoi(optarg);
			break;
		case 'i':
			idle_ms = atoi(optarg);
			break;
		default:
			return tool_usage_exit(usage, c);
		}
	}
	if (!url || npub == 0 || each == 0) {
		usage(stderr);
		return 2;
	}
	expected = npub * each;
	sub = ipc_sub__new(url);
	if (!sub) {
		fprintf(stderr, "ipc_sink: %s: %s\n", url, strerror(errno));
		return 1;
	}
	if (recvbuf && ipc_sub__set_recvbuf(sub, recvbuf) < 0) {
		fprintf(stderr, "ipc_sink: bad receive buffer %d\n", recvbuf);
		ipc_sub__free(sub);
		return 2;
	}
	printf("sink listening on %s\n", url);
	fflush(stdout);

	while (recs + lost_r < expected) {
		struct pollfd pfd = {.fd = ipc_sub__fd(sub), .events = POLLIN};
		int n = poll(&pfd, 1, first ? idle_ms : 60000);
		int rc;

		if (n < 0 && errno != EINTR)
			break;
		if (n == 0)
			break; /* idle: whatever is missing now is unaccounted */
		for (;;) {
			struct ipc_batch_hdr h;
			const char *payload, *cur, *line;
			struct probe_stat *st;
			size_t len, llen;
			void *msg;

			rc = ipc_sub__recv(sub, &msg, &len);
			if (rc <= 0)
				break;
			last = gg_mono_ns();
			if (!first)
				first = last;
			msgs++;
			bytes += len;
			if (ipc_batch__decode(msg, len, &h, &payload) < 0 || !(st = lookup(ps, &nps, h.probe))) {
				bad_msg++;
				ipc_msg__free(msg);
				continue;
			}
			lost_b += ipc_seq_tracker__update(&st->t, &h);
			cur = payload;
			while (ipc_batch__next_record(&cur, payload + h.payload_len, &line, &llen) == 1) {
				if (check_record(line, llen) < 0)
					bad_rec++;
				recs++;
			}
			ipc_msg__free(msg);
		}
		if (rc < 0) {
			fprintf(stderr, "ipc_sink: recv: %s\n", strerror(-rc));
			break;
		}
		lost_r = 0;
		for (unsigned int i = 0; i < nps; i++)
			lost_r += ps[i].t.lost_records;
	}
	getrusage(RUSAGE_SELF, &ru);
	secs = (double)(last - first) / 1e9;
	printf("sink: %llu records in %.3f s = %.0f rec/s, %llu msgs (%.1f MB), %u probes\n", (unsigned long long)recs,
	       secs, secs > 0 ? (double)recs / secs : 0.0, (unsigned long long)msgs, (double)bytes / 1e6, nps);
	printf("sink: lost batches %llu, lost records %llu, unaccounted %lld, bad msgs %llu, bad records %llu\n",
	       (unsigned long long)lost_b, (unsigned long long)lost_r, (long long)(expected - recs - lost_r),
	       (unsigned long long)bad_msg, (unsigned long long)bad_rec);
	printf("sink: cpu user %.2f s sys %.2f s\n", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	ipc_sub__free(sub);
	return 0;
}
