/* main.c - ksliprobe ("ksli"): l7probe's program parsing Redis only, reporting redis_sli. */
#include "../l7probe/l7_main.h"
#include "../l7probe/l7_proto.h"
#include "../l7probe/l7_trace.h"

extern const struct gg_contract gg_contract_ksliprobe;

static const char notes[] =
	"gala-gopher's ksli probe rebuilt on l7probe's capture (socket calls and, with -s, OpenSSL):\n"
	"Redis requests of the processes in scope, server side, as redis_sli rows (one per\n"
	"connection with requests in the period: mean and max latency and their commands), and\n"
	"l7_stats. latency_thr: an event_v2 (entity sli) for a connection whose slowest request\n"
	"was slower.\n";

int main(int argc, char **argv)
{
	static const struct l7_mode mode = {.contract = &gg_contract_ksliprobe,
					    .protos = 1u << L7_PROTO_REDIS,
					    .sli = L7_SLI_REDIS,
					    .notes = notes};

	return l7_main(argc, argv, &mode);
}
