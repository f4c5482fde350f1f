/* bpf_util.c - user-side helpers shared by BPF probes: kernel feature checks, program variants,
 * attach/detach, scope maps, batched map reads, log2 histograms, bpf_stats. Does not log. */
#include "bpf_util.h"

#include <bpf/btf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const tracefs_roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

int gg_bpf_init(void)
{
	probe_log_route_libbpf();
	return probe_ensure_tracefs();
}

/* ---- kernel features ------------------------------------------------------------------------- */

/* vmlinux BTF, loaded on first use and kept until gg_bpf_setup_done (NULL when absent): parsed, it is
 * 5.3 MiB of this kernel's, which a probe needs only while it chooses and loads its programs. */
static struct btf *g_btf;
static int g_btf_tried;

static struct btf *vmlinux_btf(void)
{
	if (!g_btf_tried) {
		g_btf_tried = 1;
		g_btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(g_btf))
			g_btf = NULL;
	}
	return g_btf;
}

void gg_bpf_setup_done(void)
{
	btf__free(g_btf);
	g_btf = NULL;
	g_btf_tried = 0;
	/* libbpf's own copy of vmlinux BTF and the object's relocation data were freed by the load: give
	 * the pages back (glibc keeps freed heap, and a large free raises its mmap threshold) */
	malloc_trim(0);
}

int gg_bpf_has_tp_btf(const char *name)
{
	struct btf *btf = vmlinux_btf();
	char tname[256];

	if (!btf || snprintf(tname, sizeof(tname), "btf_trace_%s", name) >= (int)sizeof(tname))
		return 0;
	return btf__find_by_name_kind(btf, tname, BTF_KIND_TYPEDEF) > 0;
}

int gg_bpf_tp_btf_nargs(const char *name)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	char tname[256];
	int id;

	if (!btf || snprintf(tname, sizeof(tname), "btf_trace_%s", name) >= (int)sizeof(tname))
		return -ENOENT;
	id = btf__find_by_name_kind(btf, tname, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id); /* typedef -> pointer -> func proto */
	if (t)
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -ENOENT;
	return btf_vlen(t) - 1;
}

/* The enumerators of a kernel enum, copied out of vmlinux BTF once so that naming a value at run time
 * does not need the whole BTF (a few KiB instead of 5 MiB). */
struct enum_cache {
	char name[64];
	unsigned int n;
	long long *vals;
	char **names;
};
#define ENUM_CACHE_MAX 4
static struct enum_cache g_enums[ENUM_CACHE_MAX];

static const struct enum_cache *enum_cache(const char *enum_name)
{
	struct enum_cache *c = NULL;
	const struct btf_type *t;
	struct btf *btf;
	int id, own;

	for (unsigned int i = 0; i < ENUM_CACHE_MAX; i++) {
		if (!strcmp(g_enums[i].name, enum_name))
			return &g_enums[i];
		if (!g_enums[i].name[0] && !c)
			c = &g_enums[i];
	}
	if (!c || strlen(enum_name) >= sizeof(c->name))
		return NULL;
	own = !g_btf; /* after setup: load it for this copy only */
	btf = vmlinux_btf();
	id = btf ? btf__find_by_name_kind(btf, enum_name, BTF_KIND_ENUM) : -ENOENT;
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	snprintf(c->name, sizeof(c->name), "%s", enum_name); /* also when unknown: not looked up again */
	if (t && btf_is_enum(t)) {
		const struct btf_enum *e = btf_enum(t);
		unsigned int n = btf_vlen(t);

		c->vals = calloc(n, sizeof(*c->vals));
		c->names = calloc(n, sizeof(*c->names));
		for (unsigned int i = 0; c->vals && c->names && i < n; i++, e++) {
			const char *name = btf__name_by_offset(btf, e->name_off);

			c->names[c->n] = name ? strdup(name) : NULL;
			if (c->names[c->n])
				c->vals[c->n++] = e->val;
		}
	}
	if (own)
		gg_bpf_setup_done();
	return c;
}

int gg_btf_enum_name(const char *enum_name, long long value, const char *strip_prefix, char *buf, size_t len)
{
	const struct enum_cache *c = enum_cache(enum_name);

	for (unsigned int i = 0; c && i < c->n; i++) {
		const char *name = c->names[i];
		size_t plen;

		if (c->vals[i] != value)
			continue;
		plen = strip_prefix ? strlen(strip_prefix) : 0;
		if (plen && !strncmp(name, strip_prefix, plen))
			name += plen;
		snprintf(buf, len, "%s", name);
		return 0;
	}
	snprintf(buf, len, "%lld", value);
	return -ENOENT;
}

static int tracefs_access(const char *rel)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", tracefs_roots[i], rel) >= (int)sizeof(path))
			return 0;
		if (access(path, F_OK) == 0)
			return 1;
	}
	return 0;
}

int gg_bpf_has_tracepoint(const char *category, const char *name)
{
	char rel[512];

	if (snprintf(rel, sizeof(rel), "events/%s/%s", category, name) >= (int)sizeof(rel))
		return 0;
	return tracefs_access(rel);
}

/* 1 when some tracefs events/<category>/<name> exists (raw tracepoints are named without category). */
static int has_tracepoint_any_category(const char *name)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = NULL;
	int found = 0;

	for (size_t i = 0; !d && i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/events", tracefs_roots[i]) < (int)sizeof(path))
			d = opendir(path);
	}
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		found = gg_bpf_has_tracepoint(de->d_name, name);
	}
	closedir(d);
	return found;
}

int gg_bpf_has_kprobe(const char *func)
{
	char path[PATH_MAX], line[512];
	size_t flen = strlen(func);
	int found = 0;
	FILE *f = NULL;

	if (!tracefs_access("kprobe_events"))
		return 0;
	for (size_t i = 0; !f && i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/available_filter_functions", tracefs_roots[i]) < (int)sizeof(path))
			f = fopen(path, "re");
	}
	if (!f)
		return 0;
	/* Lines are "func" or "func [module]". */
	while (!found && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, func, flen) && (line[flen] == '\n' || line[flen] == ' ' || line[flen] == '\0'))
			found = 1;
	}
	fclose(f);
	return found;
}

int gg_bpf_prog_hook_available(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	const char *slash, *p;
	char cat[128], func[256];
	size_t n;

	if (!sec)
		return 0;
	if (!strncmp(sec, "tp_btf/", 7))
		return gg_bpf_has_tp_btf(sec + 7);
	if (!strncmp(sec, "raw_tp/", 7) || !strncmp(sec, "raw_tracepoint/", 15)) {
		p = strchr(sec, '/') + 1;
		return gg_bpf_has_tp_btf(p) || has_tracepoint_any_category(p);
	}
	if (!strncmp(sec, "tp/", 3) || !strncmp(sec, "tracepoint/", 11)) {
		p = strchr(sec, '/') + 1;
		slash = strchr(p, '/');
		if (!slash || (size_t)(slash - p) >= sizeof(cat))
			return 0;
		memcpy(cat, p, (size_t)(slash - p));
		cat[slash - p] = '\0';
		return gg_bpf_has_tracepoint(cat, slash + 1);
	}
	if (!strncmp(sec, "kprobe/", 7) || !strncmp(sec, "kretprobe/", 10)) {
		p = strchr(sec, '/') + 1;
		n = strcspn(p, "+");
		if (!n || n >= sizeof(func))
			return 0;
		memcpy(func, p, n);
		func[n] = '\0';
		return gg_bpf_has_kprobe(func);
	}
	/* fentry/fexit need a trampoline, which some kernels refuse at load time (EPERM) with no way
	 * to tell beforehand: they are never chosen automatically. */
	if (!strncmp(sec, "fentry/", 7) || !strncmp(sec, "fexit/", 6) || !strncmp(sec, "fmod_ret/", 9))
		return 0;
	return 1;
}

static void names_append(char *buf, size_t len, size_t *used, const char *name)
{
	int w;

	if (!buf || !len || *used >= len)
		return;
	w = snprintf(buf + *used, len - *used, "%s%s", *used ? "," : "", name);
	if (w > 0)
		*used += (size_t)w < len - *used ? (size_t)w : len - *used;
}

int gg_bpf_autoload_available(struct bpf_object *obj, char *ret_off, size_t len)
{
	struct bpf_program *prog;
	size_t used = 0;
	int off = 0;

	if (ret_off && len)
		ret_off[0] = '\0';
	bpf_object__for_each_program(prog, obj)
	{
		if (!bpf_program__autoload(prog) || gg_bpf_prog_hook_available(prog))
			continue;
		bpf_program__set_autoload(prog, false);
		names_append(ret_off, len, &used, bpf_program__name(prog));
		off++;
	}
	return off;
}

void gg_bpf_begin(void)
{
	int err = gg_bpf_init();

	if (err)
		probe_log(PLOG_WARN, "tracefs is not mounted and cannot be: %s", strerror(-err));
}

int gg_bpf_autoload(struct bpf_object *obj)
{
	char off[512];
	int n = gg_bpf_autoload_available(obj, off, sizeof(off));

	if (n > 0)
		probe_log(PLOG_WARN, "hooks missing in this kernel, not used: %s", off);
	return n;
}

int gg_bpf_open_error(void)
{
	int err = errno ? -errno : -ENOMEM;

	probe_log(PLOG_ERROR, "cannot open the BPF object: %s", strerror(-err));
	return err;
}

int gg_bpf_load(struct bpf_object_skeleton *s)
{
	int err;

	gg_bpf_autoload(*s->obj);
	err = bpf_object__load_skeleton(s);
	if (err)
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-err));
	return err;
}

int gg_bpf_load_ringbuf(struct bpf_object_skeleton *s, struct probe_rt *rt, const struct bpf_map *map,
			ring_buffer_sample_fn cb, void *ctx, struct ring_buffer **ret_rb)
{
	int err = gg_bpf_load(s);

	if (err)
		return err;
	*ret_rb = ring_buffer__new(bpf_map__fd(map), cb, ctx, NULL);
	if (!*ret_rb) {
		err = -errno;
		probe_log(PLOG_ERROR, "ring buffer: %s", strerror(-err));
		return err;
	}
	probe_rt__watch_fd(rt, ring_buffer__epoll_fd(*ret_rb));
	return 0;
}

int gg_bpf_prefer(struct bpf_program *preferred, struct bpf_program *fallback)
{
	if (preferred && bpf_program__autoload(preferred)) {
		if (fallback)
			bpf_program__set_autoload(fallback, false);
		return 1;
	}
	if (fallback && bpf_program__autoload(fallback))
		return 0;
	return -ENOENT;
}

/* ---- attach / detach --------------------------------------------------------------------------- */

int gg_bpf_attach(struct bpf_program *prog, struct bpf_link **link)
{
	struct bpf_link *l;

	if (*link)
		return 0;
	if (!bpf_program__autoload(prog) || bpf_program__fd(prog) < 0)
		return -ENOENT;
	l = bpf_program__attach(prog);
	if (!l)
		return errno ? -errno : -EINVAL;
	*link = l;
	return 0;
}

void gg_bpf_detach(struct bpf_link **link)
{
	if (*link) {
		bpf_link__destroy(*link);
		*link = NULL;
	}
}

/* ---- maps ------------------------------------------------------------------------------------- */

/* One at a time, for kernels without the batch commands (and map types that lack them). */
static int map_dump_slow(int fd, struct gg_bpf_dump_cursor *cur, char *keys, char *vals, uint32_t key_size,
			 uint32_t val_size, uint32_t max, uint32_t *ret_n, int del)
{
	uint32_t n = 0;

	while (n < max) {
		char *k = keys + (size_t)n * key_size;

		/* Deleting: always restart from the first key (the previous one is gone). */
		if (bpf_map_get_next_key(fd, (cur->started && !del) ? (void *)cur->token : NULL, k) < 0) {
			if (errno == ENOENT) {
				cur->done = 1;
				break;
			}
			return -errno;
		}
		memcpy(cur->token, k, key_size);
		cur->started = 1;
		if (bpf_map_lookup_elem(fd, k, vals + (size_t)n * val_size) < 0) {
			if (errno == ENOENT) /* deleted meanwhile */
				continue;
			return -errno;
		}
		if (del && bpf_map_delete_elem(fd, k) < 0 && errno != ENOENT)
			return -errno;
		n++;
	}
	*ret_n = n;
	return 0;
}

int gg_bpf_map_dump(int fd, struct gg_bpf_dump_cursor *cur, void *keys, void *vals, uint32_t key_size,
		    uint32_t val_size, uint32_t max, uint32_t *ret_n, int del)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t out[8];
	uint32_t n = 0;

	*ret_n = 0;
	if (key_size > sizeof(cur->token))
		return -EINVAL;
	if (cur->done || !max)
		return 0;
	if (cur->slow)
		return map_dump_slow(fd, cur, keys, vals, key_size, val_size, max, ret_n, del);
	while (n < max) {
		uint32_t count = max - n;
		char *k = (char *)keys + (size_t)n * key_size;
		char *v = (char *)vals + (size_t)n * val_size;
		void *in = cur->started ? cur->token : NULL;
		int err;

		if (del)
			err = bpf_map_lookup_and_delete_batch(fd, in, out, k, v, &count, &opts);
		else
			err = bpf_map_lookup_batch(fd, in, out, k, v, &count, &opts);
		err = err < 0 ? -errno : 0;
		if (err == -ENOENT) {
			n += count;
			cur->done = 1;
			break;
		}
		if (err) {
			if (!cur->started && !n &&
			    (err == -EINVAL || err == -ENOTSUP || err == -EOPNOTSUPP || err == -524 /* ENOTSUPP */)) {
				cur->slow = 1;
				return map_dump_slow(fd, cur, keys, vals, key_size, val_size, max, ret_n, del);
			}
			/* ENOSPC: the next bucket holds more entries than there is room left for. */
			if (err == -ENOSPC && n)
				break;
			return err;
		}
		n += count;
		memcpy(cur->token, out, sizeof(cur->token));
		cur->started = 1;
	}
	*ret_n = n;
	return 0;
}

int gg_bpf_map_dump_all(int fd, void *keys, void *vals, uint32_t key_size, uint32_t val_size, uint32_t max,
			uint32_t *ret_n, int del)
{
	struct gg_bpf_dump_cursor cur = {0};
	uint32_t total = 0;
	int err = 0;

	while (!cur.done && total < max) {
		uint32_t n = 0;

		err = gg_bpf_map_dump(fd, &cur, (char *)keys + (size_t)total * key_size,
				      (char *)vals + (size_t)total * val_size, key_size, val_size, max - total, &n,
				      del);
		if (err || !n)
			break;
		total += n;
	}
	*ret_n = total;
	return err;
}

uint32_t gg_bpf_map_read(int fd, void *keys, void *vals, uint32_t key_size, uint32_t val_size, uint32_t max,
			 const char *what)
{
	uint32_t n = 0;
	int err = gg_bpf_map_dump_all(fd, keys, vals, key_size, val_size, max, &n, 0);

	if (err)
		probe_log(PLOG_WARN, "reading %s: %s", what, strerror(-err));
	return n;
}

int gg_bpf_map_delete_keys(int fd, const void *keys, uint32_t key_size, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (bpf_map_delete_elem(fd, (const char *)keys + (size_t)i * key_size) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

int gg_bpf_map_buf__alloc(struct gg_bpf_map_buf *b, uint32_t key_size, uint32_t val_size, uint32_t max)
{
	*b = (struct gg_bpf_map_buf){.key_size = key_size, .val_size = val_size, .max = max};
	b->keys = calloc(max, key_size);
	b->vals = calloc(max, val_size);
	return b->keys && b->vals ? 0 : -ENOMEM;
}

void gg_bpf_map_buf__free(struct gg_bpf_map_buf *b)
{
	free(b->keys);
	free(b->vals);
	*b = (struct gg_bpf_map_buf){0};
}

uint32_t gg_bpf_map_buf__read(struct gg_bpf_map_buf *b, const struct bpf_map *map)
{
	return gg_bpf_map_read(bpf_map__fd(map), b->keys, b->vals, b->key_size, b->val_size, b->max,
			       bpf_map__name(map));
}

int gg_bpf_map_buf__forget_gone(struct gg_bpf_map_buf *b, const struct bpf_map *map, uint32_t n, size_t tgid_off)
{
	char *keys = b->keys, path[32];
	uint32_t ngone = 0;

	for (uint32_t i = 0; i < n; i++) {
		const char *k = keys + (size_t)i * b->key_size;
		__u32 tgid;

		memcpy(&tgid, k + tgid_off, sizeof(tgid));
		snprintf(path, sizeof(path), "/proc/%u", tgid);
		if (access(path, F_OK))
			memmove(keys + (size_t)ngone++ * b->key_size, k, b->key_size);
	}
	return gg_bpf_map_delete_keys(bpf_map__fd(map), keys, b->key_size, ngone);
}

int gg_bpf_map_buf__dump(struct gg_bpf_map_buf *b, const struct bpf_map *map, struct gg_bpf_dump_cursor *cur,
			 uint32_t *ret_n, int del)
{
	return gg_bpf_map_dump(bpf_map__fd(map), cur, b->keys, b->vals, b->key_size, b->val_size, b->max, ret_n, del);
}

/* ---- histograms ------------------------------------------------------------------------------- */

void gg_hist_rec(struct probe_rec *r, const __u64 *slots, unsigned int first, unsigned int n, double scale, double sum)
{
	double le[GG_LOG2_SLOTS] = {0};
	uint64_t cnt[GG_LOG2_SLOTS] = {0}, overflow = 0;

	if (!n || first + n > GG_LOG2_SLOTS) {
		/* Let the record builder report the error: a 0-bucket histogram is invalid. */
		probe_rec__hist(r, 0, le, cnt, 0, sum);
		return;
	}
	cnt[0] = 0;
	for (unsigned int s = 0; s <= first; s++)
		cnt[0] += slots[s];
	le[0] = ldexp(1.0, (int)first + 1) * scale;
	for (unsigned int k = 1; k < n; k++) {
		cnt[k] = slots[first + k];
		le[k] = ldexp(1.0, (int)(first + k) + 1) * scale;
	}
	for (unsigned int s = first + n; s < GG_LOG2_SLOTS; s++)
		overflow += slots[s];
	probe_rec__hist(r, n, le, cnt, overflow, sum);
}

unsigned int gg_hist_slot(uint64_t v)
{
	unsigned int s = v > 1 ? 63u - (unsigned int)__builtin_clzll(v) : 0;

	return s < GG_LOG2_SLOTS ? s : GG_LOG2_SLOTS - 1;
}

uint64_t gg_hist_count(const __u64 *slots)
{
	uint64_t c = 0;

	for (unsigned int s = 0; s < GG_LOG2_SLOTS; s++)
		c += slots[s];
	return c;
}

uint64_t gg_hist_quantile(const __u64 *slots, double q)
{
	uint64_t total = gg_hist_count(slots), acc = 0;
	double want;

	if (!total)
		return 0;
	want = q * (double)total;
	for (unsigned int s = 0; s < GG_LOG2_SLOTS; s++) {
		acc += slots[s];
		if ((double)acc >= want && acc)
			return (uint64_t)1 << (s + 1);
	}
	return (uint64_t)1 << GG_LOG2_SLOTS;
}

/* ---- events ---------------------------------------------------------------------------------- */

static const char *const event_v2_fields[] = {"entity_name", "entity_id", "metric", "severity",
					      "body",	     "body_zh",	  "labels", "event_type"};
static const unsigned char event_v2_kinds[] = {PROBE_F_KEY,   PROBE_F_KEY,   PROBE_F_KEY,   PROBE_F_LABEL,
					       PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL};
const struct probe_table gg_tbl_event_v2 = {"event_v2", 8, event_v2_fields, event_v2_kinds};

void gg_event_label(char *buf, size_t len, size_t *used, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = *used, start = *used;

	if (!len || n >= len)
		return;
	if (n && n + 1 < len)
		buf[n++] = '&';
	for (const char *p = name; *p && n + 1 < len; p++)
		buf[n++] = *p;
	if (n + 1 < len)
		buf[n++] = '=';
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			    *p == '_' || *p == '-' || *p == '.' || *p == ':';

		if (n + (plain ? 1 : 3) >= len) {
			n = start; /* does not fit: leave the whole pair out */
			break;
		}
		if (plain) {
			buf[n++] = (char)*p;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[*p >> 4];
			buf[n++] = hex[*p & 15];
		}
	}
	buf[n] = '\0';
	*used = n;
}

int gg_event_emit(struct probe_rt *rt, const char *entity, const char *entity_id, const char *metric,
		  const char *severity, const char *body, const char *body_zh, const char *labels)
{
	struct probe_rec *r = malloc(sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	probe_rec__begin(r, &gg_tbl_event_v2);
	probe_rec__str(r, entity);
	probe_rec__str(r, entity_id);
	probe_rec__str(r, metric);
	probe_rec__str(r, severity);
	probe_rec__str(r, body);
	probe_rec__str(r, body_zh ? body_zh : "");
	probe_rec__str(r, labels ? labels : "");
	probe_rec__str(r, "sys");
	err = probe_rt__emit(rt, r);
	free(r);
	return err;
}

/* ---- bpf_stats ---------------------------------------------------------------------------------- */

int gg_bpf_stats_enable(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	return fd < 0 ? (errno ? -errno : fd) : fd;
}

int gg_bpf_stats_start(int on)
{
	int fd = on ? gg_bpf_stats_enable() : -1;

	if (on && fd < 0)
		probe_log(PLOG_WARN, "--bpf-stats: %s", strerror(-fd));
	return on ? fd : -ENODATA;
}

int gg_bpf_prog_stats(const struct bpf_program *prog, uint64_t *ret_run_ns, uint64_t *ret_run_cnt)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd = bpf_program__fd(prog);

	if (fd < 0)
		return -ENOENT;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	*ret_run_ns = info.run_time_ns;
	*ret_run_cnt = info.run_cnt;
	return 0;
}

int gg_bpf_stats_fmt(struct bpf_object *obj, struct gg_bpf_stats_prev *prev, size_t nprev, char *buf, size_t len)
{
	struct bpf_program *prog;
	size_t i = 0, used = 0;
	int described = 0;

	if (len)
		buf[0] = '\0';
	bpf_object__for_each_program(prog, obj)
	{
		uint64_t ns, cnt, dns, dcnt;
		char item[128];

		if (i >= nprev)
			break;
		if (gg_bpf_prog_stats(prog, &ns, &cnt) == 0) {
			dns = ns - prev[i].run_ns;
			dcnt = cnt - prev[i].run_cnt;
			prev[i].run_ns = ns;
			prev[i].run_cnt = cnt;
			snprintf(item, sizeof(item), "%s=%llu/%lluns", bpf_program__name(prog),
				 (unsigned long long)dcnt, (unsigned long long)(dcnt ? dns / dcnt : 0));
			names_append(buf, len, &used, item);
			described++;
		}
		i++;
	}
	return described;
}

int gg_bpf_apply_hooks(const struct gg_bpf_hook *hooks, size_t n, unsigned int subprobes,
		       const struct gg_bpf_hook **ret_failed)
{
	int first = 0;

	for (size_t i = 0; i < n; i++) {
		int err;

		if (!bpf_program__autoload(hooks[i].prog))
			continue;
		if (!(subprobes & hooks[i].need)) {
			gg_bpf_detach(hooks[i].link);
			continue;
		}
		err = gg_bpf_attach(hooks[i].prog, hooks[i].link);
		if (err && !first) {
			first = err;
			if (ret_failed)
				*ret_failed = &hooks[i];
		}
	}
	/* loaded and attached: what only set-up needed can go */
	gg_bpf_setup_done();
	return first;
}

void gg_bpf_stats_log(struct bpf_object *obj, struct gg_bpf_stats_prev *prev, size_t nprev)
{
	char buf[2048];

	if (gg_bpf_stats_fmt(obj, prev, nprev, buf, sizeof(buf)) > 0)
		probe_log(PLOG_INFO, "bpf stats (runs/ns per run): %s", buf);
}

int gg_bpf_attach_hooks(const struct gg_bpf_hook *hooks, size_t n, unsigned int subprobes)
{
	const struct gg_bpf_hook *bad = NULL;
	int err = gg_bpf_apply_hooks(hooks, n, subprobes, &bad);

	if (err)
		probe_log(PLOG_WARN, "cannot attach %s: %s", bpf_program__name(bad->prog), strerror(-err));
	return err;
}
