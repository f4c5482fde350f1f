/* probe_log.c - a probe's log on stderr (its log file under the supervisor), libbpf routed into it. */
#include "probe.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static struct {
	char name[64];
	enum probe_log_level level;
} g_plog = {.name = "probe", .level = PLOG_INFO};

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

int probe_log_level__parse(const char *s, enum probe_log_level *ret)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};

	if (!s)
		return -EINVAL;
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i])) {
			*ret = (enum probe_log_level)i;
			return 0;
		}
	}
	if (!strcasecmp(s, "warning")) {
		*ret = PLOG_WARN;
		return 0;
	}
	return -EINVAL;
}

void probe_log_setup(const char *name, enum probe_log_level level)
{
	if (name && name[0])
		snprintf(g_plog.name, sizeof(g_plog.name), "%s", name);
	if (level <= PLOG_ERROR)
		g_plog.level = level;
}

enum probe_log_level probe_log_get_level(void)
{
	return g_plog.level;
}

void probe_vlog(enum probe_log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;
	size_t n;
	int m;

	if (level < g_plog.level || level > PLOG_ERROR)
		return;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
	m = snprintf(line + n, sizeof(line) - n, ".%03ld %s %s: ", (long)(tv.tv_usec / 1000), level_names[level],
		     g_plog.name);
	if (m > 0)
		n += (size_t)m;
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	if (m > 0)
		n += (size_t)m;
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	while (n > 0 && line[n - 1] == '\n')
		n--;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}

void probe_log(enum probe_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	probe_vlog(level, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 0))) static int libbpf_print(enum libbpf_print_level level, const char *fmt,
							      va_list ap)
{
	enum probe_log_level l;

	switch (level) {
	case LIBBPF_WARN:
		l = PLOG_WARN;
		break;
	case LIBBPF_INFO:
		l = PLOG_INFO;
		break;
	default:
		l = PLOG_DEBUG;
		break;
	}
	probe_vlog(l, fmt, ap);
	return 0;
}

void probe_log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
