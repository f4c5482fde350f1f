/* mem.c - the mem sub-probe: /proc/meminfo as one system_meminfo record. */
#include "system_infos.h"

#include <string.h>

#include "system_infos.meta.h"

/* The /proc/meminfo lines we use, in the order of the values array below. */
enum mi {
	MI_TOTAL,
	MI_FREE,
	MI_AVAILABLE,
	MI_BUFFERS,
	MI_CACHED,
	MI_ACTIVE,
	MI_INACTIVE,
	MI_SWAP_TOTAL,
	MI_SWAP_FREE,
	MI_SLAB,
	MI_SRECLAIMABLE,
	MI_SUNRECLAIM,
	MI_PAGETABLES,
	MI_VMALLOC_USED,
	MI_KERNEL_STACK,
	MI_ACTIVE_ANON,
	MI_INACTIVE_ANON,
	MI_ACTIVE_FILE,
	MI_INACTIVE_FILE,
	MI_MLOCKED,
	MI_HUGETLB,
	MI_HUGEPAGES_TOTAL,
	MI_HUGEPAGESIZE,
	MI_SHMEM,
	MI__COUNT,
};

static const char *const mi_names[MI__COUNT] = {
	[MI_TOTAL] = "MemTotal",
	[MI_FREE] = "MemFree",
	[MI_AVAILABLE] = "MemAvailable",
	[MI_BUFFERS] = "Buffers",
	[MI_CACHED] = "Cached",
	[MI_ACTIVE] = "Active",
	[MI_INACTIVE] = "Inactive",
	[MI_SWAP_TOTAL] = "SwapTotal",
	[MI_SWAP_FREE] = "SwapFree",
	[MI_SLAB] = "Slab",
	[MI_SRECLAIMABLE] = "SReclaimable",
	[MI_SUNRECLAIM] = "SUnreclaim",
	[MI_PAGETABLES] = "PageTables",
	[MI_VMALLOC_USED] = "VmallocUsed",
	[MI_KERNEL_STACK] = "KernelStack",
	[MI_ACTIVE_ANON] = "Active(anon)",
	[MI_INACTIVE_ANON] = "Inactive(anon)",
	[MI_ACTIVE_FILE] = "Active(file)",
	[MI_INACTIVE_FILE] = "Inactive(file)",
	[MI_MLOCKED] = "Mlocked",
	[MI_HUGETLB] = "Hugetlb",
	[MI_HUGEPAGES_TOTAL] = "HugePages_Total",
	[MI_HUGEPAGESIZE] = "Hugepagesize",
	[MI_SHMEM] = "Shmem",
};

static double percent(uint64_t part, uint64_t whole)
{
	if (!whole)
		return 0;
	return (double)(uint64_t)((double)part * 10000.0 / (double)whole + 0.5) / 100.0;
}

/* /proc/meminfo parsed: the values of enum mi (kB, 0 when absent), MemAvailable (estimated on kernels
 * without it, never above MemTotal) and the huge pages' memory. */
struct mem_vals {
	uint64_t v[MI__COUNT];
	uint64_t avail, huge;
};

static void meminfo_parse(const char *data, size_t len, struct mem_vals *ret)
{
	unsigned char have[MI__COUNT] = {0};
	const char *p = data, *end = data + len;
	uint64_t *v = ret->v;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *colon = memchr(p, ':', (size_t)(eol - p));

		if (colon) {
			size_t nlen = (size_t)(colon - p);

			for (unsigned int i = 0; i < MI__COUNT; i++) {
				if (!have[i] && strlen(mi_names[i]) == nlen && !memcmp(p, mi_names[i], nlen)) {
					if (si_parse_u64(si_skip_blanks(colon + 1, eol), eol, 10, &v[i]))
						have[i] = 1;
					break;
				}
			}
		}
		p = eol < end ? eol + 1 : end;
	}
	/* Kernels before 3.14 have no MemAvailable: estimate it the way free(1) did then. */
	ret->avail = have[MI_AVAILABLE] ? v[MI_AVAILABLE] : v[MI_FREE] + v[MI_BUFFERS] + v[MI_CACHED];
	if (ret->avail > v[MI_TOTAL])
		ret->avail = v[MI_TOTAL];
	ret->huge = have[MI_HUGETLB] ? v[MI_HUGETLB] : v[MI_HUGEPAGES_TOTAL] * v[MI_HUGEPAGESIZE];
}

/* v[first..last] into rec, in order. */
static void emit_run(struct probe_rec *rec, const uint64_t *v, enum mi first, enum mi last)
{
	for (unsigned int i = first; i <= last; i++)
		probe_rec__u64(rec, v[i]);
}

int si_mem__report(struct si_mem *m, struct probe_rt *rt)
{
	struct mem_vals mv;
	const uint64_t *v = mv.v;
	struct probe_rec rec;
	uint64_t avail, huge;
	int err = si_read_proc("/proc/meminfo", &m->meminfo, &m->warned);

	if (err)
		return err;
	meminfo_parse(m->meminfo.data, m->meminfo.len, &mv);
	avail = mv.avail;
	huge = mv.huge;

	/* system_meminfo's fields are enum mi's order with derived values between some of them */
	probe_rec__begin(&rec, &TBL_system_meminfo);
	probe_rec__str(&rec, "meminfo");
	emit_run(&rec, v, MI_TOTAL, MI_FREE);
	probe_rec__u64(&rec, avail);
	probe_rec__f64(&rec, percent(v[MI_TOTAL] - avail, v[MI_TOTAL]));
	emit_run(&rec, v, MI_BUFFERS, MI_SWAP_FREE);
	probe_rec__f64(&rec, v[MI_SWAP_FREE] <= v[MI_SWAP_TOTAL]
				     ? percent(v[MI_SWAP_TOTAL] - v[MI_SWAP_FREE], v[MI_SWAP_TOTAL])
				     : 0);
	emit_run(&rec, v, MI_SLAB, MI_MLOCKED);
	probe_rec__u64(&rec, huge);
	probe_rec__u64(&rec, v[MI_SHMEM]);
	return probe_rt__emit(rt, &rec);
}

void si_mem__free(struct si_mem *m)
{
	if (!m)
		return;
	probe_buf__free(&m->meminfo);
}
