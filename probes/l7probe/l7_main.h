/* l7_main.h - the one program behind l7probe and the SLI probes built from its capture (ksliprobe,
 * pgsliprobe): each binary's main() names its contract and what it reports. */
#ifndef GG_L7_MAIN_H
#define GG_L7_MAIN_H

#include "contract.h"

struct l7_mode {
	const struct gg_contract *contract; /* REST name, binary name, sub-probes, parameters */
	unsigned int protos;		    /* protocols parsed whatever the parameters say (mask), 0: l7_protocol */
	int sli;			    /* enum l7_sli_kind, 0: none */
	const char *notes;		    /* --help's notes, NULL: l7probe's */
};

/* The probe's whole life: options, capture, reports until SIGTERM. Returns the exit status. */
int l7_main(int argc, char **argv, const struct l7_mode *mode);

#endif
