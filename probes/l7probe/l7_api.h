/* l7_api.h - the api of a request as l7_rpc_api and traces report it: paths normalised (ids, uuids,
 * hashes and tokens -> {id}, query dropped), SQL as statement type + table, and the pieces (operation,
 * target) a trace attribute needs. Pure functions: no allocation, no I/O. */
#ifndef GG_L7_API_H
#define GG_L7_API_H

#include <stddef.h>
#include <stdint.h>

#include "l7_proto.h"

/* The placeholder a variable path segment becomes, and the api of requests past the per-process cap. */
#define L7_API_ID    "{id}"
#define L7_API_OTHER "__other__"

/*
 * The normalised api of a request of protocol proto whose parser said raw (NUL-terminated, at most
 * L7_API_MAX - 1 bytes), into out (outlen >= 2; always NUL-terminated, cut to outlen - 1). An api of
 * the form "METHOD /path" (HTTP/1.x, and any protocol that reports its requests that way: HTTP/2 and
 * gRPC ":method :path") gets its path normalised whatever proto is: the query string and fragment
 * are dropped, an absolute URI loses its scheme and authority, and a segment that is a number, a
 * uuid, a hex hash (12+ hex digits with a digit), a token (20+ characters of [A-Za-z0-9_-.~=+%]
 * with a digit) or mostly digits (4+ characters, more than half digits) becomes {id}. Other apis
 * are copied (with control characters replaced by '_'). Returns the length written.
 */
size_t l7_api__normalize(enum l7_proto proto, const char *raw, char *out, size_t outlen);

/*
 * "SELECT users": the statement type (the first SQL keyword, upper case, comments and '(' skipped)
 * and, for SELECT/DELETE (after FROM), INSERT/REPLACE (after INTO), UPDATE, and
 * TRUNCATE/CREATE/DROP/ALTER TABLE, the table named (schema-qualified names and quotes `"[] kept as
 * written, cut at 32 bytes), read from the first n bytes of text. dst gets at most max - 1 bytes and
 * a NUL. Returns the length written (0: no keyword).
 */
size_t l7_api__sql(char *dst, size_t max, const uint8_t *text, size_t n);

/* The index of the next SQL token in text[0..n) from i: white space, '(', ';' and comments skipped. */
size_t l7_api__sql_skip(const uint8_t *text, size_t n, size_t i);
/* The first SQL keyword of text[0..n) (comments, blanks and '(' skipped), upper-cased, into dst. */
size_t l7__sql_keyword(char *dst, size_t max, const uint8_t *text, size_t n);

/* The operation of an api ("GET", "SELECT", "Produce") and what it acts on ("/users/{id}", "users",
 * "t1"; "" when none): the parts before and after its first space. op gets at most oplen - 1 bytes. */
void l7_api__split(const char *api, char *op, size_t oplen, const char **ret_target);

/* Whether an error status of protocol proto is the client's fault: HTTP 4xx (api "METHOD /path"
 * with status 400..499), DNS FORMERR (1) and NXDOMAIN (3). Other errors are the server's. */
int l7_api__client_error(enum l7_proto proto, const char *api, int status);

#endif
