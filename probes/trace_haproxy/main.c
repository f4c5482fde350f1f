/* main.c - trace_haproxy ("haproxy"): HAProxy's links client -> frontend address -> server, as gala-gopher's
 * haproxy_link table, read from each HAProxy process's own runtime API ("show sess all" on the stats
 * socket it listens on) instead of uprobes on back_establish/stream_free with HAProxy's struct layouts
 * compiled in. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "clock.h"
#include "hap_conf.h"
#include "hap_sess.h"
#include "hash.h"
#include "probe.h"
#include "probe_runner.h"
#include "probe_scope.h"
#include "trace_haproxy.meta.h"

extern const struct gg_contract gg_contract_trace_haproxy;
#define CONTRACT (&gg_contract_trace_haproxy)

#define SOCKS_MAX   16u	       /* runtime API sockets followed */
#define KEYS_MAX    4096u      /* links per report */
#define ANSWER_MAX  (32u << 20) /* bytes of one show sess answer */
#define TIMEOUT_MS  3000u      /* connecting and reading one answer */
#define UNIX_MAX    (4u << 20)

/* A runtime API socket of a HAProxy process, and what reading it gave. */
struct hap_sock {
	uint32_t tgid;
	uint32_t holder; /* the process whose fds held it at the last scan of its fd directory */
	uint64_t inode;
	char path[108]; /* in the process's mount namespace */
	uint64_t polls, errors, streams, no_server, malformed, keys_dropped;
	int up, seen, warned;
};

struct hap_key {
	struct hap_link l;
	uint64_t count;
	int used;
};

/* A HAProxy process's listening UNIX sockets at its last fd scan (their inodes' hash): the scan of its
 * fd directory (two per stream) is made again only when they change. */
struct hap_proc {
	uint32_t pid;
	uint64_t sig;
	int seen;
};

struct hap_ctx {
	struct probe_rt *rt;
	struct hap_proc procs[SOCKS_MAX];
	unsigned int nprocs;
	struct hap_conf base, cur;
	const char *comm;
	struct probe_buf cg, net, comm_buf;
	char *answer; /* ANSWER_MAX + 1 */
	struct hap_sock socks[SOCKS_MAX];
	unsigned int nsocks;
	struct hap_key *keys; /* 2 * KEYS_MAX slots, open addressing */
	unsigned int nkeys;
	uint64_t dropped_now;
};

static const char notes[] =
	"Every HAProxy process in scope (comm haproxy, or the executable --elf-path) is asked \"show sess all\" on\n"
	"each runtime API socket it listens on (HAProxy's \"stats socket\"; found in /proc/<pid>/net/unix and its\n"
	"file descriptors, reached through /proc/<pid>/root). Table haproxy_link: per client ip, frontend\n"
	"address, server address and mode, link_count = streams established at the report (a gauge);\n"
	"trace_haproxy_stats per socket. Nothing is attached to HAProxy, no struct layout is assumed.\n";

/* ---- which processes, which sockets -------------------------------------------------------------- */

static int is_haproxy(struct hap_ctx *ctx, int pid)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;

	if (ctx->cur.elf_path[0]) {
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n <= 0)
			return 0;
		buf[n] = 0;
		return !strcmp(buf, ctx->cur.elf_path);
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (probe_read_file(path, &ctx->comm_buf, 64) || ctx->comm_buf.len < 7)
		return 0;
	return !strcmp(ctx->comm_buf.data, "haproxy\n");
}

/* HAProxy binds "<path>.<pid>.tmp" and renames it to <path>: the kernel keeps the name of the bind. */
static void strip_tmp_suffix(char *path)
{
	size_t n = strlen(path);
	char *dot;

	if (n < 6 || strcmp(path + n - 4, ".tmp"))
		return;
	path[n - 4] = 0;
	dot = strrchr(path, '.');
	if (dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1))
		*dot = 0;
	else
		path[n - 4] = '.';
}

/* Listening UNIX stream sockets with a path, of pid's network namespace: (inode, path) pairs, at most max. */
static unsigned int unix_listeners(struct hap_ctx *ctx, int pid, uint64_t *inodes, char (*paths)[108], unsigned int max)
{
	char file[64];
	unsigned int n = 0;
	const char *p;

	snprintf(file, sizeof(file), "/proc/%d/net/unix", pid);
	if (probe_read_file(file, &ctx->net, UNIX_MAX))
		return 0;
	p = strchr(ctx->net.data, '\n'); /* "Num RefCount Protocol Flags Type St Inode Path" */
	while (p && *++p && n < max) {
		unsigned int flags, type;
		unsigned long long ino;
		char path[108];

		path[0] = 0;
		if (sscanf(p, "%*[0-9a-f]: %*x %*x %x %x %*x %llu %107s", &flags, &type, &ino, path) == 4 &&
		    (flags & 0x10000) && type == 1 && path[0] == '/') {
			strip_tmp_suffix(path);
			inodes[n] = ino;
			memcpy(paths[n], path, sizeof(path));
			n++;
		}
		p = strchr(p, '\n');
	}
	return n;
}

static struct hap_sock *sock_find(struct hap_ctx *ctx, uint64_t inode)
{
	for (unsigned int i = 0; i < ctx->nsocks; i++)
		if (ctx->socks[i].inode == inode)
			return &ctx->socks[i];
	return NULL;
}

static struct hap_proc *proc_entry(struct hap_ctx *ctx, uint32_t pid)
{
	for (unsigned int i = 0; i < ctx->nprocs; i++)
		if (ctx->procs[i].pid == pid)
			return &ctx->procs[i];
	if (ctx->nprocs >= SOCKS_MAX)
		return NULL;
	ctx->procs[ctx->nprocs] = (struct hap_proc){.pid = pid};
	return &ctx->procs[ctx->nprocs++];
}

static void sock_seen(struct hap_sock *s, uint32_t pid)
{
	if (!s->seen) {
		s->seen = 1;
		s->tgid = pid; /* the master and its worker share it: the one seen first */
	}
}

/* The runtime API sockets pid listens on (its fds that are listening UNIX sockets of its namespace). */
static void find_sockets(struct hap_ctx *ctx, int pid)
{
	uint64_t inodes[64];
	char paths[64][108];
	unsigned int n = unix_listeners(ctx, pid, inodes, paths, 64);
	struct hap_proc *pe = proc_entry(ctx, (uint32_t)pid);
	uint64_t sig = gg_fnv1a(GG_FNV1A_INIT ^ n, inodes, n * sizeof(*inodes));
	char dir[64];
	struct dirent *e;
	DIR *fds;

	if (pe)
		pe->seen = 1;
	if (!n)
		return;
	if (pe && pe->sig == sig) {
		/* the same listeners as at the last scan: the sockets it held then */
		for (unsigned int i = 0; i < ctx->nsocks; i++)
			if (ctx->socks[i].holder == (uint32_t)pid)
				sock_seen(&ctx->socks[i], (uint32_t)pid);
		return;
	}
	if (pe)
		pe->sig = sig;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	fds = opendir(dir);
	if (!fds)
		return;
	while ((e = readdir(fds))) {
		char link[64];
		unsigned long long ino;
		ssize_t len = readlinkat(dirfd(fds), e->d_name, link, sizeof(link) - 1);

		if (len <= 0)
			continue;
		link[len] = 0;
		if (sscanf(link, "socket:[%llu]", &ino) != 1)
			continue;
		for (unsigned int i = 0; i < n; i++) {
			struct hap_sock *s;

			if (inodes[i] != ino)
				continue;
			s = sock_find(ctx, ino);
			if (!s && ctx->nsocks < SOCKS_MAX) {
				s = &ctx->socks[ctx->nsocks++];
				memset(s, 0, sizeof(*s));
				s->inode = ino;
				memcpy(s->path, paths[i], sizeof(s->path));
			}
			if (s) {
				s->holder = (uint32_t)pid;
				sock_seen(s, (uint32_t)pid);
			}
		}
	}
	closedir(fds);
}

/* ---- reading show sess all ---------------------------------------------------------------------- */

/* Ask the socket (reached through the process's root) and read the whole answer into ctx->answer. */
static int ask(struct hap_ctx *ctx, const struct hap_sock *s, size_t *ret_len)
{
	static const char cmd[] = "show sess all\n";
	uint64_t deadline = gg_mono_ns() + (uint64_t)TIMEOUT_MS * 1000000ull;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t len = 0, sent = 0;
	int fd, r = 0;

	if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path), "/proc/%u/root%s", s->tgid, s->path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		r = -errno;
		goto out;
	}
	/* The path is the process's to change after its bind (a symbolic link to a socket of the host,
	 * resolved from our root): nothing is sent unless a HAProxy process listens at the other end. */
	{
		struct ucred cred;
		socklen_t cl = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || cred.pid <= 0 || !is_haproxy(ctx, cred.pid)) {
			r = -EPERM;
			goto out;
		}
	}
	while (!r && sent < sizeof(cmd) - 1) {
		ssize_t n = send(fd, cmd + sent, sizeof(cmd) - 1 - sent, MSG_NOSIGNAL);

		if (n > 0)
			sent += (size_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EINTR))
			r = probe_wait_fd(fd, POLLOUT, deadline);
		else
			r = n < 0 ? -errno : -EPIPE;
	}
	while (!r) {
		ssize_t n;

		if (len == ANSWER_MAX) {
			r = -EFBIG;
			break;
		}
		n = recv(fd, ctx->answer + len, ANSWER_MAX - len, 0);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0)
			break; /* HAProxy closes after the answer */
		else if (errno == EAGAIN || errno == EINTR)
			r = probe_wait_fd(fd, POLLIN, deadline);
		else
			r = -errno;
	}
out:
	close(fd);
	*ret_len = len;
	return r;
}

/* ---- links -------------------------------------------------------------------------------------- */

static void on_link(void *arg, const struct hap_link *l)
{
	struct hap_ctx *ctx = arg;
	struct hap_link k;
	unsigned int mask = 2 * KEYS_MAX - 1, i;

	memset(&k, 0, sizeof(k)); /* the hash reads every byte: no stale bytes after the strings */
	memcpy(k.client_ip, l->client_ip, strnlen(l->client_ip, sizeof(k.client_ip) - 1));
	memcpy(k.virtual_ip, l->virtual_ip, strnlen(l->virtual_ip, sizeof(k.virtual_ip) - 1));
	memcpy(k.server_ip, l->server_ip, strnlen(l->server_ip, sizeof(k.server_ip) - 1));
	k.virtual_port = l->virtual_port;
	k.server_port = l->server_port;
	k.mode = l->mode;
	for (i = (unsigned int)gg_fnv1a(GG_FNV1A_INIT, &k, sizeof(k)) & mask;; i = (i + 1) & mask) {
		struct hap_key *e = &ctx->keys[i];

		if (e->used && !memcmp(&e->l, &k, sizeof(k))) {
			e->count++;
			return;
		}
		if (!e->used) {
			if (ctx->nkeys >= KEYS_MAX) {
				ctx->dropped_now++;
				return;
			}
			e->used = 1;
			e->l = k;
			e->count = 1;
			ctx->nkeys++;
			return;
		}
	}
}

static void poll_socket(struct hap_ctx *ctx, struct hap_sock *s)
{
	struct hap_sess_stats st;
	size_t len = 0;
	int r = ask(ctx, s, &len);

	if (!r)
		r = hap_sess_parse(ctx->answer, len, on_link, ctx, &st);
	if (r) {
		s->errors++;
		s->up = 0;
		if (!s->warned++)
			probe_log(PLOG_WARN, "haproxy %u: %s: %s", s->tgid, s->path,
				  r == -EINVAL ? "not an answer to show sess (a master socket, or not a stats socket)"
				  : r == -EPERM ? "the process listening there is not HAProxy (the path was replaced?)"
						: strerror(-r));
		return;
	}
	if (s->warned)
		probe_log(PLOG_INFO, "haproxy %u: %s: read again", s->tgid, s->path);
	s->warned = 0;
	s->up = 1;
	s->polls++;
	s->streams += st.streams;
	s->no_server += st.no_server;
	s->malformed += st.malformed;
	s->keys_dropped += ctx->dropped_now;
	ctx->dropped_now = 0;
}

static void emit(struct hap_ctx *ctx)
{
	static struct probe_rec r;

	for (unsigned int i = 0; i < 2 * KEYS_MAX; i++) {
		const struct hap_key *e = &ctx->keys[i];

		if (!e->used)
			continue;
		probe_rec__begin(&r, &TBL_haproxy_link);
		probe_rec__str(&r, e->l.client_ip);
		probe_rec__str(&r, e->l.virtual_ip);
		probe_rec__str(&r, e->l.server_ip);
		probe_rec__u64(&r, e->l.virtual_port);
		probe_rec__u64(&r, e->l.server_port);
		probe_rec__u64(&r, (uint64_t)e->l.mode);
		probe_rec__u64(&r, e->count);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	for (unsigned int i = 0; i < ctx->nsocks; i++) {
		const struct hap_sock *s = &ctx->socks[i];

		probe_rec__begin(&r, &TBL_trace_haproxy_stats);
		probe_rec__u64(&r, s->tgid);
		probe_rec__str(&r, s->path);
		probe_rec__u64(&r, (uint64_t)s->up);
		probe_rec__u64(&r, s->polls);
		probe_rec__u64(&r, s->errors);
		probe_rec__u64(&r, s->streams);
		probe_rec__u64(&r, s->no_server);
		probe_rec__u64(&r, s->malformed);
		probe_rec__u64(&r, s->keys_dropped);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

static void report(void *arg)
{
	struct hap_ctx *ctx = arg;
	struct dirent *d;
	unsigned int w = 0;
	DIR *proc = opendir("/proc");

	if (!proc)
		return;
	for (unsigned int i = 0; i < ctx->nsocks; i++)
		ctx->socks[i].seen = 0;
	for (unsigned int i = 0; i < ctx->nprocs; i++)
		ctx->procs[i].seen = 0;
	while ((d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		/* the scope first: a scope of pids rules most processes out before their comm is read */
		if (!gg_scope__has_process(&ctx->cur.scope, ctx->comm, "/proc", (int)pid, &ctx->cg) ||
		    !is_haproxy(ctx, (int)pid))
			continue;
		find_sockets(ctx, (int)pid);
	}
	closedir(proc);
	/* sockets gone (their process exited, or left the scope) are forgotten */
	for (unsigned int i = 0; i < ctx->nsocks; i++)
		if (ctx->socks[i].seen)
			ctx->socks[w++] = ctx->socks[i];
	ctx->nsocks = w;
	w = 0;
	for (unsigned int i = 0; i < ctx->nprocs; i++)
		if (ctx->procs[i].seen)
			ctx->procs[w++] = ctx->procs[i];
	ctx->nprocs = w;
	memset(ctx->keys, 0, 2 * KEYS_MAX * sizeof(*ctx->keys));
	ctx->nkeys = 0;
	for (unsigned int i = 0; i < ctx->nsocks && !probe_rt__stopping(ctx->rt); i++)
		poll_socket(ctx, &ctx->socks[i]);
	emit(ctx);
	(void)probe_rt__flush(ctx->rt);
}

/* ---- configuration ------------------------------------------------------------------------------ */

static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct hap_conf *conf = next;

	(void)data;
	if (msg->has_scope)
		conf->scope = msg->scope;
	return 0;
}

static void describe(void *data, char *buf, size_t len)
{
	const struct hap_ctx *ctx = data;

	snprintf(buf, len, ", %s, scope %s", ctx->cur.elf_path[0] ? ctx->cur.elf_path : "processes named haproxy",
		 ctx->cur.scope.all ? "all" : "filtered");
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct hap_ctx *ctx = arg;

	ctx->rt = rt;
	ctx->answer = malloc(ANSWER_MAX + 1);
	ctx->keys = calloc(2 * KEYS_MAX, sizeof(*ctx->keys));
	if (!ctx->answer || !ctx->keys) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void teardown(void *arg)
{
	struct hap_ctx *ctx = arg;

	free(ctx->answer);
	free(ctx->keys);
	probe_buf__free(&ctx->cg);
	probe_buf__free(&ctx->net);
	probe_buf__free(&ctx->comm_buf);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct hap_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base.scope, .comm = &g_ctx.comm, .notes = notes},
	.conf = {.base = &g_ctx.base, .cur = &g_ctx.cur, .size = sizeof(g_ctx.cur), .check = check_conf},
	.setup = setup,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.describe = describe,
	.first_config_wait_ms = 3000,
	.teardown = teardown,
};
