/* identity_lookup.c - benchmark of the container labels on the ingest path: R rounds of one record per
 * process for P processes (each in its own docker container, on a fake /proc and docker state in a
 * temporary directory) stored in the imdb, with the identity labels (gg_ident_export__record, then
 * imdb__update) and without (imdb__update alone), alternated; prints ns per record of each and the
 * resolver's file reads (cache misses). -l: "with" also carries a probe's REST labels (two custom
 * labels, two pod labels: gg_ident_export__probe_record).
 *   build/bench/identity_lookup [-p PROCS] [-r ROUNDS] [-l] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "../supervisor/export/ident_export.h"
#include "../supervisor/export/imdb.h"
#include "bench_util.h"

static const char META[] = "version = \"1.0.0\";\n"
			   "measurements: ( { table_name: \"proc_bench\", entity_name: \"proc\", fields: (\n"
			   "  { description: \"process id\", type: \"key\", name: \"tgid\" },\n"
			   "  { description: \"command\", type: \"label\", name: \"comm\" },\n"
			   "  { description: \"a\", type: \"counter\", name: \"a\" },\n"
			   "  { description: \"b\", type: \"gauge\", name: \"b\" } ) } );\n";

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	static const char *const extra_names[] = {"machine_id", "hostname", NULL};
	unsigned long procs = 1000, rounds = 20;
	struct imdb_limits lim = {16, 10000000, 1024, 16ull << 30, 0};
	struct meta_registry *reg = meta_registry__new();
	char dir[] = "/tmp/gg-bench-ident-XXXXXX", path[512], text[256], err[256], proc[300], docker[300];
	struct gg_identity_opts o = {0};
	struct gg_ident_export *x;
	struct imdb *db[2];
	uint64_t *t[2];
	char **lines;
	int c, ext = 0, owner;

	while ((c = getopt(argc, argv, "p:r:l")) != -1) {
		if (c == 'l')
			ext = 1;
		else if (c == 'p')
			procs = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			rounds = strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	if (!reg || meta_registry__load_buf(reg, "b.meta", META, strlen(META), err, sizeof(err)) || !mkdtemp(dir)) {
		fprintf(stderr, "setup: %s\n", err);
		return 1;
	}
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	snprintf(docker, sizeof(docker), "%s/docker", dir);
	mkdir(proc, 0755);
	mkdir(docker, 0755);
	snprintf(path, sizeof(path), "%s/containers", docker);
	mkdir(path, 0755);
	lines = calloc(procs, sizeof(*lines));
	for (unsigned long i = 0; i < procs; i++) {
		snprintf(path, sizeof(path), "%s/%lu", proc, 1000 + i);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/%lu/cgroup", proc, 1000 + i);
		snprintf(text, sizeof(text), "0::/system.slice/docker-%064lx.scope\n", i + 1);
		put(path, text);
		snprintf(path, sizeof(path), "%s/containers/%064lx", docker, i + 1);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/containers/%064lx/config.v2.json", docker, i + 1);
		snprintf(text, sizeof(text), "{\"Name\":\"/web-%lu\",\"Config\":{\"Image\":\"nginx:1.25\"}}", i);
		put(path, text);
		lines[i] = malloc(64);
		snprintf(lines[i], 64, "|proc_bench|%lu|nginx|%lu|1.5|", 1000 + i, i);
	}
	o.proc_root = proc;
	o.docker_dir = docker;
	x = gg_ident_export__new(gg_identity__new(&o));
	db[0] = imdb__new(&lim, "machine_id=\"m\",hostname=\"h\"", extra_names);
	db[1] = imdb__new(&lim, "machine_id=\"m\",hostname=\"h\"", extra_names);
	t[0] = calloc(rounds, sizeof(uint64_t));
	t[1] = calloc(rounds, sizeof(uint64_t));
	if (!x || !db[0] || !db[1] || !t[0] || !t[1])
		return 1;
	if (ext) {
		struct gg_ext_labels *l = calloc(1, sizeof(*l));

		if (!l)
			return 1;
		l->ncustom = 2;
		strcpy(l->custom_name[0], "team");
		strcpy(l->custom_value[0], "payments");
		strcpy(l->custom_name[1], "env");
		strcpy(l->custom_value[1], "prod");
		l->npod = 2;
		strcpy(l->pod_key[0], "app");
		strcpy(l->pod_name[0], "app");
		strcpy(l->pod_key[1], "app.kubernetes.io/name");
		strcpy(l->pod_name[1], "app_kubernetes_io_name");
		if (gg_ident_export__set_labels(x, &owner, l))
			return 1;
		free(l);
	}
	/* round 0 fills the caches and the rows; the timed rounds are the steady state */
	for (unsigned long r = 0; r <= rounds; r++) {
		for (int with = (int)(r & 1), k = 0; k < 2; k++, with ^= 1) {
			uint64_t t0 = gg_mono_ns();

			for (unsigned long i = 0; i < procs; i++) {
				struct meta_record rec;
				const struct meta_record *out = &rec;

				if (meta_record__parse(reg, lines[i], strlen(lines[i]), &rec, NULL) != META_OK)
					return 1;
				/* within the refresh intervals */
				if (with)
					out = gg_ident_export__probe_record(x, ext ? &owner : NULL, &rec, 1000 + r,
									    NULL);
				if (imdb__update(db[with], out, 1, NULL))
					return 1;
			}
			if (r)
				t[with][r - 1] = gg_mono_ns() - t0;
		}
	}
	qsort(t[0], rounds, sizeof(uint64_t), bench_cmp_u64);
	qsort(t[1], rounds, sizeof(uint64_t), bench_cmp_u64);
	printf("procs %lu, rounds %lu (alternated)%s\n", procs, rounds, ext ? ", with 2 custom + 2 pod labels" : "");
	printf("without labels: median %.0f ns/record (min %.0f, max %.0f)\n", (double)t[0][rounds / 2] / procs,
	       (double)t[0][0] / procs, (double)t[0][rounds - 1] / procs);
	printf("with labels:    median %.0f ns/record (min %.0f, max %.0f)\n", (double)t[1][rounds / 2] / procs,
	       (double)t[1][0] / procs, (double)t[1][rounds - 1] / procs);
	{
		const struct gg_identity_stats *st = gg_identity__stats(gg_ident_export__identity(x));

		printf("resolver: %llu lookups, %llu /proc reads, %llu state reads; imdb bytes %llu without, %llu "
		       "with\n",
		       (unsigned long long)st->lookups, (unsigned long long)st->proc_reads,
		       (unsigned long long)st->state_reads, (unsigned long long)imdb__bytes(db[0]),
		       (unsigned long long)imdb__bytes(db[1]));
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", dir); /* our own mkdtemp directory */
	if (system(path))
		return 1;
	gg_ident_export__free(x);
	imdb__free(db[0]);
	imdb__free(db[1]);
	for (unsigned long i = 0; i < procs; i++)
		free(lines[i]);
	free(lines);
	free(t[0]);
	free(t[1]);
	meta_registry__free(reg);
	return 0;
}
