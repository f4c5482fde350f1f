/* signals.c - what autotrace's triggers measure from /proc: host CPU time, TCP retransmits, and one
 * process's CPU time and RSS. Plain reads of small files: nothing is scanned per process but the
 * processes the sampler saw on a CPU. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "signals.h"

/* The whole (small) file into buf, NUL-terminated. Bytes read, or a negative errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, off = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)off + 1 < len && (n = read(fd, buf + off, len - 1 - (size_t)off)) > 0)
		off += n;
	close(fd);
	buf[off] = '\0';
	return off;
}

int at_read_host_cpu(uint64_t *ret_busy, uint64_t *ret_total)
{
	char buf[512];
	unsigned long long v[10] = {0};
	uint64_t total = 0;
	ssize_t n = read_small("/proc/stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6], &v[7], &v[8], &v[9]) < 8)
		return -EINVAL;
	/* guest and guest_nice (8, 9) are already in user and nice */
	for (int i = 0; i < 8; i++)
		total += v[i];
	*ret_total = total;
	*ret_busy = total - v[3] - v[4]; /* idle, iowait */
	return 0;
}

int at_read_retrans(uint64_t *ret)
{
	static char buf[8192];
	ssize_t n = read_small("/proc/net/snmp", buf, sizeof(buf));
	char *hdr, *val, *save1 = NULL, *save2 = NULL, *h, *v;

	if (n < 0)
		return (int)n;
	/* "Tcp: name name ...\nTcp: value value ...": the column named RetransSegs */
	hdr = strstr(buf, "\nTcp: ");
	val = hdr ? strstr(hdr + 1, "\nTcp: ") : NULL;
	if (!hdr || !val)
		return -ENOENT;
	*strchr(hdr + 1, '\n') = '\0';
	val++;
	if (strchr(val, '\n'))
		*strchr(val, '\n') = '\0';
	for (h = strtok_r(hdr + 1, " ", &save1), v = strtok_r(val, " ", &save2); h && v;
	     h = strtok_r(NULL, " ", &save1), v = strtok_r(NULL, " ", &save2)) {
		if (!strcmp(h, "RetransSegs")) {
			*ret = strtoull(v, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

int at_read_proc(uint32_t tgid, struct at_proc_sample *ret)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, start, pages_rss = 0, size = 0;
	ssize_t n;
	size_t clen;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* comm may hold spaces and ')': the fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p || !strchr(buf, '('))
		return -EINVAL;
	clen = (size_t)(p - strchr(buf, '(') - 1);
	if (clen >= sizeof(ret->comm))
		clen = sizeof(ret->comm) - 1;
	memcpy(ret->comm, strchr(buf, '(') + 1, clen);
	ret->comm[clen] = '\0';
	/* state is field 3; utime 14, stime 15, starttime 22 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &ut,
		   &st, &start) != 3)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%u/statm", tgid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (sscanf(buf, "%llu %llu", &size, &pages_rss) != 2)
		return -EINVAL;
	ret->cpu_ticks = ut + st;
	ret->start_ticks = start;
	ret->rss_kb = pages_rss * (uint64_t)(sysconf(_SC_PAGESIZE) / 1024);
	return 0;
}
