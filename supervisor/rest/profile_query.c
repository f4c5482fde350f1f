/* profile_query.c - merges stackprobe's stored profiles into a ProfileTracing node list (see
 * profile_query.h for the contract; the store format is written by probes/stackprobe/store.c). */
#include "profile_query.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

#define GG_PQ_IDENT_MAX 1040u	   /* "[Pod] " + a label value */
#define LINE_MAX_BYTES	(4u << 20) /* a store line longer than this is skipped */
#define COMM_LEN	15u

static const char *const event_dirs[5] = {"on-cpu", "off-cpu", "mem", "mem-alloc", "mem-live"};
#define EV_MEM_LIVE 4

/* One node of the merged tree. */
struct pq_node {
	char *name;
	uint32_t parent; /* index; UINT32_MAX for the root */
	uint64_t self, total;
	uint64_t id_hi, id_lo; /* node id (0, 0 for the root) */
};

/* Nodes plus a hash index (parent, name) -> node. */
struct pq_tree {
	struct pq_node *v;
	size_t n, cap;
	uint32_t *slots; /* node index + 1; 0 empty */
	size_t nslots;
	unsigned int max_nodes;
	int truncated;
};

static uint64_t slot_hash(uint32_t parent, const char *name, size_t len)
{
	return gg_mix64(gg_fnv1a(GG_FNV1A_INIT ^ parent, name, len));
}

static int tree_grow_slots(struct pq_tree *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		const struct pq_node *nd = &t->v[i];
		size_t j;

		if (nd->parent == UINT32_MAX)
			continue;
		for (j = slot_hash(nd->parent, nd->name, strlen(nd->name)) & (n - 1); s[j]; j = (j + 1) & (n - 1))
			;
		s[j] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

static int tree_add_node(struct pq_tree *t, uint32_t parent, const char *name, size_t len, uint32_t *ret)
{
	struct pq_node *nd;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct pq_node *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	nd = &t->v[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = malloc(len + 1);
	if (!nd->name)
		return -ENOMEM;
	memcpy(nd->name, name, len);
	nd->name[len] = '\0';
	nd->parent = parent;
	if (parent != UINT32_MAX) {
		/* a name-based id: the same path gets the same id in every query */
		const struct pq_node *p = &t->v[parent];
		uint64_t h = gg_fnv1a(GG_FNV1A_INIT, &p->id_hi, sizeof(p->id_hi));

		h = gg_fnv1a(h, &p->id_lo, sizeof(p->id_lo));
		h = gg_fnv1a(h, name, len);
		nd->id_hi = gg_mix64(h);
		nd->id_lo = gg_mix64(h ^ 0x9e3779b97f4a7c15ull);
	}
	*ret = (uint32_t)t->n++;
	return 0;
}

/* The child of parent called name, created when absent. -E2BIG when the node budget is spent. */
static int tree_child(struct pq_tree *t, uint32_t parent, const char *name, size_t len, uint32_t *ret)
{
	size_t j;
	int err;

	if ((t->n + 1) * 2 > t->nslots && (err = tree_grow_slots(t)))
		return err;
	for (j = slot_hash(parent, name, len) & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1)) {
		const struct pq_node *nd = &t->v[t->slots[j] - 1];

		if (nd->parent == parent && !strncmp(nd->name, name, len) && nd->name[len] == '\0') {
			*ret = t->slots[j] - 1;
			return 0;
		}
	}
	if (t->n >= t->max_nodes) {
		t->truncated = 1;
		return -E2BIG;
	}
	err = tree_add_node(t, parent, name, len, ret);
	if (!err)
		t->slots[j] = *ret + 1;
	return err;
}

static void tree_free(struct pq_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	free(t->slots);
}

/* Walk/create path[0..n) under parent and count value along it. */
struct pq_path {
	const char *name[1030];
	size_t len[1030];
	unsigned int n;
};

static int tree_add_path(struct pq_tree *t, const struct pq_path *p, uint64_t value)
{
	uint32_t cur = 0; /* root */

	t->v[0].total += value;
	for (unsigned int i = 0; i < p->n; i++) {
		uint32_t next;
		int err = tree_child(t, cur, p->name[i], p->len[i], &next);

		if (err == -E2BIG)
			break; /* the rest is counted as the deepest existing node's own value */
		if (err)
			return err;
		cur = next;
		t->v[cur].total += value;
	}
	t->v[cur].self += value;
	return 0;
}

static int is_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* The index of an event name (on-cpu 0, off-cpu 1, mem 2, mem-alloc 3, mem-live 4), or -ENOENT. */
static int event_index(const char *s)
{
	if (!strcmp(s, "on-cpu") || !strcmp(s, "oncpu"))
		return 0;
	if (!strcmp(s, "off-cpu") || !strcmp(s, "offcpu"))
		return 1;
	if (!strcmp(s, "mem") || !strcmp(s, "page-fault"))
		return 2;
	if (!strcmp(s, "mem-alloc") || !strcmp(s, "mem_alloc"))
		return 3;
	if (!strcmp(s, "mem-live") || !strcmp(s, "mem_live"))
		return EV_MEM_LIVE;
	return -ENOENT;
}

static int parse_i64(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int finish_request(struct pq_request *r, int have_start, int have_end, int64_t now_s, char *err, size_t errlen)
{
	if (!r->app[0]) {
		snprintf(err, errlen, "app (app_service) is required: a process name, a pid or Total");
		return -EINVAL;
	}
	if (r->event < 0) {
		snprintf(err, errlen, "event (profile_event_type) must be on-cpu, off-cpu, mem, mem-alloc or mem-live");
		return -EINVAL;
	}
	if (!have_end)
		r->time_end = now_s;
	if (!have_start)
		r->time_start = r->time_end - PQ_DEFAULT_RANGE_S;
	if (r->time_start > r->time_end) {
		snprintf(err, errlen, "time_start is after time_end");
		return -EINVAL;
	}
	if (!r->max_nodes)
		r->max_nodes = PQ_MAX_NODES_DEFAULT;
	if (r->max_nodes > PQ_MAX_NODES_LIMIT) {
		snprintf(err, errlen, "max_nodes is at most %u", PQ_MAX_NODES_LIMIT);
		return -EINVAL;
	}
	return 0;
}

int profile_query__parse_args(unsigned int nargs, const char *const *names, const char *const *values, int64_t now_s,
			      struct pq_request *ret, char *err, size_t errlen)
{
	struct pq_request r = {.event = -1};
	int have_start = 0, have_end = 0;

	for (unsigned int i = 0; i < nargs; i++) {
		const char *n = names[i], *v = values[i] ? values[i] : "";

		if (!strcmp(n, "app") || !strcmp(n, "app_service")) {
			if (strlen(v) >= sizeof(r.app)) {
				snprintf(err, errlen, "app is too long");
				return -EINVAL;
			}
			snprintf(r.app, sizeof(r.app), "%s", v);
		} else if (!strcmp(n, "event") || !strcmp(n, "profile_event_type")) {
			r.event = event_index(v);
			if (r.event < 0) {
				snprintf(err, errlen, "event must be on-cpu, off-cpu, mem, mem-alloc or mem-live");
				return -EINVAL;
			}
		} else if (!strcmp(n, "time_start") || !strcmp(n, "from")) {
			if (parse_i64(v, &r.time_start)) {
				snprintf(err, errlen, "time_start must be unix seconds");
				return -EINVAL;
			}
			have_start = 1;
		} else if (!strcmp(n, "time_end") || !strcmp(n, "until")) {
			if (parse_i64(v, &r.time_end)) {
				snprintf(err, errlen, "time_end must be unix seconds");
				return -EINVAL;
			}
			have_end = 1;
		} else if (!strcmp(n, "profile_id")) {
			unsigned long long from, until;
			int len = 0;

			if (strlen(v) != 27 || sscanf(v, "%13llu-%13llu%n", &from, &until, &len) != 2 || len != 27 ||
			    from > until) {
				snprintf(err, errlen, "profile_id must be <from_ms>-<until_ms> (13 digits each)");
				return -EINVAL;
			}
			snprintf(r.profile_id, sizeof(r.profile_id), "%s", v);
			r.time_start = (int64_t)(from / 1000);
			r.time_end = (int64_t)(until / 1000);
			have_start = have_end = 1;
		} else if (!strcmp(n, "max_nodes")) {
			int64_t m;

			if (parse_i64(v, &m) || m < 1 || m > PQ_MAX_NODES_LIMIT) {
				snprintf(err, errlen, "max_nodes must be 1..%u", PQ_MAX_NODES_LIMIT);
				return -EINVAL;
			}
			r.max_nodes = (unsigned int)m;
		}
		/* anything else (profile_language_type, tag_filter, ...) is ignored */
	}
	if (r.profile_id[0] && !r.app[0])
		snprintf(r.app, sizeof(r.app), "Total");
	if (r.profile_id[0] && r.event < 0)
		r.event = 0;
	if (finish_request(&r, have_start, have_end, now_s, err, errlen))
		return -EINVAL;
	*ret = r;
	return 0;
}

static int json_time(const cJSON *it, int64_t *ret)
{
	if (cJSON_IsNumber(it)) {
		double d = cJSON_GetNumberValue(it);

		if (d < 0 || d > 1e13 || d != (double)(int64_t)d)
			return -EINVAL;
		*ret = (int64_t)d;
		return 0;
	}
	if (cJSON_IsString(it))
		return parse_i64(cJSON_GetStringValue(it), ret);
	return -EINVAL;
}

/* Member name of o, when given, as unix seconds in *ret (and *ret_have set); -EINVAL with the message. */
static int json_time_member(const cJSON *o, const char *name, int64_t *ret, int *ret_have, char *err, size_t errlen)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!it)
		return 0;
	if (json_time(it, ret)) {
		snprintf(err, errlen, "%s must be unix seconds", name);
		return -EINVAL;
	}
	*ret_have = 1;
	return 0;
}

int profile_query__parse_json(const char *body, size_t len, int64_t now_s, struct pq_request *ret, char *err,
			      size_t errlen)
{
	struct pq_request r = {.event = -1};
	cJSON *root = cJSON_ParseWithLength(body, len);
	const cJSON *it;
	int have_start = 0, have_end = 0, e = -EINVAL;

	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "the body must be a JSON object");
		goto out;
	}
	it = cJSON_GetObjectItemCaseSensitive(root, "app_service");
	if (!it)
		it = cJSON_GetObjectItemCaseSensitive(root, "app");
	if (cJSON_IsNumber(it)) {
		snprintf(r.app, sizeof(r.app), "%.0f", cJSON_GetNumberValue(it));
	} else if (it) {
		const char *s = cJSON_GetStringValue(it);

		if (!s || strlen(s) >= sizeof(r.app)) {
			snprintf(err, errlen, "app_service must be a string");
			goto out;
		}
		snprintf(r.app, sizeof(r.app), "%s", s);
	}
	it = cJSON_GetObjectItemCaseSensitive(root, "profile_event_type");
	if (!it)
		it = cJSON_GetObjectItemCaseSensitive(root, "event");
	if (it) {
		const char *s = cJSON_GetStringValue(it);

		r.event = s ? event_index(s) : -1;
		if (r.event < 0) {
			snprintf(err, errlen, "profile_event_type must be on-cpu, off-cpu, mem, mem-alloc or mem-live");
			goto out;
		}
	}
	if (json_time_member(root, "time_start", &r.time_start, &have_start, err, errlen) ||
	    json_time_member(root, "time_end", &r.time_end, &have_end, err, errlen))
		goto out;
	it = cJSON_GetObjectItemCaseSensitive(root, "max_nodes");
	if (it) {
		double d = cJSON_GetNumberValue(it);

		if (!cJSON_IsNumber(it) || d < 1 || d > PQ_MAX_NODES_LIMIT || d != (double)(unsigned int)d) {
			snprintf(err, errlen, "max_nodes must be 1..%u", PQ_MAX_NODES_LIMIT);
			goto out;
		}
		r.max_nodes = (unsigned int)d;
	}
	if (finish_request(&r, have_start, have_end, now_s, err, errlen))
		goto out;
	*ret = r;
	e = 0;
out:
	cJSON_Delete(root);
	return e;
}

/* Split s at tabs into at most n fields (in place). Returns how many. */
static unsigned int split_tabs(char *s, char **f, unsigned int n)
{
	unsigned int k = 0;

	while (k < n) {
		char *tab = strchr(s, '\t');

		f[k++] = s;
		if (!tab)
			break;
		*tab = '\0';
		s = tab + 1;
	}
	return k;
}

/* A process name matches when equal, or when the query is longer than a comm and starts with it. */
static int app_matches(const struct pq_request *req, uint32_t tgid, const char *pcomm)
{
	size_t n = strlen(req->app);

	if (is_digits(req->app))
		return strtoul(req->app, NULL, 10) == tgid;
	if (!strcmp(req->app, pcomm))
		return 1;
	return n > COMM_LEN && strlen(pcomm) == COMM_LEN && !strncmp(req->app, pcomm, COMM_LEN);
}

/* Add one store file's matching lines to the tree. */
static int add_file(struct pq_tree *t, const char *path, const struct pq_request *req, struct pq_path *pp)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, pbuf[64], tbuf[64], podbuf[GG_PQ_IDENT_MAX], conbuf[GG_PQ_IDENT_MAX];
	size_t cap = 0;
	ssize_t n;
	uint64_t period_us = 0;
	int err = 0;

	if (!f)
		return 0; /* expired meanwhile */
	while (!err && (n = getline(&line, &cap, f)) > 0) {
		char *fld[7], *frames, *end;
		unsigned long long tgid, value;

		if ((size_t)n > LINE_MAX_BYTES)
			continue;
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (line[0] == '#') {
			const char *p = strstr(line, " period_us=");

			if (p)
				period_us = strtoull(p + 11, NULL, 10);
			continue;
		}
		if (split_tabs(line, fld, 7) != 7)
			continue;
		tgid = strtoull(fld[0], &end, 10);
		if (*end)
			continue;
		value = strtoull(fld[6], &end, 10);
		if (*end || !value)
			continue;
		if (strcmp(req->app, "Total") && !app_matches(req, (uint32_t)tgid, fld[2]))
			continue;
		if (req->event == 0)
			value *= period_us ? period_us : 10000u; /* on-cpu samples -> microseconds */
		pp->n = 0;
		if (!strcmp(req->app, "Total")) {
			const char *pod = NULL, *con = NULL;

			if (req->ident)
				req->ident(req->ident_ctx, (uint32_t)tgid, &pod, &con);
			if (pod && pod[0]) {
				snprintf(podbuf, sizeof(podbuf), "[Pod]%s", pod);
				pp->name[pp->n] = podbuf;
				pp->len[pp->n++] = strlen(podbuf);
			}
			if (con && con[0]) {
				snprintf(conbuf, sizeof(conbuf), "[Con]%s", con);
				pp->name[pp->n] = conbuf;
				pp->len[pp->n++] = strlen(conbuf);
			}
			/* else the container stackprobe saw when it sampled ("[Pod]<uid>;[Con]<id>"): the
			 * process may be gone by now */
			for (char *c = pp->n ? "" : fld[4]; *c;) {
				char *semi = strchr(c, ';');
				size_t l = semi ? (size_t)(semi - c) : strlen(c);

				if (l > 5 && (!strncmp(c, "[Pod]", 5) || !strncmp(c, "[Con]", 5)) && pp->n < 2) {
					pp->name[pp->n] = c;
					pp->len[pp->n++] = l;
				}
				if (!semi || pp->n == 2)
					break;
				c = semi + 1;
			}
			snprintf(pbuf, sizeof(pbuf), "[p] %s", fld[2]);
			snprintf(tbuf, sizeof(tbuf), "[t] %s", fld[3]);
			pp->name[pp->n] = pbuf;
			pp->len[pp->n++] = strlen(pbuf);
			pp->name[pp->n] = tbuf;
			pp->len[pp->n++] = strlen(tbuf);
		} else {
			snprintf(tbuf, sizeof(tbuf), "[t] %s", fld[3]);
			pp->name[0] = tbuf;
			pp->len[0] = strlen(tbuf);
			pp->n = 1;
			for (frames = fld[5]; *frames && pp->n < sizeof(pp->name) / sizeof(pp->name[0]);) {
				char *semi = strchr(frames, ';');
				size_t l = semi ? (size_t)(semi - frames) : strlen(frames);

				pp->name[pp->n] = frames;
				pp->len[pp->n++] = l;
				if (!semi)
					break;
				frames = semi + 1;
			}
		}
		err = tree_add_path(t, pp, value);
	}
	free(line);
	fclose(f);
	return err;
}

static void id_str(const struct pq_node *nd, char *buf, size_t len)
{
	if (nd->parent == UINT32_MAX) {
		buf[0] = '\0';
		return;
	}
	/* UUID layout (version 5 / RFC 4122 variant bits), as DeepFlow's ids look */
	snprintf(buf, len, "%08" PRIx64 "-%04" PRIx64 "-5%03" PRIx64 "-%04" PRIx64 "-%012" PRIx64, nd->id_hi >> 32,
		 (nd->id_hi >> 16) & 0xffff, nd->id_hi & 0xfff, (uint64_t)(0x8000 | ((nd->id_lo >> 48) & 0x3fff)),
		 (uint64_t)(nd->id_lo & 0xffffffffffffull));
}

char *profile_query__error_json(const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;

	if (o && cJSON_AddStringToObject(o, "OPT_STATUS", "FAIL") && cJSON_AddStringToObject(o, "DESCRIPTION", msg) &&
	    cJSON_AddNullToObject(o, "result") && cJSON_AddNullToObject(o, "debug"))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

int profile_query__run(const char *store_dir, const struct pq_request *req, char **ret_json, size_t *ret_len)
{
	struct pq_tree t = {.max_nodes = req->max_nodes ? req->max_nodes : PQ_MAX_NODES_DEFAULT};
	static struct pq_path pp; /* large; the supervisor calls this from its one loop thread */
	char dir[4096], path[4096 + 300], desc[96] = "";
	cJSON *o = NULL, *arr;
	struct dirent *de;
	uint64_t qfrom_ms = (uint64_t)req->time_start * 1000u, quntil_ms = ((uint64_t)req->time_end + 1) * 1000u;
	char live_name[256] = "";
	unsigned long long live_until = 0;
	uint32_t root;
	DIR *d;
	int err;

	if (req->event < 0 || req->event > EV_MEM_LIVE)
		return -EINVAL;
	err = tree_add_node(&t, UINT32_MAX, strcmp(req->app, "Total") ? req->app : "Total",
			    strlen(strcmp(req->app, "Total") ? req->app : "Total"), &root);
	if (err)
		goto out;
	snprintf(dir, sizeof(dir), "%s/%s", store_dir, event_dirs[req->event]);
	d = opendir(dir);
	if (d) {
		while (!err && (de = readdir(d))) {
			unsigned long long from, until;
			char c;

			/* <from_ms>-<until_ms>.prof: only the files overlapping the range */
			if (sscanf(de->d_name, "%llu-%llu.pro%c", &from, &until, &c) != 3 || c != 'f' ||
			    strlen(de->d_name) > 200)
				continue;
			if (until <= qfrom_ms || from >= quntil_ms)
				continue;
			if (req->profile_id[0] && (strncmp(de->d_name, req->profile_id, strlen(req->profile_id)) ||
						   strcmp(de->d_name + strlen(req->profile_id), ".prof")))
				continue;
			if (req->event == EV_MEM_LIVE) {
				/* each file is a snapshot of what was held at its end, not a sum over its period:
				 * summing the range's files would count a block once per period it lived. The
				 * answer is the newest snapshot in the range: what was held at its end. */
				if (until > live_until) {
					live_until = until;
					snprintf(live_name, sizeof(live_name), "%s", de->d_name);
				}
				continue;
			}
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			err = add_file(&t, path, req, &pp);
		}
		closedir(d);
	}
	if (!err && live_name[0]) {
		snprintf(path, sizeof(path), "%s/%s", dir, live_name);
		err = add_file(&t, path, req, &pp);
	}
	if (err)
		goto out;
	if (t.truncated)
		snprintf(desc, sizeof(desc), "truncated at %u nodes: deeper frames are counted in their parents",
			 t.max_nodes);
	err = -ENOMEM;
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "OPT_STATUS", "SUCCESS") ||
	    !cJSON_AddStringToObject(o, "DESCRIPTION", desc))
		goto out;
	arr = cJSON_AddArrayToObject(o, "result");
	if (!arr || !cJSON_AddNullToObject(o, "debug"))
		goto out;
	for (size_t i = 0; i < t.n; i++) {
		const struct pq_node *nd = &t.v[i];
		cJSON *n = cJSON_CreateObject();
		char id[48], pid[48];

		if (!n || !cJSON_AddItemToArray(arr, n))
			goto out;
		id_str(nd, id, sizeof(id));
		if (nd->parent == UINT32_MAX)
			snprintf(pid, sizeof(pid), "-1");
		else
			id_str(&t.v[nd->parent], pid, sizeof(pid));
		if (!cJSON_AddStringToObject(n, "profile_location_str", nd->name) ||
		    !cJSON_AddStringToObject(n, "node_id", id) || !cJSON_AddStringToObject(n, "parent_node_id", pid) ||
		    !cJSON_AddNumberToObject(n, "self_value", (double)nd->self) ||
		    !cJSON_AddNumberToObject(n, "total_value", (double)nd->total))
			goto out;
	}
	*ret_json = cJSON_PrintUnformatted(o);
	if (!*ret_json)
		goto out;
	*ret_len = strlen(*ret_json);
	err = 0;
out:
	cJSON_Delete(o);
	tree_free(&t);
	return err;
}

void profile_query__handle(const char *store_dir, const char *method, const char *body, size_t body_len,
			   unsigned int nargs, const char *const *names, const char *const *values, int64_t now_s,
			   unsigned int *ret_status, char **ret_body, size_t *ret_len)
{
	profile_query__handle_ident(store_dir, method, body, body_len, nargs, names, values, now_s, NULL, NULL,
				    ret_status, ret_body, ret_len);
}

void profile_query__handle_ident(const char *store_dir, const char *method, const char *body, size_t body_len,
				 unsigned int nargs, const char *const *names, const char *const *values, int64_t now_s,
				 pq_ident_fn ident, void *ident_ctx, unsigned int *ret_status, char **ret_body,
				 size_t *ret_len)
{
	struct pq_request req;
	char msg[160] = "";
	int err;

	*ret_body = NULL;
	*ret_len = 0;
	if (!strcmp(method, "GET")) {
		err = profile_query__parse_args(nargs, names, values, now_s, &req, msg, sizeof(msg));
	} else if (!strcmp(method, "POST")) {
		err = profile_query__parse_json(body ? body : "", body ? body_len : 0, now_s, &req, msg, sizeof(msg));
	} else {
		*ret_status = 405;
		*ret_body = profile_query__error_json("use GET with query arguments or POST with a JSON body");
		goto out;
	}
	if (err) {
		*ret_status = 400;
		*ret_body = profile_query__error_json(msg);
		goto out;
	}
	req.ident = ident;
	req.ident_ctx = ident_ctx;
	err = profile_query__run(store_dir, &req, ret_body, ret_len);
	if (err) {
		*ret_status = 500;
		*ret_body = profile_query__error_json(strerror(-err));
		goto out;
	}
	*ret_status = 200;
	return;
out:
	*ret_len = *ret_body ? strlen(*ret_body) : 0;
}
