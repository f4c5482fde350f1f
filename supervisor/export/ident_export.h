/* ident_export.h - the container and pod labels on what the supervisor exports: every table with a
 * `tgid` key is exported as a copy of itself with the six identity labels appended (container_id,
 * container_name, container_image, pod_id, pod, pod_namespace), its records carry the resolver's
 * values for their tgid, and events labelled tgid=<n> get the same labels. */
#ifndef GG_IDENT_EXPORT_H
#define GG_IDENT_EXPORT_H

#include <stdint.h>

#include "identity.h"
#include "meta.h"
#include "prom.h"

struct gg_ident_export;

/* Takes ownership of id (freed with the object). NULL + errno. */
struct gg_ident_export *gg_ident_export__new(struct gg_identity *id);
void gg_ident_export__free(struct gg_ident_export *x);
struct gg_identity *gg_ident_export__identity(struct gg_ident_export *x);

/* The table as exported: t, or its copy with the identity labels (the names t already has are not
 * added again). Valid as long as x. */
const struct meta_table *gg_ident_export__table(struct gg_ident_export *x, const struct meta_table *t);
/* The record as exported: rec, or a record of the exported table with the identity values of rec's
 * tgid appended (valid until the next call; its values point into rec and the resolver's cache). */
const struct meta_record *gg_ident_export__record(struct gg_ident_export *x, const struct meta_record *rec,
						  uint64_t now_ms);
/* ,"container_id":"..." ... for every identity label of process tgid (JSON members, for events). */
void gg_ident_export__json_members(struct gg_ident_export *x, uint32_t tgid, uint64_t now_ms, struct gg_buf *out);

/* For the flame graph query's Total view (pq_ident_fn): the pod (name, else UID) and the container
 * (name, else the first 12 digits of its id) of process tgid; NULL or "" when none. ctx is x. */
void gg_ident_export__names(void *ctx, uint32_t tgid, const char **ret_pod, const char **ret_container);

#endif
