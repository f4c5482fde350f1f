/* l7share.c - l7probe's per-process request aggregates shared through a file in the run directory
 * (l7share.h): the log-linear latency buckets, the writer's table and the reader's parser. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "l7share.h"

#define SUB (1u << L7S_SUB_BITS)

unsigned int l7s_bucket(uint64_t ns)
{
	unsigned int k;

	if (ns < (1ull << L7S_MIN_SHIFT))
		return 0;
	k = 63u - (unsigned int)__builtin_clzll(ns);
	if (k >= L7S_MAX_SHIFT)
		return L7S_BUCKETS - 1;
	return 1u + (k - L7S_MIN_SHIFT) * SUB + (unsigned int)((ns >> (k - L7S_SUB_BITS)) & (SUB - 1));
}

uint64_t l7s_bucket_lower(unsigned int b)
{
	unsigned int k;

	if (b == 0)
		return 0;
	if (b >= L7S_BUCKETS - 1)
		return 1ull << L7S_MAX_SHIFT;
	k = L7S_MIN_SHIFT + (b - 1) / SUB;
	return (uint64_t)(SUB + (b - 1) % SUB) << (k - L7S_SUB_BITS);
}

uint64_t l7s_bucket_upper(unsigned int b)
{
	if (b >= L7S_BUCKETS - 1)
		return 1ull << L7S_MAX_SHIFT;
	return l7s_bucket_lower(b + 1);
}

double l7s_quantile(const uint32_t *hist, double q)
{
	uint64_t n = 0, cum = 0, rank;

	for (unsigned int b = 0; b < L7S_BUCKETS; b++)
		n += hist[b];
	if (!n)
		return 0;
	/* the rank of the quantile (1-based), as "the smallest value with q of the observations at or below" */
	rank = (uint64_t)(q * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	for (unsigned int b = 0; b < L7S_BUCKETS; b++) {
		double lo, hi;

		if (!hist[b] || cum + hist[b] < rank) {
			cum += hist[b];
			continue;
		}
		lo = (double)l7s_bucket_lower(b);
		hi = (double)l7s_bucket_upper(b);
		/* observations spread evenly over the bucket: the rank-th of them */
		return lo + (hi - lo) * (double)(rank - cum) / (double)hist[b];
	}
	return (double)l7s_bucket_lower(L7S_BUCKETS - 1);
}

int l7s_path(char *buf, size_t len)
{
	const char *url = getenv("GALA_GOPHER_DATA_URL"), *dir = getenv("GALA_GOPHER_RUN_DIR");
	int n;

	if (url && !strncmp(url, "ipc://", 6) && strrchr(url + 6, '/')) {
		const char *slash = strrchr(url + 6, '/');

		n = snprintf(buf, len, "%.*s/%s", (int)(slash - (url + 6)), url + 6, L7S_FILE);
	} else if (dir && *dir) {
		n = snprintf(buf, len, "%s/%s", dir, L7S_FILE);
	} else {
		return -ENOENT;
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- writer ------------------------------------------------------------------------------------------- */

#define HASH_BUCKETS  1024u
#define IDLE_CHECK_MS 30000u /* an entry without requests this long is forgotten when its process is gone */

struct ent {
	struct ent *next;
	uint32_t tgid;
	int role;
	uint64_t serial;
	uint64_t reqs, errs, lat_sum;
	uint64_t last_ms;
	uint64_t hist[L7S_BUCKETS];
};

struct l7s_table {
	struct ent *h[HASH_BUCKETS];
	unsigned int max, n;
	uint64_t serial, dropped;
	int dirty;
	uint64_t start_ticks;
	uint64_t last_sweep_ms;
	char *line; /* L7S_LINE_MAX */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t self_start_ticks(void)
{
	char buf[1024], *p;
	unsigned long long start = 0;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

struct l7s_table *l7s_table__new(unsigned int max_procs)
{
	struct l7s_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->line = malloc(L7S_LINE_MAX);
	if (!t->line) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->max = max_procs ? max_procs : L7S_PROCS_MAX;
	t->start_ticks = self_start_ticks();
	return t;
}

void l7s_table__free(struct l7s_table *t)
{
	if (!t)
		return;
	for (unsigned int i = 0; i < HASH_BUCKETS; i++) {
		for (struct ent *e = t->h[i], *nx; e; e = nx) {
			nx = e->next;
			free(e);
		}
	}
	free(t->line);
	free(t);
}

void l7s_table__add(struct l7s_table *t, uint32_t tgid, int role, uint64_t lat_ns, int error)
{
	struct ent **pp = &t->h[(tgid * 2654435761u + (uint32_t)role) % HASH_BUCKETS], *e;

	for (e = *pp; e; e = e->next)
		if (e->tgid == tgid && e->role == role)
			break;
	if (!e) {
		if (t->n >= t->max || !(e = calloc(1, sizeof(*e)))) {
			t->dropped++;
			return;
		}
		e->tgid = tgid;
		e->role = role;
		e->serial = ++t->serial;
		e->next = *pp;
		*pp = e;
		t->n++;
	}
	e->reqs++;
	e->errs += error ? 1 : 0;
	e->lat_sum += lat_ns;
	e->hist[l7s_bucket(lat_ns)]++;
	e->last_ms = 0; /* stamped at the next publish: no clock read per request */
	t->dirty = 1;
}

/* Forget the entries of processes gone (checked only for those idle a while). */
static void sweep(struct l7s_table *t, uint64_t now)
{
	for (unsigned int i = 0; i < HASH_BUCKETS; i++) {
		for (struct ent **pp = &t->h[i], *e; (e = *pp);) {
			if (!e->last_ms)
				e->last_ms = now;
			if (now - e->last_ms >= IDLE_CHECK_MS && kill((pid_t)e->tgid, 0) < 0 && errno == ESRCH) {
				*pp = e->next;
				free(e);
				t->n--;
				t->dirty = 1;
				continue;
			}
			pp = &e->next;
		}
	}
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int l7s_table__publish(struct l7s_table *t, const char *path, int force)
{
	char tmp[4200];
	uint64_t now = mono_ms();
	int fd, err = 0;
	size_t len;

	if (now - t->last_sweep_ms >= 1000u) {
		sweep(t, now);
		t->last_sweep_ms = now;
	}
	if (!t->dirty && !force)
		return 0;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	len = (size_t)snprintf(t->line, L7S_LINE_MAX, "%s %d %d %" PRIu64 " %" PRIu64 "\n", L7S_MAGIC, L7S_VERSION,
			       (int)getpid(), t->start_ticks, t->dropped);
	err = write_all(fd, t->line, len);
	for (unsigned int i = 0; i < HASH_BUCKETS && !err; i++) {
		for (const struct ent *e = t->h[i]; e && !err; e = e->next) {
			len = (size_t)snprintf(t->line, L7S_LINE_MAX,
					       "%u %" PRIu64 " %d %" PRIu64 " %" PRIu64 " %" PRIu64, e->tgid, e->serial,
					       e->role, e->reqs, e->errs, e->lat_sum);
			for (unsigned int b = 0; b < L7S_BUCKETS; b++)
				if (e->hist[b])
					len += (size_t)snprintf(t->line + len, L7S_LINE_MAX - len, " %u:%" PRIu64, b,
								e->hist[b]);
			t->line[len++] = '\n';
			err = write_all(fd, t->line, len);
		}
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		(void)unlink(tmp);
	else
		t->dirty = 0;
	return err;
}

void l7s_table__stats(const struct l7s_table *t, uint64_t *ret_entries, uint64_t *ret_dropped)
{
	*ret_entries = t->n;
	*ret_dropped = t->dropped;
}

/* ---- reader -------------------------------------------------------------------------------------------- */

/* An unsigned decimal at *p (then spaces skipped): 0, or -EINVAL. */
static int num(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (s < end && *s != ' ' && *s != ':')
		return -EINVAL;
	*ret = v;
	*p = s;
	return 0;
}

static void spaces(const char **p, const char *end)
{
	while (*p < end && **p == ' ')
		(*p)++;
}

static int parse_line(const char *s, const char *end, struct l7s_entry *e)
{
	uint64_t v[6];

	for (int i = 0; i < 6; i++) {
		spaces(&s, end);
		if (num(&s, end, &v[i]) || (s < end && *s == ':'))
			return -EINVAL;
	}
	if (v[0] == 0 || v[0] > UINT32_MAX || (v[2] != L7S_ROLE_CLIENT && v[2] != L7S_ROLE_SERVER))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->tgid = (uint32_t)v[0];
	e->serial = v[1];
	e->role = (int)v[2];
	e->reqs = v[3];
	e->errs = v[4];
	e->lat_sum = v[5];
	for (spaces(&s, end); s < end; spaces(&s, end)) {
		uint64_t b, c;

		if (num(&s, end, &b) || s >= end || *s != ':')
			return -EINVAL;
		s++;
		if (num(&s, end, &c) || (s < end && *s == ':') || b >= L7S_BUCKETS)
			return -EINVAL;
		e->hist[b] = (uint32_t)c;
	}
	return 0;
}

int l7s_parse(const char *buf, size_t len, struct l7s_hdr *ret_hdr, l7s_entry_cb cb, void *ctx, uint64_t *ret_bad)
{
	const char *end = buf + len, *nl = memchr(buf, '\n', len), *s;
	size_t ml = strlen(L7S_MAGIC);
	uint64_t ver, pid, start, dropped, bad = 0;
	struct l7s_entry *e;
	int ret = 0;

	if (!nl || len < ml + 1 || memcmp(buf, L7S_MAGIC " ", ml + 1))
		return -EPROTO;
	s = buf + ml + 1;
	if (num(&s, nl, &ver) || ver != L7S_VERSION || (spaces(&s, nl), num(&s, nl, &pid)) ||
	    (spaces(&s, nl), num(&s, nl, &start)) || (spaces(&s, nl), num(&s, nl, &dropped)) || pid > UINT32_MAX)
		return -EPROTO;
	ret_hdr->writer_pid = (uint32_t)pid;
	ret_hdr->writer_start = start;
	ret_hdr->dropped = dropped;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (s = nl + 1; s < end && !ret;) {
		const char *le = memchr(s, '\n', (size_t)(end - s));

		if (!le)
			le = end; /* the last line may lack its newline: still whole (the file is renamed in) */
		if (le > s) {
			if (parse_line(s, le, e))
				bad++;
			else
				ret = cb(ctx, e);
		}
		s = le + 1;
	}
	free(e);
	if (ret_bad)
		*ret_bad = bad;
	return ret;
}
