/* decimal.h - unsigned decimals written without snprintf, for the hot paths (control messages,
 * /metrics, the IPC benchmark's records), one copy. */
#ifndef GG_DECIMAL_H
#define GG_DECIMAL_H

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

#endif
