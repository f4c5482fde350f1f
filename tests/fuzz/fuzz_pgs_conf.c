/* fuzz_pgs_conf.c - libFuzzer target: pg_stat_probe's reader of gala-gopher's pg_stat_probe.conf on any
 * bytes (every field NUL-terminated within its size, at most PGS_TARGETS_MAX servers, every host a valid
 * one), and its /proc/net/tcp parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pgs_owner.h"
#include "pgs_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pgs_targets ts;
	char err[160], *text;
	static const uint8_t lo[16] = {127, 0, 0, 1};
	uint64_t ino[8];

	if (pgs_targets__from_conf((const char *)data, size, &ts, err, sizeof(err)) == 0) {
		if (ts.n > PGS_TARGETS_MAX)
			__builtin_trap();
		for (unsigned int i = 0; i < ts.n; i++) {
			const struct pgs_target *t = &ts.t[i];

			if (strnlen(t->ip, sizeof(t->ip)) >= sizeof(t->ip) || !t->ip[0] || t->ip[0] == '/' ||
			    strnlen(t->dbname, sizeof(t->dbname)) >= sizeof(t->dbname) ||
			    strnlen(t->user, sizeof(t->user)) >= sizeof(t->user) ||
			    strnlen(t->password, sizeof(t->password)) >= sizeof(t->password) || !t->port ||
			    t->port > 65535)
				__builtin_trap();
		}
	} else if (strnlen(err, sizeof(err)) >= sizeof(err)) {
		__builtin_trap();
	}
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	if (pgs_owner__parse(text, AF_INET, lo, 5432, ino, 8) > 8 || pgs_owner__parse(text, AF_INET6, lo, 5432, ino, 8) > 8)
		__builtin_trap();
	free(text);
	return 0;
}
