/* rest.h - the REST API (seed 000, "REST Dynamic Configuration Interface"): PUT/GET /<probe> and
 * GET /probes on rest_api_server, run-time probe configuration (persisted in rest_api_server.state_dir),
 * live updates over the control channel, and the snooper scan that keeps each probe's scope current. */
#ifndef GG_REST_H
#define GG_REST_H

#include <cjson/cJSON.h>

#include "http.h"

struct gg_sup;

#define GG_REST_SCAN_MS 500u /* snooper re-resolution period: a new matching process is seen within 1 s */

/* Restore the persisted configuration (before gg_probes__start_all), start the HTTP(S) server and
 * the snooper timer. A server that cannot listen is logged and reported in status.json; the
 * supervisor runs on without it. Negative errno only for fatal errors (out of memory). */
int gg_rest__init(struct gg_sup *sup);
/* Stop serving (in-flight requests get 503) and stop the timer; idempotent. */
void gg_rest__close(struct gg_sup *sup);
/* After the loop has closed every handle. */
void gg_rest__free(struct gg_sup *sup);
/* The server's part of status.json. */
void gg_rest__status(struct gg_sup *sup, cJSON *obj);
/* One request (what the server's handler does; also used by tests). */
void gg_rest__handle(struct gg_sup *sup, const struct gg_http_request *req, struct gg_http_response *resp);

#endif
