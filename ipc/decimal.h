/* decimal.h - unsigned 64-bit decimals written without snprintf and read with an overflow check, for
 * the hot paths (records, control messages, /metrics, the IPC benchmark), one copy of each. */
#ifndef GG_DECIMAL_H
#define GG_DECIMAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GG_U64_DIGITS 20 /* UINT64_MAX has 20 decimal digits */

/* Writes v in decimal ending just before end (at most GG_U64_DIGITS bytes, no NUL); returns where it
 * starts. Backwards, so that a caller with a scratch buffer copies the digits once. */
static inline char *gg_u64_digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/* Writes v in decimal at out (at most GG_U64_DIGITS bytes, no NUL); returns how many bytes. */
static inline size_t gg_fmt_u64(char *out, uint64_t v)
{
	char tmp[GG_U64_DIGITS];
	const char *d = gg_u64_digits(tmp + sizeof(tmp), v);
	size_t n = (size_t)(tmp + sizeof(tmp) - d);

	memcpy(out, d, n);
	return n;
}

/* The len bytes at s as an unsigned decimal (digits only) into *ret: 0, -EINVAL (empty, more than
 * GG_U64_DIGITS bytes, not a digit) or -ERANGE (over 64 bits); *ret untouched on error. */
static inline int gg_parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || len > GG_U64_DIGITS)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		uint64_t d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

#endif
