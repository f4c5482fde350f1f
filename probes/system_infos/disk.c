/* disk.c - the disk sub-probe: /proc/diskstats of whole disks, iostat-style rates between periods. */
#include "system_infos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "system_infos.meta.h"

enum {
	DS_READS = 0,
	DS_RD_MERGED,
	DS_RD_SECTORS,
	DS_RD_MS,
	DS_WRITES,
	DS_WR_MERGED,
	DS_WR_SECTORS,
	DS_WR_MS,
	DS_IN_FLIGHT,
	DS_IO_MS,
	DS_WEIGHTED_MS,
	DS__COUNT,
};

/* Whole disks have a /sys/block entry ('/' in a name is '!' there); partitions do not. */
static int is_whole_disk(const struct si_counters *d, const char *name, size_t len)
{
	char path[512];
	const char *dir = d->sys_block ? d->sys_block : "/sys/block";
	size_t i, start = strlen(dir) + 1, n = (size_t)snprintf(path, sizeof(path), "%s/%.*s", dir, (int)len, name);

	if (n >= sizeof(path))
		return 0;
	for (i = start; i < n; i++)
		if (path[i] == '/')
			path[i] = '!';
	return access(path, F_OK) == 0;
}

/* A /proc/diskstats text sampled at now (ms) (si_counter_kind.parse); returns how many disks were left
 * out. */
static unsigned int disk_parse(struct si_counters *d, const char *data, size_t len, uint64_t now)
{
	const char *p = data, *end = data + len;
	unsigned int skipped = 0;

	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *q = p, *name;
		uint64_t majmin, v[DS__COUNT];
		size_t nlen;
		unsigned int k;

		p = eol < end ? eol + 1 : end;
		q = si_parse_u64(si_skip_blanks(q, eol), eol, 10, &majmin);
		if (q)
			q = si_parse_u64(si_skip_blanks(q, eol), eol, 10, &majmin);
		if (!q)
			continue;
		name = si_skip_blanks(q, eol);
		for (q = name; q < eol && *q != ' '; q++)
			;
		nlen = (size_t)(q - name);
		for (k = 0; k < DS__COUNT; k++) {
			q = si_parse_u64(si_skip_blanks(q, eol), eol, 10, &v[k]);
			if (!q)
				break;
		}
		if (k < DS__COUNT || !nlen)
			continue;
		/* Devices that never did IO (unused loop and ram devices) are noise. */
		if (v[DS_READS] == 0 && v[DS_WRITES] == 0)
			continue;
		if (is_whole_disk(d, name, nlen) && si_counters__put(d, name, nlen, v, DS__COUNT, now))
			skipped++;
	}
	return skipped;
}

static uint64_t dlt(const struct si_counter_row *r, unsigned int col)
{
	return r->have_prev && r->cur[col] > r->prev[col] ? r->cur[col] - r->prev[col] : 0;
}

static double round2(double v)
{
	return v > 0 ? (double)(uint64_t)(v * 100.0 + 0.5) / 100.0 : 0;
}

/* iostat's columns of one disk over the last period, in the system_iostat field order. */
enum {
	DR_RPS,
	DR_RKBPS,
	DR_RAWAIT,
	DR_RAREQSZ,
	DR_WPS,
	DR_WKBPS,
	DR_WAWAIT,
	DR_WAREQSZ,
	DR_AQUSZ,
	DR_UTIL,
	DR__COUNT,
};

static void disk_rates(const struct si_counter_row *r, double out[DR__COUNT])
{
	double ms = r->have_prev && r->cur_ms > r->prev_ms ? (double)(r->cur_ms - r->prev_ms) : 0;
	double secs = ms / 1000.0;
	uint64_t rd = dlt(r, DS_READS), wr = dlt(r, DS_WRITES);
	double util = ms > 0 ? (double)dlt(r, DS_IO_MS) * 100.0 / ms : 0;

	out[DR_RPS] = secs > 0 ? round2((double)rd / secs) : 0;
	out[DR_RKBPS] = secs > 0 ? round2((double)dlt(r, DS_RD_SECTORS) / 2.0 / secs) : 0;
	out[DR_RAWAIT] = rd ? round2((double)dlt(r, DS_RD_MS) / (double)rd) : 0;
	out[DR_RAREQSZ] = rd ? round2((double)dlt(r, DS_RD_SECTORS) / 2.0 / (double)rd) : 0;
	out[DR_WPS] = secs > 0 ? round2((double)wr / secs) : 0;
	out[DR_WKBPS] = secs > 0 ? round2((double)dlt(r, DS_WR_SECTORS) / 2.0 / secs) : 0;
	out[DR_WAWAIT] = wr ? round2((double)dlt(r, DS_WR_MS) / (double)wr) : 0;
	out[DR_WAREQSZ] = wr ? round2((double)dlt(r, DS_WR_SECTORS) / 2.0 / (double)wr) : 0;
	out[DR_AQUSZ] = ms > 0 ? round2((double)dlt(r, DS_WEIGHTED_MS) / ms) : 0;
	out[DR_UTIL] = round2(util > 100 ? 100 : util);
}

/* One system_iostat record. */
static void disk_emit(struct probe_rt *rt, const struct si_counter_row *r)
{
	struct probe_rec rec;
	double rates[DR__COUNT];

	disk_rates(r, rates);
	probe_rec__begin(&rec, &TBL_system_iostat);
	probe_rec__str(&rec, r->name);
	for (unsigned int k = 0; k < DR__COUNT; k++)
		probe_rec__f64(&rec, rates[k]);
	probe_rec__u64(&rec, r->cur[DS_READS]);
	probe_rec__u64(&rec, r->cur[DS_RD_SECTORS] * 512u);
	probe_rec__u64(&rec, r->cur[DS_WRITES]);
	probe_rec__u64(&rec, r->cur[DS_WR_SECTORS] * 512u);
	probe_rec__f64(&rec, (double)r->cur[DS_IO_MS] / 1000.0);
	(void)probe_rt__emit(rt, &rec);
}

const struct si_counter_kind si_disk_kind = {"/proc/diskstats", disk_parse, disk_emit, "disk", "devices", SI_DISK_MAX};
