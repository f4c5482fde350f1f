/* l7probe.c - l7probe's main(): l7_main (main.c) as the "l7" probe. */
#include "l7_main.h"

extern const struct gg_contract gg_contract_l7probe;

int main(int argc, char **argv)
{
	static const struct l7_mode mode = {.contract = &gg_contract_l7probe};

	return l7_main(argc, argv, &mode);
}
