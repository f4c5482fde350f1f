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

/* The counters a nic record holds, in its field order. */
static const unsigned int nic_counters[] = {
	ND_RX_BYTES, ND_RX_PACKETS, ND_RX_ERRS, ND_RX_DROP, ND_TX_BYTES, ND_TX_PACKETS, ND_TX_ERRS, ND_TX_DROP,
};

/* A /proc/net/dev text sampled at now (ms) (si_counter_kind.parse). Returns how many interfaces were left
 * out (beyond SI_NIC_MAX, or a name too long to keep). */
static unsigned int nic_parse(struct si_counters *c, const char *data, size_t len, uint64_t now)
{
	const char *p = data, *end = data + len;
	unsigned int skipped = 0;

	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *name = si_skip_blanks(p, eol);
		const char *colon = memchr(name, ':', (size_t)(eol - name));
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
		if (si_counters__put(c, name, (size_t)(colon - name), v, 16, now))
			skipped++;
	}
	return skipped;
}

static double rate_kib(const struct si_counter_row *r, unsigned int col)
{
	double secs = (double)(r->cur_ms - r->prev_ms) / 1000.0;

	if (!r->have_prev || secs <= 0 || r->cur[col] < r->prev[col])
		return 0;
	return (double)(r->cur[col] - r->prev[col]) / 1024.0 / secs;
}

/* One nic record (link state, speed and MTU from /sys). */
static void nic_emit(struct probe_rt *rt, const struct si_counter_row *r)
{
	struct probe_rec rec;
	char path[96], state[32], val[32];
	uint64_t speed = 0, mtu = 0;
	char *stop;
	long long s;

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
	for (unsigned int k = 0; k < sizeof(nic_counters) / sizeof(nic_counters[0]); k++)
		probe_rec__u64(&rec, r->cur[nic_counters[k]]);
	probe_rec__f64(&rec, (double)(uint64_t)(rate_kib(r, ND_RX_BYTES) * 100 + 0.5) / 100);
	probe_rec__f64(&rec, (double)(uint64_t)(rate_kib(r, ND_TX_BYTES) * 100 + 0.5) / 100);
	probe_rec__u64(&rec, speed);
	probe_rec__u64(&rec, mtu);
	(void)probe_rt__emit(rt, &rec);
}

const struct si_counter_kind si_nic_kind = {"/proc/net/dev", nic_parse, nic_emit, "nic", "interfaces", SI_NIC_MAX};
