/* render.c - an aggregated thread event as the seed's OpenTelemetry JSON (Resource, Attributes) and as
 * a Chrome/Perfetto trace event; the names of event kinds and events. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tprof.h"

const char *const tp_type_names[TP_TYPE_NR] = {"oncpu", "file",		"net", "lock",
					       "sched", "pthread_sync", "mem", "python_gc"};

const char *const tp_names[TP_NAME_NR] = {
	[TP_ONCPU] = "oncpu",
	[TP_READ] = "read",
	[TP_WRITE] = "write",
	[TP_READV] = "readv",
	[TP_WRITEV] = "writev",
	[TP_PREAD64] = "pread64",
	[TP_PWRITE64] = "pwrite64",
	[TP_PREADV] = "preadv",
	[TP_PWRITEV] = "pwritev",
	[TP_SYNC] = "sync",
	[TP_FSYNC] = "fsync",
	[TP_FDATASYNC] = "fdatasync",
	[TP_SENDTO] = "sendto",
	[TP_RECVFROM] = "recvfrom",
	[TP_SENDMSG] = "sendmsg",
	[TP_RECVMSG] = "recvmsg",
	[TP_SENDMMSG] = "sendmmsg",
	[TP_RECVMMSG] = "recvmmsg",
	[TP_FUTEX] = "futex",
	[TP_SCHED_YIELD] = "sched_yield",
	[TP_NANOSLEEP] = "nanosleep",
	[TP_CLOCK_NANOSLEEP] = "clock_nanosleep",
	[TP_WAIT4] = "wait4",
	[TP_WAITID] = "waitid",
	[TP_SELECT] = "select",
	[TP_PSELECT6] = "pselect6",
	[TP_POLL] = "poll",
	[TP_PPOLL] = "ppoll",
	[TP_EPOLL_WAIT] = "epoll_wait",
	[TP_EPOLL_PWAIT] = "epoll_pwait",
	[TP_PTHREAD_MUTEX_LOCK] = "pthread_mutex_lock",
	[TP_PTHREAD_MUTEX_TIMEDLOCK] = "pthread_mutex_timedlock",
	[TP_PTHREAD_RWLOCK_RDLOCK] = "pthread_rwlock_rdlock",
	[TP_PTHREAD_RWLOCK_WRLOCK] = "pthread_rwlock_wrlock",
	[TP_PTHREAD_SPIN_LOCK] = "pthread_spin_lock",
	[TP_SEM_WAIT] = "sem_wait",
	[TP_SEM_TIMEDWAIT] = "sem_timedwait",
	[TP_MALLOC] = "malloc",
	[TP_CALLOC] = "calloc",
	[TP_REALLOC] = "realloc",
	[TP_FREE] = "free",
	[TP_PYTHON_GC] = "python_gc",
};

#define ATTRS_MAX 1000u /* the record's label bound is 1024 bytes */
#define STACK_MAX 420u

void tp_str__init(struct tp_str *s, char *buf, size_t cap)
{
	s->buf = buf;
	s->cap = cap;
	s->len = 0;
	s->truncated = 0;
	if (cap)
		buf[0] = '\0';
}

void tp_str__printf(struct tp_str *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->len + 1 >= s->cap) {
		s->truncated = 1;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= s->cap - s->len) {
		s->len = s->cap - 1;
		s->truncated = 1;
	} else {
		s->len += (size_t)n;
	}
}

static void put(struct tp_str *s, char c)
{
	if (s->len + 1 >= s->cap) {
		s->truncated = 1;
		return;
	}
	s->buf[s->len++] = c;
	s->buf[s->len] = '\0';
}

void tp_str__json(struct tp_str *s, const char *v, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(v);

	if (n > max) {
		n = max;
		while (n && ((unsigned char)v[n] & 0xC0) == 0x80) /* not inside a UTF-8 character */
			n--;
	}
	put(s, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '"' || c == '\\') {
			put(s, '\\');
			put(s, (char)c);
		} else if (c < 0x20 || c == 0x7f) {
			tp_str__printf(s, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
		} else {
			put(s, (char)c);
		}
	}
	put(s, '"');
}

void tp_kernel_path(const struct tp_agg *a, char *buf, size_t len)
{
	struct tp_str s;
	int n = 0, root = 0;

	tp_str__init(&s, buf, len);
	while (n < TP_PATH_DEPTH && a->path[n][0]) {
		if (!strcmp(a->path[n], "/")) {
			root = 1;
			break;
		}
		n++;
	}
	if (!n)
		return;
	if (!root)
		tp_str__printf(&s, "...");
	for (int i = n - 1; i >= 0; i--)
		tp_str__printf(&s, "/%s", a->path[i]);
}

const char *tp_futex_op(int64_t op)
{
	static const char *const ops[] = {"wait",	    "wake",	   "fd",	  "requeue",
					  "cmp_requeue",    "wake_op",	   "lock_pi",	  "unlock_pi",
					  "trylock_pi",	    "wait_bitset", "wake_bitset", "wait_requeue_pi",
					  "cmp_requeue_pi", "lock_pi2"};
	uint64_t cmd = (uint64_t)op & 127; /* FUTEX_CMD_MASK: without PRIVATE and CLOCK_REALTIME */

	return cmd < sizeof(ops) / sizeof(ops[0]) ? ops[cmd] : NULL;
}

static uint64_t wall_ms(uint64_t mono_ns, const struct tp_render_info *info)
{
	return (mono_ns + info->mono_to_wall_ns) / 1000000u;
}

/* The members every rendering shares after the common ones: the extended attributes. */
static void ext_attrs(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info, size_t stack_max)
{
	if (info->stack && info->stack[0] && stack_max) {
		tp_str__printf(s, ",\"func.stack\":");
		tp_str__json(s, info->stack, stack_max);
	}
	if (info->path && info->path[0]) {
		tp_str__printf(s, ",\"file.path\":");
		tp_str__json(s, info->path, 256);
	}
	if (info->conn && info->conn[0]) {
		tp_str__printf(s, ",\"sock.conn\":");
		tp_str__json(s, info->conn, 128);
	}
	if (a->type == TP_TYPE_MEM && a->name != TP_FREE)
		tp_str__printf(s, ",\"mem.size\":%llu", (unsigned long long)a->bytes);
	if (a->type == TP_TYPE_PYGC)
		tp_str__printf(s, ",\"gc.generation\":%lld,\"gc.collected\":%lld", (long long)a->arg,
			       (long long)a->ret);
	if (a->name == TP_FUTEX && tp_futex_op(a->arg))
		tp_str__printf(s, ",\"futex.op\":\"%s\"", tp_futex_op(a->arg));
}

void tp_render__resource(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info)
{
	tp_str__printf(s, "{\"thread.pid\":%u,\"thread.tgid\":%u,\"thread.comm\":", a->pid, a->tgid);
	tp_str__json(s, a->comm, sizeof(a->comm));
	tp_str__printf(s, ",\"proc.name\":");
	tp_str__json(s, info->proc_name ? info->proc_name : "", 64);
	tp_str__printf(s, ",\"container.id\":\"\",\"container.name\":\"\"");
	if (info->host_id) {
		tp_str__printf(s, ",\"host.id\":");
		tp_str__json(s, info->host_id, 128);
		tp_str__printf(s, ",\"host.name\":");
		tp_str__json(s, info->host_name ? info->host_name : "", 128);
	}
	put(s, '}');
}

void tp_render__attrs(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info)
{
	size_t start = s->len, stack_max = STACK_MAX;

	for (;;) {
		uint64_t start_ms = wall_ms(a->start_ns, info);

		s->len = start;
		s->truncated = 0;
		if (s->cap)
			s->buf[start] = '\0';
		tp_str__printf(s,
			       "{\"values\":[{\"event.name\":\"%s\",\"event.type\":\"%s\",\"start_time\":%llu,"
			       "\"end_time\":%llu,\"duration\":%.3f,\"count\":%u",
			       tp_names[a->name], tp_type_names[a->type], (unsigned long long)start_ms,
			       (unsigned long long)wall_ms(a->start_ns + a->dur_ns, info), (double)a->dur_ns / 1e6,
			       a->count);
		ext_attrs(s, a, info, stack_max);
		tp_str__printf(s, "}]}");
		if ((s->len - start <= ATTRS_MAX && !s->truncated) || !stack_max)
			return;
		stack_max = stack_max > 100 ? stack_max - 100 : 0; /* too long: less of the stack */
	}
}

void tp_render__trace_event(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info)
{
	uint64_t ts_ns = a->start_ns + info->mono_to_wall_ns;

	tp_str__printf(s,
		       "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%llu.%03u,\"dur\":%llu.%03u,\"pid\":%u,"
		       "\"tid\":%u,\"args\":{\"count\":%u,\"end_time_us\":%llu",
		       tp_names[a->name], tp_type_names[a->type], (unsigned long long)(ts_ns / 1000),
		       (unsigned int)(ts_ns % 1000), (unsigned long long)(a->dur_ns / 1000),
		       (unsigned int)(a->dur_ns % 1000), a->tgid, a->pid, a->count,
		       (unsigned long long)((a->end_ns + info->mono_to_wall_ns) / 1000));
	ext_attrs(s, a, info, 4096);
	tp_str__printf(s, "}}");
}
