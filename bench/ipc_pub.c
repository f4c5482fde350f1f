/* ipc_pub.c - benchmark publisher: emits synthetic "|bench|<key>|<n>|<2n>|" records through ipc_pub as fast as allowed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "decimal.h"
#include "ipc.h"
#include "../tests/helpers/tool_usage.h"

/* snprintf would cost more than the IPC path we are measuring. */
static char *put_u64(char *p, uint64_t v)
{
	return p + gg_fmt_u64(p, v);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ipc_pub -u URL -n NAME -r RECORDS [-R RATE] [-b MAX_PAYLOAD] [-s SENDBUF] [-k KEYS] [-d "
		"DRAIN_MS]\n"
		"  -R records per second, 0 = as fast as possible (default)\n"
		"  -b batch payload bytes (default %u), -s NNG send buffer in messages (default %d)\n"
		"  -k distinct keys (default 1000)\n"
		"  -d wait up to DRAIN_MS at exit for queued batches to be written (default 5000; 0 = only\n"
		"     ipc_pub__free's %u ms)\n",
		IPC_BATCH_DEFAULT_PAYLOAD, IPC_PUB_DEFAULT_SENDBUF, IPC_PUB_LINGER_MS);
}

int main(int argc, char **argv)
{
	struct ipc_pub_opts o = {0};
	unsigned long long records = 0, rate = 0, keys = 1000;
	struct ipc_pub *pub;
	uint64_t t0, t1, deadline, sent, disc;
	char line[128];
	unsigned int drain_ms = 5000;
	int c, drain;

	while ((c = getopt(argc, argv, "u:n:r:R:b:s:k:d:h")) != -1) {
		switch (c) {
		case 'u':
			o.url = optarg;
			break;
		case 'n':
			o.probe_name = optarg;
			break;
		case 'r':
			records = strtoull(optarg, NULL, 0);
			break;
		case 'R':
			rate = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			o.max_payload = strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.sendbuf = atoi(optarg);
			break;
		case 'k':
			keys = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			drain_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			return tool_usage_exit(usage, c);
		}
	}
	if (!o.url || !o.probe_name || records == 0 || keys == 0) {
		usage(stderr);
		return 2;
	}
	pub = ipc_pub__new(&o);
	if (!pub) {
		fprintf(stderr, "ipc_pub: %s: %s\n", o.url, strerror(errno));
		return 1;
	}
	/* Measure the steady state, not the dial: give the sink up to 5 s to be there. */
	deadline = gg_mono_ns() + 5000000000ull;
	while (!ipc_pub__connected(pub) && gg_mono_ns() < deadline)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);

	t0 = gg_mono_ns();
	for (unsigned long long n = 0; n < records; n++) {
		char *p = line;
		int rc;

		memcpy(p, "|bench|k", 8);
		p = put_u64(p + 8, n % keys);
		*p++ = '|';
		p = put_u64(p, n);
		*p++ = '|';
		p = put_u64(p, n * 2);
		*p++ = '|';
		rc = ipc_pub__append(pub, line, (size_t)(p - line));
		if (rc < 0) {
			fprintf(stderr, "ipc_pub: append: %s\n", strerror(-rc));
			ipc_pub__free(pub);
			return 1;
		}
		if ((n & 255) == 255) {
			(void)ipc_pub__tick(pub);
			if (rate) {
				/* Pace by schedule, not by fixed sleeps, so the average rate holds. */
				uint64_t due = t0 + (uint64_t)((n + 1) * 1000000000.0 / (double)rate);
				uint64_t now = gg_mono_ns();

				if (due > now)
					nanosleep(&(struct timespec){.tv_sec = (time_t)((due - now) / 1000000000u),
								     .tv_nsec = (long)((due - now) % 1000000000u)},
						  NULL);
			}
		}
	}
	(void)ipc_pub__flush(pub, 0);
	t1 = gg_mono_ns();
	/* A real probe would log a drain failure: its tail may be lost without the receiver knowing. */
	drain = drain_ms ? ipc_pub__drain(pub, drain_ms) : 0;
	sent = ipc_pub__batches_sent(pub);
	disc = ipc_pub__batches_discarded(pub);
	ipc_pub__free(pub);
	printf("pub %s: %llu records in %.3f s (%.0f rec/s), batches sent %llu, discarded %llu, drain %s\n",
	       o.probe_name, records, (double)(t1 - t0) / 1e9, (double)records * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1),
	       (unsigned long long)sent, (unsigned long long)disc, drain == 0 ? "ok" : strerror(-drain));
	return 0;
}
