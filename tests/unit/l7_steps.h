/* l7_steps.h - a script of captured chunks for an l7probe session (the protocol tests, bench/l7_hpack):
 * REQ("...") and RESP("...") chunks, whole or with the bytes moved beyond those captured. */
#ifndef GG_TEST_L7_STEPS_H
#define GG_TEST_L7_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "../../probes/l7probe/l7_proto.h"

/* One chunk of a script: len bytes captured of total moved (total 0: total = len). */
struct l7t_step {
	enum l7_flow flow;
	const void *data;
	size_t len;
	uint64_t total;
};

#define REQ(s)                                     \
	{                                          \
		L7_FLOW_REQ, (s), sizeof(s) - 1, 0 \
	}
#define RESP(s)                                     \
	{                                           \
		L7_FLOW_RESP, (s), sizeof(s) - 1, 0 \
	}
#define REQ_GAP(s, t)                                \
	{                                            \
		L7_FLOW_REQ, (s), sizeof(s) - 1, (t) \
	}
#define RESP_GAP(s, t)                                \
	{                                             \
		L7_FLOW_RESP, (s), sizeof(s) - 1, (t) \
	}
#define NSTEPS(a) (sizeof(a) / sizeof((a)[0]))

#endif
