/* metadata.h - the metadata message of a table, as gala-gopher's consumers (gala-spider) read it:
 * {"timestamp":ms,"meta_name":table,"entity_name":...,"version":...,"keys":["machine_id",...],
 *  "labels":["hostname",...],"metrics":[...]}. */
#ifndef GG_METADATA_H
#define GG_METADATA_H

#include <stdint.h>

#include "meta.h"
#include "prom.h"

/* Append the JSON object of table t (no newline). machine_id and hostname lead keys and labels; a
 * table field of the same name is not repeated. */
void gg_metadata__render(struct gg_buf *b, const struct meta_table *t, uint64_t now_ms);

#endif
