/* outbuf.h - the exporters' output buffer (growable, out-of-memory sticky) with JSON and Prometheus
 * text escaping. Its own file, so that the imdb and the Prometheus renderer do not depend on each other. */
#ifndef GG_OUTBUF_H
#define GG_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A growable byte buffer. A failed allocation sets oom and turns every later write into a no-op, so
 * a writer checks once at the end. data is NUL-terminated whenever cap > 0. */
struct gg_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max; /* 0 = unbounded; growing past max is treated as out of memory */
	int oom;
};

void gg_buf__init(struct gg_buf *b, size_t max);
void gg_buf__fini(struct gg_buf *b);
/* Make room for n more bytes (plus the NUL). 0 or -ENOMEM (and oom set). */
int gg_buf__reserve(struct gg_buf *b, size_t n);
/* The writers every renderer calls per value: inline, so that they cost what they did in the
 * renderer's own file (a call only when the buffer must grow). */
static inline void gg_buf__put(struct gg_buf *b, const void *s, size_t n)
{
	if ((b->oom || n >= b->cap - b->len) && gg_buf__reserve(b, n)) /* cap > len once allocated */
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
}

static inline void gg_buf__puts(struct gg_buf *b, const char *s)
{
	gg_buf__put(b, s, strlen(s));
}

static inline void gg_buf__putc(struct gg_buf *b, char c)
{
	if ((b->oom || b->cap - b->len < 2) && gg_buf__reserve(b, 1))
		return;
	b->data[b->len++] = c;
	b->data[b->len] = 0;
}

void gg_buf__printf(struct gg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gg_buf__put_u64(struct gg_buf *b, uint64_t v);
/* A double the way Prometheus and JSON both read it ("%.17g" shortened; NaN/Inf as Prometheus). */
void gg_buf__put_double(struct gg_buf *b, double v);
/* Hand the bytes over (caller frees); the buffer is empty afterwards. NULL when oom. */
char *gg_buf__steal(struct gg_buf *b, size_t *ret_len);

/* "s" as a JSON string, quotes included: '"', '\\' and control characters escaped. */
void gg_buf__put_json_str(struct gg_buf *b, const char *s, size_t n);
/* A JSON member with a string value: key is the text before the value, e.g. ",\"name\":". */
void gg_buf__put_json_member(struct gg_buf *b, const char *key, const char *s);
/* A Prometheus label value body (no quotes): '\\', '"' and '\n' escaped. */
void gg_buf__put_prom_label(struct gg_buf *b, const char *s, size_t n);
/* A # HELP text: '\\' and '\n' escaped. */
void gg_buf__put_prom_help(struct gg_buf *b, const char *s, size_t n);
/* A validated record number as JSON: copied when it is already valid JSON, else reformatted. */
void gg_buf__put_json_number(struct gg_buf *b, const char *s, size_t n);

#endif
