/* fuzz_meta.c - libFuzzer target: loading a .meta file (libconfig text) from any buffer, then the family check. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct meta_registry *reg = meta_registry__new();
	char err[256];
	int r;

	if (!reg)
		return 0;
	r = meta_registry__load_buf(reg, "fuzz.meta", (const char *)data, size, err, sizeof(err));
	if (r == 0) {
		/* whatever loaded must be consistent and findable */
		for (unsigned int i = 0; i < meta_registry__count(reg); i++) {
			const struct meta_table *t = meta_registry__at(reg, i);

			if (meta_registry__find(reg, t->name, strlen(t->name)) != t || t->nkeys == 0 ||
			    t->nfields == 0 || t->nfields > META_FIELDS_MAX)
				abort();
		}
		/* the family check (run by load_dir) on whatever loaded: 0, or -EEXIST with a message */
		r = meta_registry__check_families(reg, err, sizeof(err));
		if (r && (r != -EEXIST || memchr(err, '\0', sizeof(err)) == NULL || err[0] == '\0'))
			abort();
	} else if (memchr(err, '\0', sizeof(err)) == NULL || err[0] == '\0') {
		abort(); /* an error always comes with a message */
	}
	meta_registry__free(reg);
	return 0;
}
