/* stack_symbolize.c - symbolizer throughput and memory (probes/lib/symbolizer.c): addresses sampled
 * from the executable mappings of every running process (and the kernel's text), resolved once cold
 * (ELF files read) and then repeatedly warm. Prints lookups/s, cache memory and how many addresses had
 * a symbol, only a module, or nothing.
 *   stack_symbolize [SECONDS] [ADDRS_PER_MAPPING]   (default 3, 64) */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe.h"
#include "symbolizer.h"
#include "bench_util.h"

struct addr {
	uint32_t tgid; /* 0 = kernel */
	uint64_t ip;
};

static uint64_t rnd(void)
{
	static uint64_t x = 88172645463325252ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static int push(struct addr **v, size_t *n, size_t *cap, uint32_t tgid, uint64_t ip)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 4096;
		struct addr *p = realloc(*v, c * sizeof(*p));

		if (!p)
			return -1;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = (struct addr){tgid, ip};
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	unsigned int per = argc > 2 ? (unsigned int)atoi(argv[2]) : 64;
	struct symbolizer_opts so = {0};
	struct symbolizer *s = symbolizer__new(&so);
	struct probe_buf buf = {0};
	struct addr *v = NULL;
	size_t n = 0, cap = 0, named = 0, module = 0, unknown = 0;
	unsigned int nproc = 0;
	uint64_t lookups = 0, kstart = 0, kend = 0;
	struct symbolizer_stats st;
	struct dirent *de;
	double t0, cold, warm;
	DIR *d = opendir("/proc");

	if (!s || !d)
		return 1;
	while ((de = readdir(d))) {
		char path[300];
		const char *l;
		uint32_t pid = (uint32_t)strtoul(de->d_name, NULL, 10);

		if (!pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/maps", pid);
		if (probe_read_file(path, &buf, 32u << 20))
			continue;
		nproc++;
		for (l = buf.data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			unsigned long long a, b;
			char perms[8];

			if (sscanf(l, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x' && strchr(l, '/'))
				for (unsigned int i = 0; i < per; i++)
					push(&v, &n, &cap, pid, a + rnd() % (b - a));
		}
	}
	closedir(d);
	if (!probe_read_file("/proc/kallsyms", &buf, 64u << 20)) {
		const char *p = strstr(buf.data, " T _stext\n"), *q = strstr(buf.data, " T _etext\n");

		if (!q)
			q = strstr(buf.data, " R _etext\n");
		if (p && q) {
			while (p > buf.data && p[-1] != '\n')
				p--;
			while (q > buf.data && q[-1] != '\n')
				q--;
			kstart = strtoull(p, NULL, 16);
			kend = strtoull(q, NULL, 16);
		}
	}
	for (unsigned int i = 0; kend > kstart && i < 20000; i++)
		push(&v, &n, &cap, 0, kstart + rnd() % (kend - kstart));

	/* cold: every ELF is read */
	symbolizer__begin_round(s);
	t0 = bench_now_s(CLOCK_MONOTONIC);
	for (size_t i = 0; i < n; i++) {
		struct sym_frame f;
		int r = v[i].tgid ? symbolizer__user(s, v[i].tgid, v[i].ip, &f) : symbolizer__kernel(s, v[i].ip, &f);

		if (!r)
			named++;
		else if (f.module)
			module++;
		else
			unknown++;
	}
	cold = bench_now_s(CLOCK_MONOTONIC) - t0;
	/* warm: what a steady state costs per frame */
	t0 = bench_now_s(CLOCK_MONOTONIC);
	while (bench_now_s(CLOCK_MONOTONIC) - t0 < secs) {
		symbolizer__begin_round(s);
		for (size_t i = 0; i < n; i++) {
			struct sym_frame f;

			(void)(v[i].tgid ? symbolizer__user(s, v[i].tgid, v[i].ip, &f)
					 : symbolizer__kernel(s, v[i].ip, &f));
		}
		lookups += n;
	}
	warm = bench_now_s(CLOCK_MONOTONIC) - t0;
	symbolizer__stats(s, &st);
	printf("processes %u, addresses %zu (kernel %s)\n", nproc, n, kend > kstart ? "20000" : "0");
	printf("cold: %.3f s, %.0f addresses/s, %" PRIu64 " ELF files read\n", cold, (double)n / cold, st.elf_loads);
	printf("warm: %.2f M addresses/s (= %.0f k stacks/s at 20 frames)\n", (double)lookups / warm / 1e6,
	       (double)lookups / warm / 20 / 1e3);
	printf("resolved: symbol %.2f %%, module only %.2f %%, unknown %.2f %%\n", 100.0 * (double)named / (double)n,
	       100.0 * (double)module / (double)n, 100.0 * (double)unknown / (double)n);
	printf("cache: %u processes, %u modules, %.1f MiB\n", st.procs, st.modules, (double)st.mem_bytes / 1048576.0);
	symbolizer__free(s);
	probe_buf__free(&buf);
	free(v);
	return 0;
}
