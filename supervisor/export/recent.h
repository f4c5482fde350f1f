/* recent.h - the last events the agent reported, kept in memory (bounded) for the web page's event log. */
#ifndef GG_RECENT_H
#define GG_RECENT_H

#include <stddef.h>
#include <stdint.h>

#define GG_RECENT_EVENTS   256u	 /* events kept */
#define GG_RECENT_LINE_MAX 4096u /* an event's JSON longer than this is kept cut short (flagged) */

struct gg_recent;

/* NULL + errno when out of memory. */
struct gg_recent *gg_recent__new(void);
void gg_recent__free(struct gg_recent *r);
/* Keep one event's JSON object (the oldest is forgotten when full). */
void gg_recent__push(struct gg_recent *r, const char *json, size_t len);
/* Sequence number the next pushed event gets (1 for the first). */
uint64_t gg_recent__next_seq(const struct gg_recent *r);
/* The event of sequence number seq, NUL-terminated; NULL when never pushed or already forgotten.
 * *ret_cut is 1 when the text was cut at GG_RECENT_LINE_MAX (it is then not valid JSON). */
const char *gg_recent__get(const struct gg_recent *r, uint64_t seq, int *ret_cut);

#endif
