/* hap_sess.h - HAProxy's "show sess all" (its runtime API) read into the client -> frontend address ->
 * server links of the streams established to a server. */
#ifndef GG_HAP_SESS_H
#define GG_HAP_SESS_H

#include <stddef.h>
#include <stdint.h>

#define HAP_ADDR_LEN 48u

enum hap_mode { HAP_MODE_TCP = 0, HAP_MODE_HTTP = 1 }; /* gala-gopher's protocol values (HAProxy's PR_MODE_*) */

struct hap_link {
	char client_ip[HAP_ADDR_LEN];
	char virtual_ip[HAP_ADDR_LEN]; /* the frontend connection's local address */
	uint16_t virtual_port;
	char server_ip[HAP_ADDR_LEN];
	uint16_t server_port;
	int mode; /* enum hap_mode */
};

struct hap_sess_stats {
	unsigned int streams;	 /* stream records read */
	unsigned int links;	 /* given to the callback */
	unsigned int no_server;	 /* not (yet) connected to a server, or not a TCP stream (the CLI's own) */
	unsigned int malformed;	 /* a stream record without the lines it needs */
};

/*
 * Walk the text of "show sess all" (len bytes, need not be NUL-terminated): every stream of a TCP
 * frontend connected to a server is given to cb. A stream record starts with a line "0x<ptr>: [date]
 * id=N proto=tcpv4|tcpv6 source=IP:PORT" and holds "frontend=NAME (id=N mode=tcp|http), listener=...
 * addr=IP:PORT" and "server=NAME (id=N) addr=IP:PORT" lines. 0, or -EINVAL when the text is not such
 * output (the first line is neither a stream record nor empty).
 */
int hap_sess_parse(const char *text, size_t len, void (*cb)(void *ctx, const struct hap_link *l), void *ctx,
		   struct hap_sess_stats *st);

#endif
