/* fs.c - the fs sub-probe: statvfs of each mounted filesystem that holds data (system_df). */
#include "system_infos.h"

#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "system_infos.meta.h"

/* Virtual filesystems with no space to report (as node_exporter's default exclusion list). */
static const char *const pseudo_fs[] = {
	"autofs",     "binfmt_misc", "bpf",    "cgroup",  "cgroup2",  "configfs", "debugfs", "devpts",
	"fusectl",    "hugetlbfs",   "mqueue", "nsfs",	  "proc",     "procfs",	  "pstore",  "rpc_pipefs",
	"securityfs", "selinuxfs",   "sysfs",  "tracefs", "efivarfs", "ramfs",	  "rootfs",
};

static int is_pseudo(const char *type)
{
	for (unsigned int i = 0; i < sizeof(pseudo_fs) / sizeof(pseudo_fs[0]); i++)
		if (!strcmp(type, pseudo_fs[i]))
			return 1;
	return 0;
}

/* Copy one space-separated /proc/mounts field into out, undoing the \ooo octal escapes. */
static const char *mount_field(const char *p, const char *eol, char *out, size_t len)
{
	size_t n = 0;

	p = si_skip_blanks(p, eol);
	while (p < eol && *p != ' ') {
		char c = *p++;

		if (c == '\\' && eol - p >= 3 && p[0] >= '0' && p[0] <= '3' && p[1] >= '0' && p[1] <= '7' &&
		    p[2] >= '0' && p[2] <= '7') {
			c = (char)((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0'));
			p += 3;
		}
		if (n + 1 < len)
			out[n++] = c;
	}
	out[n] = '\0';
	return p;
}

/* Is mnt mounted again on a later line of data..upto (the later mount hides this one)? */
static int mounted_over_later(const char *data, const char *upto, const char *mnt)
{
	const char *p = data;
	char dev[8], m[4096];

	while (p < upto) {
		const char *eol = si_line_end(p, upto);
		const char *q = mount_field(p, eol, dev, sizeof(dev));

		mount_field(q, eol, m, sizeof(m));
		if (!strcmp(m, mnt))
			return 1;
		p = eol < upto ? eol + 1 : upto;
	}
	return 0;
}

int si_fs__report(struct si_fs *f, struct probe_rt *rt)
{
	const char *p, *end;
	unsigned int count = 0, skipped = 0;
	int err = si_read_proc("/proc/self/mounts", &f->mounts, &f->warned);

	if (err)
		return err;
	p = f->mounts.data;
	end = p + f->mounts.len;
	/* The last mount on a path is the one statvfs sees: report a path once, at its last line. */
	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *line = p;
		char dev[1024], mnt[4096], type[64];
		struct probe_rec rec;
		struct statvfs sv;
		const char *q;
		double frsize, blocks_kb, free_kb, avail_kb, used_kb;
		uint64_t files, ffree;

		p = eol < end ? eol + 1 : end;
		q = mount_field(line, eol, dev, sizeof(dev));
		q = mount_field(q, eol, mnt, sizeof(mnt));
		mount_field(q, eol, type, sizeof(type));
		if (!mnt[0] || !type[0] || is_pseudo(type))
			continue;
		if (mounted_over_later(p, end, mnt))
			continue;
		if (statvfs(mnt, &sv) < 0 || sv.f_blocks == 0)
			continue;
		if (count >= SI_FS_MAX) {
			skipped++;
			continue;
		}
		count++;
		frsize = sv.f_frsize ? (double)sv.f_frsize : (double)sv.f_bsize;
		blocks_kb = (double)sv.f_blocks * frsize / 1024.0;
		free_kb = (double)sv.f_bfree * frsize / 1024.0;
		avail_kb = (double)sv.f_bavail * frsize / 1024.0;
		used_kb = blocks_kb > free_kb ? blocks_kb - free_kb : 0;
		files = sv.f_files;
		ffree = sv.f_ffree <= sv.f_files ? sv.f_ffree : sv.f_files;

		probe_rec__begin(&rec, &TBL_system_df);
		probe_rec__str(&rec, mnt);
		probe_rec__str(&rec, dev);
		probe_rec__str(&rec, type);
		probe_rec__u64(&rec, files);
		probe_rec__u64(&rec, files - ffree);
		probe_rec__u64(&rec, ffree);
		probe_rec__f64(&rec, si_percent((double)(files - ffree), (double)files));
		probe_rec__f64(&rec, blocks_kb);
		probe_rec__f64(&rec, used_kb);
		probe_rec__f64(&rec, avail_kb);
		probe_rec__f64(&rec, si_percent(used_kb, used_kb + avail_kb));
		(void)probe_rt__emit(rt, &rec);
	}
	if (skipped && skipped != f->skipped)
		probe_log(PLOG_WARN, "fs: %u filesystems beyond the limit of %u are not reported", skipped, SI_FS_MAX);
	f->skipped = skipped;
	return 0;
}

void si_fs__free(struct si_fs *f)
{
	if (!f)
		return;
	probe_buf__free(&f->mounts);
}
