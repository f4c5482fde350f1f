/* util.c - small helpers the system_infos sub-probes share: one-line and /proc file reads, percentages,
 * growing arrays, and the per-device counter sub-probe (si_counters) that nic and disk are. */
#include "system_infos.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_array.h"

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

void *si_grow(void *arr, unsigned int need, unsigned int *cap, size_t size, unsigned int first, unsigned int max)
{
	size_t c = *cap;
	void *p;

	if (need > max && need > *cap)
		return NULL;
	p = probe_array_reserve(arr, &c, size, need, first, max);
	if (p)
		*cap = (unsigned int)c;
	return p;
}

void si_note_skipped(unsigned int *last, unsigned int skipped, const char *sub, const char *what, unsigned int max)
{
	if (skipped && skipped != *last)
		probe_log(PLOG_WARN, "%s: %u %s beyond the limit of %u are not reported", sub, skipped, what, max);
	*last = skipped;
}

/* The row named name[0..len), added (zeroed) if new; NULL when max rows are kept or the name is too long. */
static struct si_counter_row *row_get(struct si_counter_rows *t, const char *name, size_t len, unsigned int max)
{
	struct si_counter_row *rows;

	for (unsigned int i = 0; i < t->nrows; i++)
		if (strlen(t->rows[i].name) == len && !memcmp(t->rows[i].name, name, len))
			return &t->rows[i];
	if (len >= sizeof(t->rows[0].name))
		return NULL;
	rows = si_grow(t->rows, t->nrows + 1, &t->cap, sizeof(*rows), 16, max);
	if (!rows)
		return NULL;
	t->rows = rows;
	memset(&t->rows[t->nrows], 0, sizeof(t->rows[0]));
	memcpy(t->rows[t->nrows].name, name, len);
	return &t->rows[t->nrows++];
}

int si_counters__put(struct si_counters *c, const char *name, size_t len, const uint64_t *v, unsigned int n,
		     uint64_t now_ms)
{
	struct si_counter_row *r = row_get(&c->tab, name, len, c->kind->max);

	if (!r)
		return -ENOSPC;
	if (r->seen) /* the same name twice in one read cannot happen; keep the first */
		return 0;
	r->have_prev = r->cur_ms != 0;
	memcpy(r->prev, r->cur, sizeof(r->prev));
	r->prev_ms = r->cur_ms;
	memcpy(r->cur, v, (n < SI_COUNTERS_MAX ? n : SI_COUNTERS_MAX) * sizeof(r->cur[0]));
	r->cur_ms = now_ms;
	r->seen = 1;
	return 0;
}

unsigned int si_counters__parse(struct si_counters *c, const char *text, size_t len, uint64_t now_ms)
{
	struct si_counter_rows *t = &c->tab;
	unsigned int skipped;

	for (unsigned int i = 0; i < t->nrows; i++)
		t->rows[i].seen = 0;
	skipped = c->kind->parse(c, text, len, now_ms);
	for (unsigned int i = 0; i < t->nrows;) {
		if (!t->rows[i].seen)
			t->rows[i] = t->rows[--t->nrows];
		else
			i++;
	}
	return skipped;
}

int si_counters__sample(struct si_counters *c)
{
	const struct si_counter_kind *k = c->kind;
	unsigned int skipped;
	int err = si_read_proc(k->path, &c->tab.buf, &c->tab.warned);

	if (err)
		return err;
	skipped = si_counters__parse(c, c->tab.buf.data, c->tab.buf.len, probe_now_mono_ms());
	si_note_skipped(&c->tab.skipped, skipped, k->sub, k->what, k->max);
	return 0;
}

int si_counters__report(struct si_counters *c, struct probe_rt *rt, const char *dev_filter)
{
	int err = si_counters__sample(c);

	if (err)
		return err;
	for (unsigned int i = 0; i < c->tab.nrows; i++)
		if (!dev_filter || !dev_filter[0] || !strcmp(dev_filter, c->tab.rows[i].name))
			c->kind->emit(rt, &c->tab.rows[i]);
	return 0;
}

void si_counters__free(struct si_counters *c)
{
	if (!c)
		return;
	free(c->tab.rows);
	probe_buf__free(&c->tab.buf);
	memset(&c->tab, 0, sizeof(c->tab));
}
