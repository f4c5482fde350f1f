/* webui.h - the built-in web page on the REST API server: /ui/ and its assets (compiled into the
 * binary, nothing read from disk), and the read-only JSON the page reads (/ui/api/...). The page changes
 * nothing by itself: start, stop and sub-probe switches are the REST API's own PUT /<probe>. */
#ifndef GG_WEBUI_H
#define GG_WEBUI_H

#include "http.h"

struct gg_sup;

#define GG_WEBUI_ROWS_MAX 200u /* rows of one imdb table per reply */

/* One compiled-in file (build/gen/webui_assets.c, made by build/tools/embed from supervisor/rest/webui/). */
struct gg_webui_asset {
	const char *name; /* file name, e.g. "app.js" */
	const char *content_type;
	const unsigned char *data;
	unsigned int len;
};
extern const struct gg_webui_asset gg_webui_assets[];
extern const unsigned int gg_webui_nassets;

/* Security headers of every REST API reply that is not the page itself (JSON): no sniffing, no
 * framing, no caching, and a CSP that lets a reply opened in the browser run nothing. */
extern const char *const gg_webui_api_headers[];

/* 1 when path (as the server gives it, with its leading '/') is the page's: "/ui" or under "/ui/". */
int gg_webui__match(const char *path);
/* Browsers' requests (any with an Origin header) and the page's own must name this host by an address,
 * localhost or its host name in Host, and a browser's PUT or POST must come from this server's origin
 * (Origin = Host): otherwise 403 in resp and 1 (DNS rebinding, other sites). Requests without Origin to
 * other paths (curl, scripts): 0. */
int gg_webui__refused(struct gg_sup *sup, const struct gg_http_request *req, struct gg_http_response *resp);
/* Answer a request for the page, an asset or /ui/api/... (GET and HEAD only). */
void gg_webui__handle(struct gg_sup *sup, const struct gg_http_request *req, struct gg_http_response *resp);

#endif
