/* proto_mysql.c - placeholder: every byte is unparsable until the mysql parser lands. */
#include "l7_proto_impl.h"
static long x_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t ts)
{
	return -1;
}
static void x_dg(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t total, uint64_t ts)
{
}
const struct l7_proto_ops l7_mysql_ops = {.parse = x_parse, .datagram = x_dg};
bool l7__mysql_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	return false;
}
