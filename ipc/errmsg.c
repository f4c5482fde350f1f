/* errmsg.c - gg_errf: an error message for the caller, and the code to return. */
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int gg_errf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}
