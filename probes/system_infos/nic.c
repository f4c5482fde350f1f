/* nic.c - the nic sub-probe: /proc/net/dev counters per interface, rates, link speed, MTU and state. */
#include "system_infos.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "system_infos.meta.h"

/* /proc/net/dev columns. */
enum {
	ND_RX_BYTES = 0,
	ND_RX_PACKETS = 1,
	ND_RX_ERRS = 2,
	ND_RX_DROP = 3,
	ND_TX_BYTES = 8,
	ND_TX_PACKETS = 9,
	ND_TX_ERRS = 10,
	ND_TX_DROP = 11,
};

/* A /proc/net/dev text sampled at now (ms): rows move on, interfaces gone are forgotten. Returns how
 * many interfaces were left out (beyond SI_NIC_MAX, or a name too long to keep). */
static unsigned int nic_parse(struct si_nic *n, const char *data, size_t len, uint64_t now)
{
	const char *p = data, *end = data + len;
	unsigned int skipped = 0;

	si_counter_rows__begin(&n->tab);
	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *name = si_skip_blanks(p, eol);
		const char *colon = memchr(name, ':', (size_t)(eol - name));
		struct si_counter_row *row;
		uint64_t v[16] = {0};
		unsigned int k;
		const char *q;

		p = eol < end ? eol + 1 : end;
		if (!colon || colon == name || memchr(name, '|', (size_t)(colon - name)))
			continue; /* the two header lines */
		for (k = 0, q = colon + 1; k < 16; k++) {
			q = si_parse_u64(si_skip_blanks(q, eol), eol, 10, &v[k]);
			if (!q)
				break;
		}
		if (k < 16)
			continue;
		row = si_counter_rows__get(&n->tab, name, (size_t)(colon - name), SI_NIC_MAX);
		if (!row) {
			skipped++;
			continue;
		}
		if (row->seen) /* the same name twice cannot happen; keep the first */
			continue;
		si_counter_row__set(row, v, 16, now);
	}
	/* Forget interfaces that went away, so a new one with the same name starts afresh. */
	si_counter_rows__end(&n->tab);
	return skipped;
}

int si_nic__sample(struct si_nic *n)
{
	unsigned int skipped;
	int err = si_read_proc("/proc/net/dev", &n->dev, &n->warned);

	if (err)
		return err;
	skipped = nic_parse(n, n->dev.data, n->dev.len, probe_now_mono_ms());
	si_note_skipped(&n->skipped, skipped, "nic", "interfaces", SI_NIC_MAX);
	return 0;
}

static double rate_kib(const struct si_counter_row *r, unsigned int col)
{
	double secs = (double)(r->cur_ms - r->prev_ms) / 1000.0;

	if (!r->have_prev || secs <= 0 || r->cur[col] < r->prev[col])
		return 0;
	return (double)(r->cur[col] - r->prev[col]) / 1024.0 / secs;
}

int si_nic__report(struct si_nic *n, struct probe_rt *rt, const char *dev_filter)
{
	struct probe_rec rec;
	int err = si_nic__sample(n);

	if (err)
		return err;
	for (unsigned int i = 0; i < n->tab.nrows; i++) {
		const struct si_counter_row *r = &n->tab.rows[i];
		char path[96], state[32], val[32];
		uint64_t speed = 0, mtu = 0;
		char *stop;
		long long s;

		if (dev_filter && dev_filter[0] && strcmp(dev_filter, r->name))
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", r->name);
		if (si_read_line(path, state, sizeof(state)) || !state[0])
			snprintf(state, sizeof(state), "unknown");
		/* Virtual and down interfaces have no speed (EINVAL or -1): report 0. */
		snprintf(path, sizeof(path), "/sys/class/net/%s/speed", r->name);
		if (!si_read_line(path, val, sizeof(val))) {
			s = strtoll(val, &stop, 10);
			if (stop != val && s > 0)
				speed = (uint64_t)s;
		}
		snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", r->name);
		if (!si_read_line(path, val, sizeof(val)))
			(void)si_parse_u64(val, val + strlen(val), 10, &mtu);

		probe_rec__begin(&rec, &TBL_nic);
		probe_rec__str(&rec, r->name);
		probe_rec__str(&rec, state);
		probe_rec__u64(&rec, r->cur[ND_RX_BYTES]);
		probe_rec__u64(&rec, r->cur[ND_RX_PACKETS]);
		probe_rec__u64(&rec, r->cur[ND_RX_ERRS]);
		probe_rec__u64(&rec, r->cur[ND_RX_DROP]);
		probe_rec__u64(&rec, r->cur[ND_TX_BYTES]);
		probe_rec__u64(&rec, r->cur[ND_TX_PACKETS]);
		probe_rec__u64(&rec, r->cur[ND_TX_ERRS]);
		probe_rec__u64(&rec, r->cur[ND_TX_DROP]);
		probe_rec__f64(&rec, (double)(uint64_t)(rate_kib(r, ND_RX_BYTES) * 100 + 0.5) / 100);
		probe_rec__f64(&rec, (double)(uint64_t)(rate_kib(r, ND_TX_BYTES) * 100 + 0.5) / 100);
		probe_rec__u64(&rec, speed);
		probe_rec__u64(&rec, mtu);
		(void)probe_rt__emit(rt, &rec);
	}
	return 0;
}

void si_nic__free(struct si_nic *n)
{
	if (!n)
		return;
	si_counter_rows__free(&n->tab);
	probe_buf__free(&n->dev);
	memset(n, 0, sizeof(*n));
}
