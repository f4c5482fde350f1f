/* sock.c - listening and dialing for the ipc/ sockets (kept apart from util.c, which tools that do not
 * link NNG use). */
#include "ipc_impl.h"

int ipc__listen(nng_socket s, const char *url)
{
	int err = ipc__unlink_stale(url), rv;

	if (err < 0)
		return err;
	rv = nng_listen(s, url, NULL, 0);
	return rv ? ipc__nng_err(rv) : 0;
}

int ipc__dial(nng_socket s, const char *url)
{
	int rv;

	if ((rv = nng_socket_set_ms(s, NNG_OPT_RECONNMINT, IPC__RECONN_MIN_MS)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, IPC__RECONN_MAX_MS)) != 0 ||
	    (rv = nng_dial(s, url, NULL, NNG_FLAG_NONBLOCK)) != 0)
		return ipc__nng_err(rv);
	return 0;
}
