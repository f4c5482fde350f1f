/* errmsg.h - the one helper that writes an error message for the caller and returns an error code. */
#ifndef GG_ERRMSG_H
#define GG_ERRMSG_H

#include <stddef.h>

/* printf fmt into err (errlen bytes; err may be NULL or errlen 0: nothing written); returns ret. */
int gg_errf(char *err, size_t errlen, int ret, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
