/* fuzz_hap_sess.c - libFuzzer target: trace_haproxy's reader of "show sess all" answers on any bytes
 * (every link's strings NUL-terminated within their size; the counts add up). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hap_sess.h"

static void check_link(void *ctx, const struct hap_link *l)
{
	(void)ctx;
	if (strnlen(l->client_ip, HAP_ADDR_LEN) >= HAP_ADDR_LEN || strnlen(l->virtual_ip, HAP_ADDR_LEN) >= HAP_ADDR_LEN ||
	    strnlen(l->server_ip, HAP_ADDR_LEN) >= HAP_ADDR_LEN || (l->mode != HAP_MODE_TCP && l->mode != HAP_MODE_HTTP))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hap_sess_stats st;

	if (hap_sess_parse((const char *)data, size, check_link, NULL, &st) == 0 &&
	    st.links + st.no_server + st.malformed != st.streams)
		__builtin_trap();
	return 0;
}
