/* main.c - pgsliprobe ("postgre_sli"): l7probe's program parsing PostgreSQL only, reporting pg_sli
 * and pg_max_sli. */
#include "../l7probe/l7_main.h"
#include "../l7probe/l7_proto.h"
#include "../l7probe/l7_trace.h"

extern const struct gg_contract gg_contract_pgsliprobe;

static const char notes[] = "gala-gopher's postgre_sli probe rebuilt on l7probe's capture (socket calls and, with -s,\n"
			    "OpenSSL): PostgreSQL requests of the processes in scope, server side, as pg_sli (mean)\n"
			    "and pg_max_sli (max) rows per connection and statement type with requests in the\n"
			    "period, and l7_stats.\n";

int main(int argc, char **argv)
{
	static const struct l7_mode mode = {
		.contract = &gg_contract_pgsliprobe, .protos = 1u << L7_PROTO_PGSQL, .sli = L7_SLI_PG, .notes = notes};

	return l7_main(argc, argv, &mode);
}
