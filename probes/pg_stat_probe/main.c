/* main.c - pg_stat_probe ("opengauss_sli"): transactions per database of openGauss and PostgreSQL
 * servers, read over SQL from pg_stat_database (libpq), as gala-gopher's pg_stat_probe.py did, with the
 * probe's own queries taken out of the counts and every failure counted. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <unistd.h>
#include <sys/stat.h>

#include <libpq-fe.h>

#include "clock.h"
#include "fsutil.h"
#include "pg_stat_probe.meta.h"
#include "pgs_conf.h"
#include "pgs_owner.h"
#include "pgs_targets.h"
#include "probe.h"
#include "probe_runner.h"

extern const struct gg_contract gg_contract_pg_stat_probe;
#define CONTRACT (&gg_contract_pg_stat_probe)

#define DEFAULT_CONF "/etc/gala-gopher/extend_probes/pg_stat_probe.conf"
#define CONF_MAX     (64u << 10)
#define DBS_MAX	     1024u /* databases followed per server */
#define DEBT_MAX     16u   /* own transactions not yet seen in the server's counts, at most */
#define OPT_CONF     1

/* One database of a server, as the last polls saw it. */
struct pgs_db {
	uint32_t datid;
	char datname[PGS_NAME_LEN];
	uint64_t raw_commit, raw_rollback; /* pg_stat_database's, at the last poll */
	uint64_t commit, rollback;	   /* the counters reported */
	uint64_t debt;			   /* own transactions not yet seen in raw_commit */
	uint64_t seen;			   /* the poll that last listed it */
};

struct pgs_server {
	struct pgs_target t;
	PGconn *conn;
	uint32_t tgid;	      /* the listening process on this host, 0: none found */
	uint64_t pending_own; /* own transactions in the connected database since the last read */
	struct pgs_db *dbs;   /* DBS_MAX */
	unsigned int ndbs;
	uint64_t polls, connect_errors, query_errors, rows_dropped;
	int up, failing;
};

struct pgs_ctx {
	struct probe_rt *rt;
	struct pgs_conf base, cur;
	const char *conf_path;
	int conf_given;			/* --conf named: its absence is an error */
	struct pgs_targets file;	/* from the conf file */
	struct pgs_targets live, next;	/* from the last live configuration's gaussdb snoopers */
	int have_live, have_next;
	struct pgs_server srv[PGS_TARGETS_MAX];
	unsigned int nsrv;
};

static const char notes[] =
	"Servers: the live configuration's \"gaussdb\" snoopers ({dbip, dbport, dbname, dbuser, dbpass}), else\n"
	"gala-gopher's pg_stat_probe.conf (--conf, default " DEFAULT_CONF "):\n"
	"  servers:\n"
	"    - ip: \"127.0.0.1\"\n"
	"      port: 5432\n"
	"      dbname: \"postgres\"\n"
	"      user: \"monitor\"\n"
	"      password: \"...\"\n"
	"Each report period every server is asked for pg_stat_database over one connection kept open (libpq;\n"
	"TLS when the server offers it). Table pg_tps: per database, tps = transactions committed (a counter:\n"
	"the probe's own queries taken out) and xact_rollback; pg_stat_probe_stats: per server, up, polls,\n"
	"connect_errors, query_errors, rows_dropped. Passwords never reach the command line or the logs.\n";

static const struct probe_opt own_opts[] = {
	{"conf", 'c', required_argument, OPT_CONF, "FILE",
	 "gala-gopher's pg_stat_probe.conf: the servers when no gaussdb snoopers are given (default " DEFAULT_CONF
	 ")"},
};

static int own_cb(void *arg, int id, const char *val)
{
	struct pgs_ctx *ctx = arg;

	if (id == OPT_CONF) {
		if (!val[0]) {
			fprintf(stderr, "pg_stat_probe: --conf needs a file\n");
			return 2;
		}
		ctx->conf_path = val;
		ctx->conf_given = 1;
	}
	return 0;
}

/* ---- libpq with deadlines --------------------------------------------------------------------- */

/* libpq's message, on one line. */
static void pq_msg(const PGconn *c, char *err, size_t errlen)
{
	const char *m = c ? PQerrorMessage(c) : "out of memory";
	size_t n = 0;

	for (; *m && n + 1 < errlen; m++)
		err[n++] = *m == '\n' || *m == '\r' ? ' ' : *m;
	while (n && err[n - 1] == ' ')
		n--;
	err[n] = 0;
}

/* Connect (keywords, never a connection string built from the target's text). NULL + err on failure. */
static PGconn *pg_connect(const struct pgs_target *t, unsigned int timeout_s, char *err, size_t errlen)
{
	static const char *const kw[] = {"host", "port", "dbname", "user", "password", "application_name",
					 "keepalives_idle", "keepalives_interval", "keepalives_count", NULL};
	char port[8];
	const char *val[] = {t->ip, port, t->dbname, t->user, t->password, "gala-gopher", "30", "10", "3", NULL};
	uint64_t deadline = gg_mono_ns() + (uint64_t)timeout_s * 1000000000ull;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	PGconn *c;

	snprintf(port, sizeof(port), "%u", t->port);
	c = PQconnectStartParams(kw, val, 0);
	if (!c || PQstatus(c) == CONNECTION_BAD) {
		pq_msg(c, err, errlen);
		PQfinish(c);
		return NULL;
	}
	while (st != PGRES_POLLING_OK) {
		if (st == PGRES_POLLING_FAILED) {
			pq_msg(c, err, errlen);
			PQfinish(c);
			return NULL;
		}
		if (probe_wait_fd(PQsocket(c), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline)) {
			snprintf(err, errlen, "no answer in %u s", timeout_s);
			PQfinish(c);
			return NULL;
		}
		st = PQconnectPoll(c);
	}
	return c;
}

/* Run sql (one Query message: one transaction) and return its last result with tuples; NULL + err on
 * an error, a timeout (the connection is then unusable) or no rows result. */
static PGresult *pg_query(PGconn *c, const char *sql, unsigned int timeout_s, char *err, size_t errlen)
{
	uint64_t deadline = gg_mono_ns() + (uint64_t)timeout_s * 1000000000ull;
	PGresult *rows = NULL, *r;
	int failed = 0;

	if (!PQsendQuery(c, sql)) {
		pq_msg(c, err, errlen);
		return NULL;
	}
	for (;;) {
		while (!PQisBusy(c)) {
			r = PQgetResult(c);
			if (!r) {
				if (!rows && !failed)
					snprintf(err, errlen, "no rows");
				if (failed) {
					PQclear(rows);
					rows = NULL;
				}
				return rows;
			}
			if (PQresultStatus(r) == PGRES_TUPLES_OK) {
				PQclear(rows);
				rows = r;
				continue;
			}
			if (PQresultStatus(r) != PGRES_COMMAND_OK && !failed) {
				const char *m = PQresultErrorMessage(r);

				snprintf(err, errlen, "%.*s", (int)strcspn(m, "\r\n"), m);
				failed = 1;
			}
			PQclear(r);
		}
		if (probe_wait_fd(PQsocket(c), POLLIN, deadline)) {
			snprintf(err, errlen, "no answer in %u s", timeout_s);
			PQclear(rows);
			return NULL;
		}
		if (!PQconsumeInput(c)) {
			pq_msg(c, err, errlen);
			PQclear(rows);
			return NULL;
		}
	}
}

/* ---- servers ----------------------------------------------------------------------------------- */

static void server_close(struct pgs_server *s)
{
	PQfinish(s->conn);
	s->conn = NULL;
	s->up = 0;
}

/* The database this server's connection is in: libpq's answer once connected; before, the target's,
 * with libpq's defaults (the user's name; the user: this process's). */
static const char *own_db(const struct pgs_server *s)
{
	const struct passwd *pw;

	if (s->conn && PQdb(s->conn) && PQdb(s->conn)[0])
		return PQdb(s->conn);
	if (s->t.dbname[0])
		return s->t.dbname;
	if (s->t.user[0])
		return s->t.user;
	pw = getpwuid(geteuid());
	return pw && pw->pw_name[0] ? pw->pw_name : "?";
}

static int server_connect(struct pgs_ctx *ctx, struct pgs_server *s)
{
	char err[256];
	uint32_t tgid = 0;

	s->conn = pg_connect(&s->t, ctx->cur.timeout_s, err, sizeof(err));
	if (!s->conn) {
		s->connect_errors++;
		if (!s->failing++)
			probe_log(PLOG_WARN, "%s:%u/%s: cannot connect: %s (tried again every period)", s->t.ip,
				  s->t.port, s->t.dbname, err);
		return -ECONNREFUSED;
	}
	if (pgs_owner__listener(PQsocket(s->conn), &tgid) < 0)
		tgid = 0;
	s->tgid = tgid;
	s->pending_own++; /* the connection's start is a transaction of its database */
	probe_log(PLOG_INFO, "%s:%u/%s: connected (server version %d, tgid %u)", s->t.ip, s->t.port, own_db(s),
		  PQserverVersion(s->conn), tgid);
	return 0;
}

static struct pgs_db *db_find(struct pgs_server *s, uint32_t datid)
{
	for (unsigned int i = 0; i < s->ndbs; i++)
		if (s->dbs[i].datid == datid)
			return &s->dbs[i];
	return NULL;
}

/* A raw counter's growth since the last poll (a smaller value: the server's statistics were reset, or
 * it restarted without them: everything since counts). */
static uint64_t growth(uint64_t now, uint64_t last)
{
	return now >= last ? now - last : now;
}

/* One row of pg_stat_database into the server's databases (the own database pays its debt first). */
static void db_update(struct pgs_server *s, uint64_t poll, uint32_t datid, const char *datname, uint64_t commit,
		      uint64_t rollback)
{
	struct pgs_db *d = db_find(s, datid);
	int own = !strcmp(datname, own_db(s));
	uint64_t g, take;

	if (!d) {
		if (s->ndbs >= DBS_MAX) {
			s->rows_dropped++;
			return;
		}
		d = &s->dbs[s->ndbs++];
		memset(d, 0, sizeof(*d));
		d->datid = datid;
	}
	snprintf(d->datname, sizeof(d->datname), "%s", datname);
	if (own) {
		d->debt += s->pending_own;
		s->pending_own = 0;
		if (d->debt > DEBT_MAX)
			d->debt = DEBT_MAX;
	}
	g = growth(commit, d->raw_commit);
	take = g < d->debt ? g : d->debt;
	d->debt -= take;
	d->commit += g - take;
	d->rollback += growth(rollback, d->raw_rollback);
	d->raw_commit = commit;
	d->raw_rollback = rollback;
	d->seen = poll;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static void emit_dbs(struct pgs_ctx *ctx, const struct pgs_server *s)
{
	static struct probe_rec r;

	for (unsigned int i = 0; i < s->ndbs; i++) {
		const struct pgs_db *d = &s->dbs[i];

		probe_rec__begin(&r, &TBL_pg_tps);
		probe_rec__u64(&r, s->tgid);
		probe_rec__u64(&r, d->datid);
		probe_rec__str(&r, "POSTGRE");
		probe_rec__str(&r, "0");
		probe_rec__str(&r, s->t.ip);
		probe_rec__u64(&r, s->t.port);
		probe_rec__str(&r, d->datname);
		probe_rec__u64(&r, d->commit);
		probe_rec__u64(&r, d->rollback);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

/* One poll of a server: pg_stat_database's rows (template databases left out, as gala-gopher did). */
static void server_poll(struct pgs_ctx *ctx, struct pgs_server *s)
{
	static const char sql[] = "SELECT datid, datname, xact_commit, xact_rollback FROM pg_stat_database "
				  "WHERE datname IS NOT NULL AND datname NOT IN ('template0', 'template1')";
	/* PostgreSQL 15+: the statistics of this transaction are written when it ends, not up to 10 s later */
	static const char sql15[] = "SELECT pg_stat_force_next_flush(); "
				    "SELECT datid, datname, xact_commit, xact_rollback FROM pg_stat_database "
				    "WHERE datname IS NOT NULL AND datname NOT IN ('template0', 'template1')";
	char err[256];
	PGresult *res;
	unsigned int w = 0;
	int n;

	if (!s->conn && server_connect(ctx, s))
		return;
	res = pg_query(s->conn, PQserverVersion(s->conn) >= 150000 ? sql15 : sql, ctx->cur.timeout_s, err,
		       sizeof(err));
	if (!res || PQnfields(res) != 4) {
		s->query_errors++;
		if (!s->failing++)
			probe_log(PLOG_WARN, "%s:%u/%s: reading pg_stat_database failed: %s (connecting again next period)",
				  s->t.ip, s->t.port, own_db(s), res ? "unexpected columns" : err);
		PQclear(res);
		server_close(s);
		return;
	}
	s->polls++;
	n = PQntuples(res);
	for (int i = 0; i < n; i++) {
		uint64_t datid, commit, rollback;

		if (parse_u64(PQgetvalue(res, i, 0), &datid) || datid > UINT32_MAX ||
		    parse_u64(PQgetvalue(res, i, 2), &commit) || parse_u64(PQgetvalue(res, i, 3), &rollback))
			continue;
		db_update(s, s->polls, (uint32_t)datid, PQgetvalue(res, i, 1), commit, rollback);
	}
	PQclear(res);
	s->pending_own++; /* this poll's transaction, seen by the next one */
	/* databases dropped since: their series end */
	for (unsigned int i = 0; i < s->ndbs; i++)
		if (s->dbs[i].seen == s->polls)
			s->dbs[w++] = s->dbs[i];
	s->ndbs = w;
	if (s->failing)
		probe_log(PLOG_INFO, "%s:%u/%s: polled again after %d failed attempts", s->t.ip, s->t.port, own_db(s),
			  s->failing);
	s->failing = 0;
	s->up = 1;
	emit_dbs(ctx, s);
}

static void emit_stats(struct pgs_ctx *ctx, const struct pgs_server *s)
{
	static struct probe_rec r;

	probe_rec__begin(&r, &TBL_pg_stat_probe_stats);
	probe_rec__str(&r, s->t.ip);
	probe_rec__u64(&r, s->t.port);
	probe_rec__str(&r, own_db(s));
	probe_rec__u64(&r, (uint64_t)s->up);
	probe_rec__u64(&r, s->polls);
	probe_rec__u64(&r, s->connect_errors);
	probe_rec__u64(&r, s->query_errors);
	probe_rec__u64(&r, s->rows_dropped);
	(void)probe_rt__emit(ctx->rt, &r);
}

static void report(void *arg)
{
	struct pgs_ctx *ctx = arg;

	for (unsigned int i = 0; i < ctx->nsrv && !probe_rt__stopping(ctx->rt); i++) {
		server_poll(ctx, &ctx->srv[i]);
		emit_stats(ctx, &ctx->srv[i]);
	}
	(void)probe_rt__flush(ctx->rt);
}

/* ---- targets ----------------------------------------------------------------------------------- */

/* Read the conf file (a regular file, not writable by others: it names the servers root connects to). */
static int read_conf(struct pgs_ctx *ctx)
{
	char fdpath[32], err[200], *text = NULL;
	struct stat st;
	size_t len = 0;
	int fd, r;

	fd = open(ctx->conf_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT && !ctx->conf_given)
			return 0;
		probe_log(PLOG_ERROR, "%s: %s", ctx->conf_path, strerror(-r));
		return r;
	}
	r = fstat(fd, &st) ? -errno : 0;
	if (!r && (!S_ISREG(st.st_mode) || (st.st_mode & S_IWOTH) || st.st_size > (off_t)CONF_MAX)) {
		probe_log(PLOG_ERROR, "%s: not a regular file of at most %u bytes that only its owner's group may write",
			  ctx->conf_path, CONF_MAX);
		r = -EPERM;
	}
	/* the file checked, not whatever the path names by now */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (!r)
		r = gg_read_file(fdpath, 0, CONF_MAX, &text, &len);
	close(fd);
	if (r)
		probe_log(PLOG_ERROR, "%s: %s", ctx->conf_path, strerror(-r));
	else if ((r = pgs_targets__from_conf(text, len, &ctx->file, err, sizeof(err))))
		probe_log(PLOG_ERROR, "%s: %s", ctx->conf_path, err);
	else if (ctx->file.dup)
		probe_log(PLOG_WARN, "%s: %u servers named twice (same ip and port) are polled once", ctx->conf_path,
			  ctx->file.dup);
	free(text);
	return r;
}

/* Make the server list the targets': a server that stays keeps its connection and counters. */
static void set_targets(struct pgs_ctx *ctx, const struct pgs_targets *ts)
{
	struct pgs_server old[PGS_TARGETS_MAX];
	unsigned int nold = ctx->nsrv;

	memcpy(old, ctx->srv, sizeof(old));
	memset(ctx->srv, 0, sizeof(ctx->srv));
	for (unsigned int i = 0; i < ts->n; i++) {
		struct pgs_server *s = &ctx->srv[i];

		for (unsigned int j = 0; j < nold; j++) {
			if (old[j].dbs && pgs_target__equal(&old[j].t, &ts->t[i])) {
				*s = old[j];
				old[j].dbs = NULL;
				old[j].conn = NULL;
				break;
			}
		}
		if (!s->dbs) {
			s->t = ts->t[i];
			s->dbs = calloc(DBS_MAX, sizeof(*s->dbs));
			if (!s->dbs) {
				probe_log(PLOG_ERROR, "out of memory");
				continue;
			}
		}
	}
	for (unsigned int j = 0; j < nold; j++) {
		PQfinish(old[j].conn);
		free(old[j].dbs);
	}
	memset(old, 0, sizeof(old)); /* no password left on the stack */
	/* a server whose table could not be allocated is left out */
	ctx->nsrv = 0;
	for (unsigned int i = 0; i < ts->n; i++) {
		if (ctx->srv[i].dbs && ctx->nsrv != i)
			ctx->srv[ctx->nsrv] = ctx->srv[i];
		if (ctx->srv[i].dbs)
			ctx->nsrv++;
	}
	memset(&ctx->srv[ctx->nsrv], 0, (PGS_TARGETS_MAX - ctx->nsrv) * sizeof(ctx->srv[0]));
}

static int check(void *arg, void *next, const struct gg_ctrl_msg *msg)
{
	struct pgs_ctx *ctx = arg;
	char err[200];
	int r;

	(void)next;
	r = pgs_targets__from_snoopers(msg->snoopers, &ctx->next, err, sizeof(err));
	if (r) {
		probe_log(PLOG_WARN, "configuration refused: %s", err);
		return r;
	}
	ctx->have_next = 1;
	return 0;
}

static void applied(void *arg, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct pgs_ctx *ctx = arg;

	(void)version;
	(void)msg;
	if (ctx->have_next) {
		ctx->live = ctx->next;
		ctx->have_live = ctx->live.n > 0;
		ctx->have_next = 0;
	}
}

static const struct pgs_targets *targets(const struct pgs_ctx *ctx)
{
	return ctx->have_live ? &ctx->live : &ctx->file;
}

static void apply_conf(void *arg)
{
	struct pgs_ctx *ctx = arg;

	set_targets(ctx, targets(ctx));
	if (ctx->live.dup)
		probe_log(PLOG_WARN, "%u gaussdb snoopers name a server (ip and port) named before: polled once",
			  ctx->live.dup);
}

static void describe(void *arg, char *buf, size_t len)
{
	const struct pgs_ctx *ctx = arg;

	snprintf(buf, len, ", %u servers (%s)", ctx->nsrv, ctx->have_live ? "gaussdb snoopers" : ctx->conf_path);
}

static void init(void *arg)
{
	struct pgs_ctx *ctx = arg;

	ctx->conf_path = DEFAULT_CONF;
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct pgs_ctx *ctx = arg;
	int r;

	ctx->rt = rt;
	r = read_conf(ctx);
	if (r)
		return r;
	set_targets(ctx, targets(ctx));
	return 0;
}

static void teardown(void *arg)
{
	struct pgs_ctx *ctx = arg;
	struct pgs_targets none = {0};

	set_targets(ctx, &none);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct pgs_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.own = own_opts, .nown = sizeof(own_opts) / sizeof(own_opts[0]), .own_cb = own_cb, .notes = notes},
	.conf = {.base = &g_ctx.base, .cur = &g_ctx.cur, .size = sizeof(g_ctx.cur), .check = check, .applied = applied},
	.init = init,
	.setup = setup,
	.apply_conf = apply_conf,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.describe = describe,
	.first_config_wait_ms = 3000,
	.teardown = teardown,
};
