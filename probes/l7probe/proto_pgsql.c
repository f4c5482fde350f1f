/* proto_pgsql.c - placeholder: every byte is unparsable until the pgsql parser lands. */
#include "l7_proto_impl.h"
static long x_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t ts)
{
	return -1;
}
static void x_dg(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t total, uint64_t ts)
{
}
const struct l7_proto_ops l7_pgsql_ops = {.parse = x_parse, .datagram = x_dg};
bool l7__pgsql_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	return false;
}
