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

#define GG_EXT_LABELS_MAX  10u	/* custom labels, pod labels (REST snoopers; gala-gopher's bound) */
#define GG_EXT_VALUE_MAX   256u /* bytes of a custom label's value */
#define GG_EXT_POD_KEY_MAX 317u /* a Kubernetes label key */

/* The labels one probe's REST configuration adds to its series: custom_labels (fixed values, on every
 * table of the probe) and pod_labels (the value of that label of the series' pod, on its tgid tables;
 * "" outside pods and when the pod has no such label). Zero-filled, then filled. */
struct gg_ext_labels {
	unsigned int ncustom, npod;
	char custom_name[GG_EXT_LABELS_MAX][META_NAME_MAX];
	char custom_value[GG_EXT_LABELS_MAX][GG_EXT_VALUE_MAX + 1];
	char pod_key[GG_EXT_LABELS_MAX][GG_EXT_POD_KEY_MAX + 1];
	char pod_name[GG_EXT_LABELS_MAX][META_NAME_MAX]; /* gg_pod_label__name of pod_key */
};

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
/* Set the labels of owner's records (a probe; NULL or no labels: none). A change takes effect at the
 * owner's next record of each table; *ret_stale of gg_ident_export__probe_record then names the table
 * whose stored rows carry the old label set. 0 or -ENOMEM (bounded by the number of probes). */
int gg_ident_export__set_labels(struct gg_ident_export *x, const void *owner, const struct gg_ext_labels *l);
/* gg_ident_export__record for a record of owner, with owner's labels. *ret_stale (may be NULL) is set
 * to the table (as exported until now) whose rows must be dropped because its label set changed, else
 * NULL: every series of a family keeps one label set. */
const struct meta_record *gg_ident_export__probe_record(struct gg_ident_export *x, const void *owner,
							const struct meta_record *rec, uint64_t now_ms,
							const struct meta_table **ret_stale);
/* ,"container_id":"..." ... for every identity label of process tgid (JSON members, for events). */
void gg_ident_export__json_members(struct gg_ident_export *x, uint32_t tgid, uint64_t now_ms, struct gg_buf *out);

/* For the flame graph query's Total view (pq_ident_fn): the pod (name, else UID) and the container
 * (name, else the first 12 digits of its id) of process tgid; NULL or "" when none. ctx is x. */
void gg_ident_export__names(void *ctx, uint32_t tgid, const char **ret_pod, const char **ret_container);

#endif
