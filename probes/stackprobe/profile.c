/* profile.c - turns kernel stacks into named frames and sums them per thread (profile store) and per
 * folded line (flame graphs, pprof, Pyroscope), with [Pod]/[Con]/[<pid>] comm bottom frames. */
#include <malloc.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../supervisor/identity.h"
#include "probe.h"
#include "stackprobe.h"

#define SP_SYM_ELF_BYTES (4u << 20)
#define FTAB_MAX_ENTRIES 200000u
#define FTAB_MAX_BYTES	 (64u << 20)
#define CONT_SLOTS	 4096u
#define CONT_LEN	 320u /* "[Pod]<name>;[Con]<name>", each name cut at CONT_NAME_MAX */
#define CONT_NAME_MAX	 140u

const char *const sp_event_names[SP_EV_NR] = {"oncpu", "offcpu", "mem", "mem_alloc", "mem_live"};
const char *const sp_event_query_names[SP_EV_NR] = {"on-cpu", "off-cpu", "mem", "mem-alloc", "mem-live"};
const char *const sp_event_units[SP_EV_NR] = {"samples", "us", "faults", "bytes", "bytes"};

/* ---- ftab ----------------------------------------------------------------------------------------- */

static uint32_t fnv1a(uint32_t a, uint32_t b, const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	h = (h ^ a) * 16777619u;
	h = (h ^ b) * 16777619u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h ? h : 1;
}

void ftab__init(struct ftab *t, size_t max_n, size_t max_bytes)
{
	memset(t, 0, sizeof(*t));
	t->max_n = max_n;
	t->max_bytes = max_bytes;
}

static int ftab_grow(struct ftab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct ftab_ent **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct ftab_ent *e = t->slots[i];
		size_t j;

		if (!e)
			continue;
		for (j = e->hash & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = e;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

static struct ftab_ent **ftab_slot(struct ftab *t, uint32_t a, uint32_t b, const char *key, size_t len, uint32_t h)
{
	for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		struct ftab_ent *e = t->slots[j];

		if (!e || (e->hash == h && e->a == a && e->b == b && e->len == len && !memcmp(e->key, key, len)))
			return &t->slots[j];
	}
}

struct ftab_ent *ftab__find(struct ftab *t, uint32_t a, uint32_t b, const char *key, size_t len)
{
	if (!t->cap)
		return NULL;
	return *ftab_slot(t, a, b, key, len, fnv1a(a, b, key, len));
}

int ftab__add(struct ftab *t, uint32_t a, uint32_t b, const char *key, size_t len, uint64_t value)
{
	uint32_t h = fnv1a(a, b, key, len);
	struct ftab_ent **slot, *e;

	if ((t->n + 1) * 2 > t->cap && ftab_grow(t)) {
		t->dropped += value;
		return -ENOMEM;
	}
	slot = ftab_slot(t, a, b, key, len, h);
	if (*slot) {
		(*slot)->value += value;
		return 0;
	}
	if (t->n >= t->max_n || t->bytes + len + sizeof(*e) > t->max_bytes || len > UINT32_MAX) {
		t->dropped += value;
		return -E2BIG;
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e) {
		t->dropped += value;
		return -ENOMEM;
	}
	e->value = value;
	e->a = a;
	e->b = b;
	e->hash = h;
	e->len = (uint32_t)len;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	*slot = e;
	t->n++;
	t->bytes += len + sizeof(*e);
	return 0;
}

void ftab__clear(struct ftab *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->slots[i]);
		t->slots[i] = NULL;
	}
	t->n = 0;
	t->bytes = 0;
}

void ftab__free(struct ftab *t)
{
	ftab__clear(t);
	free(t->slots);
	t->slots = NULL;
	t->cap = 0;
}

static int ent_cmp(const void *x, const void *y)
{
	const struct ftab_ent *a = *(struct ftab_ent *const *)x, *b = *(struct ftab_ent *const *)y;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

struct ftab_ent **ftab__list(const struct ftab *t, int sorted, size_t *ret_n)
{
	struct ftab_ent **v = malloc((t->n ? t->n : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i])
			v[n++] = t->slots[i];
	if (sorted && n > 1)
		qsort(v, n, sizeof(*v), ent_cmp);
	*ret_n = n;
	return v;
}

/* ---- string building ------------------------------------------------------------------------------ */

/* Append a frame name made safe for folded lines: ';' -> ':', control characters -> ' '. */
static void sb_name(struct sp_buf *b, const char *s)
{
	size_t n = strlen(s);

	sp_buf__reserve(b, n);
	if (b->err)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		b->s[b->len++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	b->s[b->len] = '\0';
}

static void sb_raw(struct sp_buf *b, const char *s, size_t n)
{
	sp_buf__reserve(b, n);
	if (b->err)
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_str(struct sp_buf *b, const char *s)
{
	sb_raw(b, s, strlen(s));
}

/* ---- containers ----------------------------------------------------------------------------------- */

/* Containers of processes seen in this drain: tgid -> "[Pod]<pod>;[Con]<container>" (or ""). */
struct cont_ent {
	uint32_t tgid;
	uint32_t round;
	char frames[CONT_LEN];
};

static struct cont_ent g_cont[CONT_SLOTS];
static uint32_t g_cont_round = 1;
static struct probe_buf g_cgroup_buf;
static struct gg_identity *g_ident; /* NULL: not made yet, or GALA_GOPHER_IDENTITY=off */
static int g_ident_tried;

/* The supervisor's container identity resolver (supervisor/identity.c), reading the runtimes' state
 * where the supervisor's identity section says (it passes it in the environment; run alone: the
 * runtimes' default places). */
static struct gg_identity *identity(void)
{
	const char *off = getenv("GALA_GOPHER_IDENTITY");
	struct gg_identity_opts o = {
		.containerd_dir = getenv("GALA_GOPHER_CONTAINERD_DIR"),
		.crio_dir = getenv("GALA_GOPHER_CRIO_DIR"),
		.storage_dir = getenv("GALA_GOPHER_STORAGE_DIR"),
		.docker_dir = getenv("GALA_GOPHER_DOCKER_DIR"),
		.max_procs = 4096,
		.max_cgroups = 1024,
	};

	if (!g_ident_tried && !(off && !strcmp(off, "off")))
		g_ident = gg_identity__new(&o);
	g_ident_tried = 1;
	return g_ident;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A name as one folded frame: ';' separates frames, control characters would break lines. */
static void frame_name(char *out, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < len && n < CONT_NAME_MAX; s++)
		out[n++] = *s == ';' ? ':' : ((unsigned char)*s < 0x20 || *s == 0x7f) ? ' ' : *s;
	out[n] = '\0';
}

/* "[Pod]<pod>;[Con]<container>" of a process: the pod's name (else its UID) and the container's name
 * (else the first 12 digits of its id), as gala-gopher's frames name them. The cgroup path comes from
 * /proc/<tgid>/cgroup through the supervisor's layout parser, the names from the runtimes' state. */
static void container_frames(uint32_t tgid, char *out, size_t len)
{
	char path[64], cgpath[4096], pod[CONT_NAME_MAX + 1], con[CONT_NAME_MAX + 1];
	struct gg_identity *id = identity();
	const struct gg_ident *ident;
	struct gg_cgroup_info ci;

	out[0] = '\0';
	if (id) {
		ident = gg_identity__lookup(id, tgid, mono_ms());
		if (!ident->len[GG_IDENT_CONTAINER_ID])
			return;
		frame_name(pod, sizeof(pod),
			   ident->len[GG_IDENT_POD] ? ident->v[GG_IDENT_POD] : ident->v[GG_IDENT_POD_ID]);
		if (ident->len[GG_IDENT_CONTAINER_NAME])
			frame_name(con, sizeof(con), ident->v[GG_IDENT_CONTAINER_NAME]);
		else
			snprintf(con, sizeof(con), "%.12s", ident->v[GG_IDENT_CONTAINER_ID]);
	} else {
		snprintf(path, sizeof(path), "/proc/%u/cgroup", tgid);
		if (probe_read_file(path, &g_cgroup_buf, 1u << 16) ||
		    gg_proc_cgroup__path(g_cgroup_buf.data, cgpath, sizeof(cgpath), NULL) ||
		    gg_cgroup__parse(cgpath, &ci) || !ci.container_id[0])
			return;
		snprintf(pod, sizeof(pod), "%s", ci.pod_uid);
		snprintf(con, sizeof(con), "%.12s", ci.container_id);
	}
	if (pod[0])
		snprintf(out, len, "[Pod]%s;[Con]%s", pod, con);
	else
		snprintf(out, len, "[Con]%s", con);
}

static const char *container_of(uint32_t tgid)
{
	uint32_t i = (tgid * 2654435761u) % CONT_SLOTS;

	for (unsigned int probes = 0; probes < 16; probes++, i = (i + 1) % CONT_SLOTS) {
		struct cont_ent *e = &g_cont[i];

		if (e->round == g_cont_round && e->tgid == tgid)
			return e->frames;
		if (e->round != g_cont_round) {
			e->round = g_cont_round;
			e->tgid = tgid;
			container_frames(tgid, e->frames, sizeof(e->frames));
			return e->frames;
		}
	}
	return ""; /* table busy: a miss costs only the container frames */
}

/* ---- samples -------------------------------------------------------------------------------------- */

int sp_profile__start(struct sp_profile *p, struct sp_sampler **ret_s, int cpu_keys, const struct gg_scope *scope)
{
	int err = sp_profile__init(p);

	if (err) {
		probe_log(PLOG_ERROR, "cannot set up the symbolizer: %s", strerror(-err));
		return err;
	}
	*ret_s = sp_sampler__new();
	if (!*ret_s) {
		err = -errno;
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-err));
		return err;
	}
	sp_sampler__set_cpu_keys(*ret_s, cpu_keys);
	err = sp_sampler__set_scope(*ret_s, scope);
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
	return 0;
}

int sp_profile__init(struct sp_profile *p)
{
	/* ELF symbol tables of every process sampled: bounded, least recently used dropped first (each is
	 * read again when needed, counted in elf_loads) */
	struct symbolizer_opts so = {.max_elf_bytes = SP_SYM_ELF_BYTES};

	memset(p, 0, sizeof(*p));
	/* Symbol tables and folded-stack tables are large blocks that come and go: from mmap, so that a
	 * freed one goes back to the kernel at once instead of staying in the heap (glibc otherwise raises
	 * its mmap threshold after the first large free and keeps such blocks in the heap) */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024);
	p->sym = symbolizer__new(&so);
	if (!p->sym)
		return -errno;
	for (int i = 0; i < SP_EV_NR; i++) {
		ftab__init(&p->acc[i].store, FTAB_MAX_ENTRIES, FTAB_MAX_BYTES);
		ftab__init(&p->acc[i].period, FTAB_MAX_ENTRIES, FTAB_MAX_BYTES);
		ftab__init(&p->acc[i].pyro, FTAB_MAX_ENTRIES, FTAB_MAX_BYTES);
	}
	return 0;
}

void sp_profile__free(struct sp_profile *p)
{
	for (int i = 0; i < SP_EV_NR; i++) {
		ftab__free(&p->acc[i].store);
		ftab__free(&p->acc[i].period);
		ftab__free(&p->acc[i].pyro);
	}
	symbolizer__free(p->sym);
	free(p->line);
	probe_buf__free(&g_cgroup_buf);
	gg_identity__free(g_ident);
	g_ident = NULL;
	g_ident_tried = 0;
	memset(p, 0, sizeof(*p));
}

void sp_profile__begin(struct sp_profile *p)
{
	struct sp_acc *live = &p->acc[SP_EV_MEM_LIVE];

	/* mem_live is a state, not a sum: each drain brings the whole of it, which replaces the last */
	ftab__clear(&live->store);
	ftab__clear(&live->period);
	ftab__clear(&live->pyro);
	live->value_total = 0;
	symbolizer__begin_round(p->sym);
	if (++g_cont_round == 0)
		g_cont_round = 1;
}

/* One frame in both notations: store (DeepFlow: "[k] f", "[l] f", "f") and folded ("f_[k]", "f"). */
static void add_frame(struct sp_acc *acc, struct sp_buf *st, struct sp_buf *fo, const struct sym_frame *f, uint64_t ip)
{
	char tmp[64];

	acc->frames++;
	if (st->len)
		sb_raw(st, ";", 1);
	if (fo->len)
		sb_raw(fo, ";", 1);
	if (f->name) {
		if (f->kind == SYM_KERNEL)
			sb_str(st, "[k] ");
		else if (f->kind == SYM_LIB)
			sb_str(st, "[l] ");
		sb_name(st, f->name);
		sb_name(fo, f->name);
		if (f->kind == SYM_KERNEL)
			sb_str(fo, "_[k]");
		return;
	}
	if (f->module) {
		/* stripped: the module's name, as perf and DeepFlow show it */
		if (f->module[0] == '[') {
			sb_name(st, f->module);
			sb_name(fo, f->module);
		} else {
			sb_raw(st, "[", 1);
			sb_name(st, f->module);
			sb_raw(st, "]", 1);
			sb_raw(fo, "[", 1);
			sb_name(fo, f->module);
			sb_raw(fo, "]", 1);
		}
		return;
	}
	acc->unknown_frames++;
	snprintf(tmp, sizeof(tmp), "[unknown] 0x%016" PRIx64, ip);
	sb_str(st, tmp);
	sb_str(fo, tmp);
	if (f->kind == SYM_KERNEL || ip >= 0xffff800000000000ull)
		sb_str(fo, "_[k]");
}

/* Python frames py[from, to) (innermost first), added outermost first. */
static void add_py_range(struct sp_acc *acc, struct sp_buf *st, struct sp_buf *fo, const struct sp_sample *smp,
			 unsigned int from, unsigned int to)
{
	for (unsigned int j = to; j-- > from;) {
		struct sym_frame f = {.kind = SYM_JIT, .name = smp->py[j]};

		add_frame(acc, st, fo, &f, 0);
	}
}

/*
 * User frames with the Python frames of the sample: each C-level run of the interpreter
 * (_PyEval_EvalFrameDefault in the native stack) is replaced by the Python frames it ran. Those are
 * cut at the entry frames (the first Python frame of each such run): the innermost run gets the
 * innermost piece, the outermost eval frame everything left. When the native stack has no eval frame
 * (an interpreter without frame pointers whose walk stopped early), the Python frames go first, under
 * the process, and the native frames below them.
 */
static void add_user_py(struct sp_profile *p, struct sp_acc *acc, struct sp_buf *st, struct sp_buf *fo,
			const struct sp_sample *smp)
{
	static struct sym_frame uf[SP_MAX_DEPTH + 2];
	unsigned int cut[SP_PY_DEPTH + 1], ncut = 0, nev = 0, un = smp->un < SP_MAX_DEPTH + 2 ? smp->un : 0;

	for (unsigned int i = 0; i < un; i++) {
		(void)symbolizer__user(p->sym, smp->tgid, i ? smp->uips[i] - 1 : smp->uips[i], &uf[i]);
		if (uf[i].kind == SYM_UNKNOWN)
			uf[i].module = NULL;
		nev += uf[i].name && !strcmp(uf[i].name, "_PyEval_EvalFrameDefault");
	}
	/* pieces: [cut[k], cut[k+1]) innermost first, each ending with an entry frame */
	cut[ncut++] = 0;
	for (unsigned int j = 0; j < smp->pyn; j++)
		if (smp->py_entry[j] && j + 1 < smp->pyn && ncut < SP_PY_DEPTH)
			cut[ncut++] = j + 1;
	cut[ncut] = smp->pyn;
	if (!nev)
		add_py_range(acc, st, fo, smp, 0, smp->pyn);
	for (unsigned int i = un, ev = nev; i-- > 0;) {
		if (nev && uf[i].name && !strcmp(uf[i].name, "_PyEval_EvalFrameDefault")) {
			ev--; /* this eval frame's index from the innermost */
			if (ev == nev - 1) {
				if (ev < ncut)
					add_py_range(acc, st, fo, smp, cut[ev], smp->pyn);
			} else if (ev < ncut) {
				add_py_range(acc, st, fo, smp, cut[ev], cut[ev + 1]);
			}
			continue;
		}
		add_frame(acc, st, fo, &uf[i], smp->uips[i]);
	}
}

int sp_profile__add(void *ctx, const struct sp_sample *smp)
{
	struct sp_profile *p = ctx;
	struct sp_acc *acc = &p->acc[smp->event];
	struct sp_buf st = {.s = p->line, .cap = p->line_cap}, fo = {0}, key = {0};
	const char *cont = container_of(smp->tgid);
	char pidframe[48];
	unsigned int kskip = 0;
	int err;

	if (st.s)
		st.s[0] = '\0';
	/* user frames, outermost first; return addresses point after the call: look up ip - 1 */
	if (smp->pyn) {
		add_user_py(p, acc, &st, &fo, smp);
	} else {
		for (unsigned int i = smp->un; i-- > 0;) {
			struct sym_frame f;
			uint64_t ip = smp->uips[i];

			(void)symbolizer__user(p->sym, smp->tgid, i ? ip - 1 : ip, &f);
			if (f.kind == SYM_UNKNOWN)
				f.module = NULL;
			add_frame(acc, &st, &fo, &f, ip);
		}
	}
	/* the innermost kernel frames of a tracepoint stack are the BPF program and its trampoline */
	while (kskip < smp->kn) {
		struct sym_frame f;

		if (symbolizer__kernel(p->sym, kskip ? smp->kips[kskip] - 1 : smp->kips[kskip], &f) ||
		    (strncmp(f.name, "bpf_prog_", 9) && strncmp(f.name, "bpf_trace_run", 13) &&
		     strncmp(f.name, "__bpf_trace_", 12)))
			break;
		kskip++;
	}
	for (unsigned int i = smp->kn; i-- > kskip;) {
		struct sym_frame f;
		uint64_t ip = smp->kips[i];

		(void)symbolizer__kernel(p->sym, i ? ip - 1 : ip, &f);
		add_frame(acc, &st, &fo, &f, ip);
	}
	p->line = st.s;
	p->line_cap = st.cap;

	/* store: "pcomm\ttcomm\tcontainer\tframes" per thread */
	sb_name(&key, smp->pcomm[0] ? smp->pcomm : "?");
	sb_raw(&key, "\t", 1);
	sb_name(&key, smp->comm[0] ? smp->comm : "?");
	sb_raw(&key, "\t", 1);
	sb_str(&key, cont);
	sb_raw(&key, "\t", 1);
	if (st.len)
		sb_raw(&key, st.s, st.len);
	err = key.err ? key.err : st.err;
	if (!err)
		(void)ftab__add(&acc->store, smp->tgid, smp->pid, key.s, key.len, smp->value);

	/* folded: "[Pod]..;[Con]..;[<pid>] comm;frames" */
	key.len = 0;
	if (cont[0]) {
		sb_str(&key, cont);
		sb_raw(&key, ";", 1);
	}
	snprintf(pidframe, sizeof(pidframe), "[%u] ", smp->tgid);
	sb_str(&key, pidframe);
	sb_name(&key, smp->pcomm[0] ? smp->pcomm : "?");
	if (fo.len) {
		sb_raw(&key, ";", 1);
		sb_raw(&key, fo.s, fo.len);
	}
	if (!err)
		err = key.err ? key.err : fo.err;
	if (!err) {
		(void)ftab__add(&acc->period, smp->tgid, 0, key.s, key.len, smp->value);
		if (p->pyro_on) /* a copy of the period's table: only when it is uploaded */
			(void)ftab__add(&acc->pyro, smp->tgid, 0, key.s, key.len, smp->value);
		acc->value_total += smp->value;
	}
	free(key.s);
	free(fo.s);
	return 0;
}

int sp_folded__build(struct ftab_ent **ents, size_t n, int only_tgid, uint32_t tgid, char **ret, size_t *ret_len)
{
	struct sp_buf b = {0};
	char num[32];

	sp_buf__reserve(&b, 0);
	for (size_t i = 0; i < n; i++) {
		if (only_tgid && ents[i]->a != tgid)
			continue;
		sb_raw(&b, ents[i]->key, ents[i]->len);
		snprintf(num, sizeof(num), " %" PRIu64 "\n", ents[i]->value);
		sb_str(&b, num);
	}
	if (b.err) {
		free(b.s);
		return b.err;
	}
	*ret = b.s;
	*ret_len = b.len;
	return 0;
}
