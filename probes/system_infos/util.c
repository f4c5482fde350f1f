/* util.c - small helpers the system_infos sub-probes share: one-line file reads, percentages and the
 * rows of per-device counters that nic and disk keep between reads. */
#include "system_infos.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int si_read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

double si_percent(double part, double whole)
{
	double v;

	if (!(whole > 0) || !(part >= 0))
		return 0;
	v = part * 100.0 / whole;
	return (double)(uint64_t)(v * 100.0 + 0.5) / 100.0;
}

int si_read_proc(const char *path, struct probe_buf *b, int *warned)
{
	int err = probe_read_file(path, b, SI_PROC_FILE_MAX);

	if (err) {
		if (!*warned)
			probe_log(PLOG_WARN, "cannot read %s: %s", path, strerror(-err));
		*warned = 1;
	}
	return err;
}

void si_note_skipped(unsigned int *last, unsigned int skipped, const char *sub, const char *what, unsigned int max)
{
	if (skipped && skipped != *last)
		probe_log(PLOG_WARN, "%s: %u %s beyond the limit of %u are not reported", sub, skipped, what, max);
	*last = skipped;
}

struct si_counter_row *si_counter_rows__get(struct si_counter_rows *t, const char *name, size_t len, unsigned int max)
{
	for (unsigned int i = 0; i < t->nrows; i++)
		if (strlen(t->rows[i].name) == len && !memcmp(t->rows[i].name, name, len))
			return &t->rows[i];
	if (t->nrows >= max || len >= sizeof(t->rows[0].name))
		return NULL;
	if (t->nrows == t->cap) {
		unsigned int cap = t->cap ? t->cap * 2 : 16;
		struct si_counter_row *rows = realloc(t->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		t->rows = rows;
		t->cap = cap;
	}
	memset(&t->rows[t->nrows], 0, sizeof(t->rows[0]));
	memcpy(t->rows[t->nrows].name, name, len);
	return &t->rows[t->nrows++];
}

void si_counter_rows__begin(struct si_counter_rows *t)
{
	for (unsigned int i = 0; i < t->nrows; i++)
		t->rows[i].seen = 0;
}

void si_counter_row__set(struct si_counter_row *r, const uint64_t *v, unsigned int n, uint64_t now_ms)
{
	r->have_prev = r->cur_ms != 0;
	memcpy(r->prev, r->cur, sizeof(r->prev));
	r->prev_ms = r->cur_ms;
	memcpy(r->cur, v, (n < SI_COUNTERS_MAX ? n : SI_COUNTERS_MAX) * sizeof(r->cur[0]));
	r->cur_ms = now_ms;
	r->seen = 1;
}

void si_counter_rows__end(struct si_counter_rows *t)
{
	for (unsigned int i = 0; i < t->nrows;) {
		if (!t->rows[i].seen)
			t->rows[i] = t->rows[--t->nrows];
		else
			i++;
	}
}

void si_counter_rows__free(struct si_counter_rows *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
