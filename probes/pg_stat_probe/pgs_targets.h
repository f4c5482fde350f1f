/* pgs_targets.h - the servers pg_stat_probe polls: from the REST API's "gaussdb" snoopers or from
 * gala-gopher's pg_stat_probe.conf (a YAML list of servers: ip, port, dbname, user, password). */
#ifndef GG_PGS_TARGETS_H
#define GG_PGS_TARGETS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define PGS_TARGETS_MAX 8u /* the REST API's limit of gaussdb snoopers */
#define PGS_IP_LEN	64u
#define PGS_NAME_LEN	64u
#define PGS_PASS_LEN	128u

struct pgs_target {
	char ip[PGS_IP_LEN]; /* an address or a host name (never a path: a Unix socket directory) */
	unsigned int port;
	char dbname[PGS_NAME_LEN];
	char user[PGS_NAME_LEN];
	char password[PGS_PASS_LEN];
};

struct pgs_targets {
	unsigned int n;
	unsigned int dup; /* entries left out: the same ip and port as an earlier one */
	struct pgs_target t[PGS_TARGETS_MAX];
};

/*
 * From the snoopers object of a control message ({"gaussdb": [{"dbip", "dbport", "dbname", "dbuser",
 * "dbpass"}, ...], ...}). 0 with *ret filled (n 0: no gaussdb list, or an empty one); -EINVAL with a
 * message in err for an entry that is not such an object (ret untouched).
 */
int pgs_targets__from_snoopers(const cJSON *snoopers, struct pgs_targets *ret, char *err, size_t errlen);
/*
 * From the text of a pg_stat_probe.conf: "servers:" followed by list items ("-", then "key: value"
 * lines, values plain or in double or single quotes, '#' comments). 0 with *ret filled; -EINVAL with
 * the line number and what is wrong in err (ret untouched).
 */
int pgs_targets__from_conf(const char *text, size_t len, struct pgs_targets *ret, char *err, size_t errlen);
/* Whether two targets are the same server with the same credentials. */
int pgs_target__equal(const struct pgs_target *a, const struct pgs_target *b);
/* Whether two target lists are the same servers with the same credentials. */
int pgs_targets__equal(const struct pgs_targets *a, const struct pgs_targets *b);

#endif
