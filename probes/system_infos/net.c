/* net.c - the net sub-probe: TCP and UDP counters of /proc/net/snmp (system_tcp, system_udp). */
#include "system_infos.h"

#include <string.h>

#include "system_infos.meta.h"

#define SNMP_ORIGIN "/proc/net/snmp"

/* A counter we want from a "Proto: names" / "Proto: values" line pair. */
struct snmp_want {
	const char *name;
	uint64_t value;
	int found;
};

/*
 * Fill want[] from the line pair of protocol proto ("Tcp", "Udp"). Values may be negative
 * (Tcp MaxConn is -1): those read as 0, none of them are ones we report.
 */
static void snmp_find(const char *data, size_t len, const char *proto, struct snmp_want *want, unsigned int nwant)
{
	const char *p = data, *end = data + len;
	size_t plen = strlen(proto);

	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *vals, *vend, *n, *v;

		if ((size_t)(eol - p) <= plen || memcmp(p, proto, plen) || p[plen] != ':') {
			p = eol < end ? eol + 1 : end;
			continue;
		}
		/* The header line; the next line holds the values. */
		vals = eol < end ? eol + 1 : end;
		vend = si_line_end(vals, end);
		if ((size_t)(vend - vals) <= plen || memcmp(vals, proto, plen) || vals[plen] != ':')
			return;
		n = p + plen + 1;
		v = vals + plen + 1;
		for (;;) {
			const char *ne, *ve;
			uint64_t x = 0;

			n = si_skip_blanks(n, eol);
			v = si_skip_blanks(v, vend);
			if (n >= eol || v >= vend)
				break;
			for (ne = n; ne < eol && *ne != ' '; ne++)
				;
			for (ve = v; ve < vend && *ve != ' '; ve++)
				;
			if (*v != '-')
				(void)si_parse_u64(v, ve, 10, &x);
			for (unsigned int i = 0; i < nwant; i++) {
				if (strlen(want[i].name) == (size_t)(ne - n) &&
				    !memcmp(want[i].name, n, (size_t)(ne - n))) {
					want[i].value = x;
					want[i].found = 1;
				}
			}
			n = ne;
			v = ve;
		}
		return;
	}
}

/* RetransSegs over OutSegs in the period since the previous call, percent; 0 on the first call and when
 * a counter went backwards (reset, or a new network namespace's counters). */
static double retrans_percent(struct si_net *n, uint64_t out_segs, uint64_t retrans)
{
	double v = 0;

	if (n->have_prev && out_segs > n->prev_out_segs && retrans >= n->prev_retrans)
		v = si_percent((double)(retrans - n->prev_retrans), (double)(out_segs - n->prev_out_segs));
	n->prev_out_segs = out_segs;
	n->prev_retrans = retrans;
	n->have_prev = 1;
	return v;
}

/* One record of t: the origin, want[0..nwant)'s values, then *retrans_per when not NULL. */
static void snmp_emit(struct probe_rt *rt, const struct probe_table *t, const struct snmp_want *want,
		      unsigned int nwant, const double *retrans_per)
{
	struct probe_rec rec;

	probe_rec__begin(&rec, t);
	probe_rec__str(&rec, SNMP_ORIGIN);
	for (unsigned int i = 0; i < nwant; i++)
		probe_rec__u64(&rec, want[i].value);
	if (retrans_per)
		probe_rec__f64(&rec, *retrans_per);
	(void)probe_rt__emit(rt, &rec);
}

int si_net__report(struct si_net *n, struct probe_rt *rt)
{
	struct snmp_want tcp[] = {
		{"CurrEstab", 0, 0},   {"InSegs", 0, 0},      {"OutSegs", 0, 0},      {"RetransSegs", 0, 0},
		{"InErrs", 0, 0},      {"ActiveOpens", 0, 0}, {"PassiveOpens", 0, 0}, {"AttemptFails", 0, 0},
		{"EstabResets", 0, 0}, {"OutRsts", 0, 0},
	};
	struct snmp_want udp[] = {
		{"InDatagrams", 0, 0}, {"OutDatagrams", 0, 0}, {"NoPorts", 0, 0},
		{"InErrors", 0, 0},    {"RcvbufErrors", 0, 0}, {"SndbufErrors", 0, 0},
	};
	double retrans_per;
	int err = si_read_proc(SNMP_ORIGIN, &n->snmp, &n->warned);

	if (err)
		return err;
	snmp_find(n->snmp.data, n->snmp.len, "Tcp", tcp, sizeof(tcp) / sizeof(tcp[0]));
	snmp_find(n->snmp.data, n->snmp.len, "Udp", udp, sizeof(udp) / sizeof(udp[0]));

	if (tcp[1].found) {
		retrans_per = retrans_percent(n, tcp[2].value, tcp[3].value);
		snmp_emit(rt, &TBL_system_tcp, tcp, sizeof(tcp) / sizeof(tcp[0]), &retrans_per);
	}
	if (udp[0].found)
		snmp_emit(rt, &TBL_system_udp, udp, sizeof(udp) / sizeof(udp[0]), NULL);
	return 0;
}

void si_net__free(struct si_net *n)
{
	if (!n)
		return;
	probe_buf__free(&n->snmp);
}
