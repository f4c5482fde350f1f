/* metrics_render.c - benchmark of the /metrics text rendering: an imdb holding N series (a tcp_link-like
 * table: 6 keys, 2 labels, 10 metrics per row) rendered R times; prints the time per scrape and per
 * series, and the size of the text.
 *   build/bench/metrics_render [-s SERIES] [-r RUNS] [-o FILE]   (-o writes one rendering, for promtool) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "../supervisor/export/imdb.h"
#include "../supervisor/export/prom.h"
#include "bench_util.h"

#define METRICS_PER_ROW 10

static const char META[] = "version = \"1.0.0\";\n"
			   "measurements: ( { table_name: \"tcp_link_bench\", entity_name: \"tcp_link\", fields: (\n"
			   "  { description: \"process id\", type: \"key\", name: \"tgid\" },\n"
			   "  { description: \"role\", type: \"key\", name: \"role\" },\n"
			   "  { description: \"client ip\", type: \"key\", name: \"client_ip\" },\n"
			   "  { description: \"server ip\", type: \"key\", name: \"server_ip\" },\n"
			   "  { description: \"server port\", type: \"key\", name: \"server_port\" },\n"
			   "  { description: \"protocol\", type: \"key\", name: \"protocol\" },\n"
			   "  { description: \"command\", type: \"label\", name: \"comm\" },\n"
			   "  { description: \"container\", type: \"label\", name: \"container_id\" },\n"
			   "  { description: \"bytes received\", type: \"counter\", name: \"rx_bytes\" },\n"
			   "  { description: \"bytes sent\", type: \"counter\", name: \"tx_bytes\" },\n"
			   "  { description: \"segments in\", type: \"counter\", name: \"segs_in\" },\n"
			   "  { description: \"segments out\", type: \"counter\", name: \"segs_out\" },\n"
			   "  { description: \"retransmits\", type: \"counter\", name: \"retran_packets\" },\n"
			   "  { description: \"smoothed rtt (us)\", type: \"gauge\", name: \"srtt\" },\n"
			   "  { description: \"receive window\", type: \"gauge\", name: \"rcv_wnd\" },\n"
			   "  { description: \"send congestion window\", type: \"gauge\", name: \"snd_cwnd\" },\n"
			   "  { description: \"receive queue\", type: \"gauge\", name: \"rcv_queue\" },\n"
			   "  { description: \"send queue\", type: \"gauge\", name: \"snd_queue\" } ) } );\n";

int main(int argc, char **argv)
{
	static const char *const extra_names[] = {"machine_id", "hostname", NULL};
	unsigned long series = 100000, runs = 20;
	const char *out = NULL;
	struct imdb_limits lim = {16, 10000000, 1024, 16ull << 30, 0};
	struct meta_registry *reg = meta_registry__new();
	struct prom_families *fams = prom_families__new();
	struct imdb *db;
	char err[256], line[512];
	uint64_t *t, lines = 0, bytes = 0;
	int c;

	while ((c = getopt(argc, argv, "s:r:o:")) != -1) {
		if (c == 's')
			series = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			runs = strtoul(optarg, NULL, 10);
		else if (c == 'o')
			out = optarg;
		else
			return 2;
	}
	if (!runs || !reg || !fams ||
	    meta_registry__load_buf(reg, "bench.meta", META, sizeof(META) - 1, err, sizeof(err))) {
		fprintf(stderr, "metrics_render: setup failed: %s\n", err);
		return 1;
	}
	db = imdb__new(&lim, "machine_id=\"3d1219c7c4c5404aaa1f6d2a48adfda4\",hostname=\"bench-host.example\"",
		       extra_names);
	t = calloc(runs, sizeof(*t));
	if (!db || !t)
		return 1;
	for (unsigned long i = 0; i < (series + METRICS_PER_ROW - 1) / METRICS_PER_ROW; i++) {
		struct meta_record rec;
		int n = snprintf(line, sizeof(line),
				 "|tcp_link_bench|%lu|client|10.0.%lu.%lu|192.168.1.10|8080|tcp|nginx|a1b2c3d4e5f6|%lu|"
				 "%lu|%lu|%lu|%lu|"
				 "%lu.5|65535|10|0|%lu|",
				 1000 + i % 5000, (i / 250) % 250, i % 250, i * 1500, i * 900, i * 3, i * 2, i % 7,
				 100 + i % 900, i % 13);

		if (meta_record__parse(reg, line, (size_t)n, &rec, NULL) != META_OK ||
		    imdb__update(db, &rec, 0, NULL)) {
			fprintf(stderr, "metrics_render: cannot store row %lu\n", i);
			return 1;
		}
	}
	for (unsigned long r = 0; r < runs; r++) {
		struct gg_buf b;
		uint64_t t0;

		gg_buf__init(&b, 0);
		t0 = gg_mono_ns();
		lines = prom_render_imdb(&b, db, fams, NULL, NULL);
		t[r] = gg_mono_ns() - t0;
		bytes = b.len;
		if (out && r == 0) {
			FILE *f = fopen(out, "w");

			if (f) {
				fwrite(b.data, 1, b.len, f);
				fclose(f);
			}
		}
		gg_buf__fini(&b);
	}
	qsort(t, runs, sizeof(*t), bench_cmp_u64);
	printf("series %llu, text %.1f MiB, imdb %.1f MiB; render over %lu runs: median %.2f ms (%.0f ns/series), "
	       "min %.2f ms, max %.2f ms\n",
	       (unsigned long long)lines, (double)bytes / (1 << 20), (double)imdb__bytes(db) / (1 << 20), runs,
	       (double)t[runs / 2] / 1e6, (double)t[runs / 2] / (double)lines, (double)t[0] / 1e6,
	       (double)t[runs - 1] / 1e6);
	free(t);
	imdb__free(db);
	prom_families__free(fams);
	meta_registry__free(reg);
	return 0;
}
