/* log.h - the supervisor's own log and size-rotated files (probe logs, metric output). */
#ifndef GG_LOG_H
#define GG_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* A file that is renamed to <path>.1 (older ones shifted up to <path>.<keep>) when it would grow past
 * max_size bytes. */
struct rot_file {
	char *path;
	int fd;
	uint64_t size;
	uint64_t max_size;
	unsigned int keep;
	uint64_t write_errors;
};

int rot_file__open(struct rot_file *f, const char *path, uint64_t max_size, unsigned int keep);
/* Append len bytes, rotating first when they would not fit. A write error is counted, not fatal. */
int rot_file__write(struct rot_file *f, const void *buf, size_t len);
/* Append whole lines (buf ends with '\n'), rotating first when they would not fit. On a failed or short
 * write (a full disk) the file is cut back to its last complete line, so a reader never sees half a
 * line; *ret_lost counts the lines of buf that are not in the file. 0 or negative errno. */
int rot_file__write_lines(struct rot_file *f, const char *buf, size_t len, size_t *ret_lost);
void rot_file__close(struct rot_file *f);

enum gg_log_level { GG_LOG_DEBUG = 0, GG_LOG_INFO, GG_LOG_WARN, GG_LOG_ERROR };

int gg_log_level__parse(const char *s, enum gg_log_level *ret);
/* Until gg_log_open is called, messages go to stderr only. */
int gg_log_open(const char *path, uint64_t max_size, enum gg_log_level level);
void gg_log_set_stderr(int on);
void gg_log_close(void);
void gg_log(enum gg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "<timestamp> <tag> <message>\n" into line (size >= 64); returns its length. */
size_t gg_log_vformat(char *line, size_t size, const char *tag, const char *fmt, va_list ap);

/* "2026-11-22 01:02:03.456" for now, into buf (at least 24 bytes). */
void gg_log_timestamp(char *buf, size_t len);

#define gg_debug(...) gg_log(GG_LOG_DEBUG, __VA_ARGS__)
#define gg_info(...)  gg_log(GG_LOG_INFO, __VA_ARGS__)
#define gg_warn(...)  gg_log(GG_LOG_WARN, __VA_ARGS__)
#define gg_error(...) gg_log(GG_LOG_ERROR, __VA_ARGS__)

#endif
