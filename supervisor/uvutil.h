/* uvutil.h - libuv handle helpers shared by the supervisor's modules (core, export, rest). */
#ifndef GG_UVUTIL_H
#define GG_UVUTIL_H

#include <uv.h>

/* Closes h with no close callback when it was opened (is_open: its owner's flag) and is not closing
 * already: a handle never initialised must not reach uv_close, and one closing must not reach it twice. */
static inline void gg_uv_close_open(uv_handle_t *h, int is_open)
{
	if (is_open && !uv_is_closing(h))
		uv_close(h, NULL);
}

#endif
