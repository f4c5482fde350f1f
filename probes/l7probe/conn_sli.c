/* conn_sli.c - gala-gopher's SLI tables from l7probe's requests: redis_sli (ksliprobe: per Redis
 * server connection, mean and max latency of the period and their commands) and pg_sli / pg_max_sli
 * (pgsliprobe: per PostgreSQL server connection and statement type, mean and max latency). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l7_api.h"
#include "l7_trace.h"
#include "l7probe.meta.h"

/* Rows of one period at most; requests of more connections are not reported (counted). */
#define SLI_ROWS_MAX 16384u
#define SLI_BUCKETS  4096u

struct sli_row {
	struct sli_row *next;
	uint32_t tgid;
	int32_t fd;
	char method[24]; /* pg: statement type; redis: "" (the command is a label) */
	uint16_t family, client_port, server_port;
	uint8_t client_ip[16], server_ip[16];
	uint64_t n, sum, max;
	char last[24], max_cmd[24]; /* redis: commands of the last and of the slowest request */
};

struct l7_sli {
	enum l7_sli_kind kind;
	uint32_t nrows;
	uint64_t dropped;
	struct sli_row *b[SLI_BUCKETS];
};

struct l7_sli *l7_sli__new(enum l7_sli_kind kind)
{
	struct l7_sli *s = calloc(1, sizeof(*s));

	if (s)
		s->kind = kind;
	return s;
}

static void clear(struct l7_sli *s)
{
	for (uint32_t i = 0; i < SLI_BUCKETS; i++) {
		while (s->b[i]) {
			struct sli_row *r = s->b[i];

			s->b[i] = r->next;
			free(r);
		}
	}
	s->nrows = 0;
}

void l7_sli__free(struct l7_sli *s)
{
	if (!s)
		return;
	clear(s);
	free(s);
}

unsigned int l7_sli__rows(const struct l7_sli *s)
{
	return s->nrows;
}

static uint32_t row_hash(uint32_t tgid, int32_t fd, const char *method)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)tgid << 32 | (uint32_t)fd);

	for (const unsigned char *p = (const unsigned char *)method; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ (h >> 32));
}

void l7_sli__span(struct l7_sli *s, const struct l7_span *sp)
{
	const struct l7_rpc *rpc = sp->rpc;
	uint64_t lat = rpc->resp_ts_ns > rpc->req_ts_ns ? rpc->resp_ts_ns - rpc->req_ts_ns : 0;
	char op[24];
	const char *target;
	struct sli_row **pp, *r;

	if (sp->l7_role != 2)
		return; /* the server's view, as gala-gopher's probes measured it */
	if (s->kind == L7_SLI_REDIS ? sp->proto != L7_PROTO_REDIS : sp->proto != L7_PROTO_PGSQL)
		return;
	l7_api__split(sp->api, op, sizeof(op), &target);
	if (!op[0])
		snprintf(op, sizeof(op), "%s", "-");
	pp = &s->b[row_hash(sp->tgid, sp->fd, s->kind == L7_SLI_PG ? op : "") & (SLI_BUCKETS - 1)];
	for (r = *pp; r; r = r->next)
		if (r->tgid == sp->tgid && r->fd == sp->fd && (s->kind != L7_SLI_PG || !strcmp(r->method, op)))
			break;
	if (!r) {
		if (s->nrows >= SLI_ROWS_MAX || !(r = calloc(1, sizeof(*r)))) {
			s->dropped++;
			return;
		}
		r->tgid = sp->tgid;
		r->fd = sp->fd;
		if (s->kind == L7_SLI_PG)
			snprintf(r->method, sizeof(r->method), "%s", op);
		r->family = sp->family;
		r->client_port = sp->client_port;
		r->server_port = sp->server_port;
		memcpy(r->client_ip, sp->client_ip, 16);
		memcpy(r->server_ip, sp->server_ip, 16);
		r->next = *pp;
		*pp = r;
		s->nrows++;
	}
	r->n++;
	r->sum += lat;
	snprintf(r->last, sizeof(r->last), "%s", op);
	if (lat >= r->max) {
		r->max = lat;
		snprintf(r->max_cmd, sizeof(r->max_cmd), "%s", op);
	}
}

static void put_ip(struct probe_rec *rec, uint16_t family, const uint8_t *ip)
{
	char str[INET6_ADDRSTRLEN];

	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, ip, str, sizeof(str)))
		strcpy(str, "?");
	probe_rec__str(rec, str);
}

static void pg_rows(struct probe_rt *rt, const struct sli_row *r, int max)
{
	static struct probe_rec rec;

	probe_rec__begin(&rec, max ? &TBL_pg_max_sli : &TBL_pg_sli);
	probe_rec__u64(&rec, r->tgid);
	probe_rec__i64(&rec, r->fd);
	probe_rec__str(&rec, "pgsql");
	probe_rec__str(&rec, r->method);
	put_ip(&rec, r->family, r->server_ip);
	probe_rec__u64(&rec, r->server_port);
	put_ip(&rec, r->family, r->client_ip);
	probe_rec__u64(&rec, r->client_port);
	probe_rec__u64(&rec, max ? r->max : r->sum / r->n);
	(void)probe_rt__emit(rt, &rec);
}

static void redis_row(struct probe_rt *rt, const struct sli_row *r)
{
	static struct probe_rec rec;

	probe_rec__begin(&rec, &TBL_redis_sli);
	probe_rec__u64(&rec, r->tgid);
	probe_rec__i64(&rec, r->fd);
	probe_rec__str(&rec, "redis");
	put_ip(&rec, r->family, r->server_ip);
	probe_rec__u64(&rec, r->server_port);
	put_ip(&rec, r->family, r->client_ip);
	probe_rec__u64(&rec, r->client_port);
	probe_rec__str(&rec, r->last);
	probe_rec__u64(&rec, r->sum / r->n);
	probe_rec__str(&rec, r->max_cmd);
	probe_rec__u64(&rec, r->max);
	(void)probe_rt__emit(rt, &rec);
}

static void slow_event(struct probe_rt *rt, const struct l7_sli *s, const struct sli_row *r)
{
	char id[64], body[192], labels[96];
	size_t used = 0;

	snprintf(labels, sizeof(labels), "%u", r->tgid);
	snprintf(id, sizeof(id), "%u_%d", r->tgid, (int)r->fd);
	snprintf(body, sizeof(body), "%s request %s took %llu ns on connection %s (process %u)",
		 s->kind == L7_SLI_REDIS ? "Redis" : "PostgreSQL", r->max_cmd, (unsigned long long)r->max, id, r->tgid);
	{
		char tg[16];

		snprintf(tg, sizeof(tg), "%u", r->tgid);
		labels[0] = '\0';
		gg_event_label(labels, sizeof(labels), &used, "tgid", tg);
	}
	(void)gg_event_emit(rt, s->kind == L7_SLI_REDIS ? "sli" : "pg_sli", id, "max_rtt_nsec", "WARN", body, NULL,
			    labels);
}

void l7_sli__report(struct l7_sli *s, struct probe_rt *rt, uint64_t thr_ns)
{
	for (uint32_t i = 0; rt && i < SLI_BUCKETS; i++) {
		for (const struct sli_row *r = s->b[i]; r; r = r->next) {
			if (!r->n)
				continue;
			if (s->kind == L7_SLI_REDIS) {
				redis_row(rt, r);
			} else {
				pg_rows(rt, r, 0);
				pg_rows(rt, r, 1);
			}
			if (thr_ns && r->max >= thr_ns)
				slow_event(rt, s, r);
		}
	}
	clear(s);
}
