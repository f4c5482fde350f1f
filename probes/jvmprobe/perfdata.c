/* perfdata.c - HotSpot perf data (hsperfdata) parser: prologue, entries, and jvmprobe's counters. Every
 * offset and length comes from a file another user (the JVM's) writes, so each is checked against the
 * buffer before it is used; nothing here trusts the file. */
#include "perfdata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const unsigned char *p, int little)
{
	return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
		      : (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static uint64_t rd64(const unsigned char *p, int little)
{
	uint64_t lo = rd32(p + (little ? 0 : 4), little), hi = rd32(p + (little ? 4 : 0), little);

	return hi << 32 | lo;
}

int pd_iter__init(struct pd_iter *it, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	uint32_t used, first, n;
	int little;

	if (!b || len < PD_PROLOGUE_LEN || rd32(b, 0) != PD_MAGIC || b[4] > 1)
		return -EINVAL;
	little = b[4];
	if (b[5] != 2)
		return -ENOTSUP;
	if (!b[7])
		return -EAGAIN;
	used = rd32(b + 8, little);
	first = rd32(b + 24, little);
	n = rd32(b + 28, little);
	/* "used" is what the VM has written; a file shorter than that was cut (the walk stops at its end) */
	if (used < PD_PROLOGUE_LEN || first < PD_PROLOGUE_LEN || first > used)
		return -EINVAL;
	*it = (struct pd_iter){
		.buf = b,
		.len = used < len ? used : len,
		.off = first,
		.left = n < PD_ENTRIES_MAX ? n : PD_ENTRIES_MAX,
		.little = little,
	};
	return 0;
}

int pd_iter__next(struct pd_iter *it, struct pd_entry *ret)
{
	const unsigned char *e;
	uint32_t elen, name_off, vlen, data_off, data_len, esize;
	char type;

	if (!it->left || it->off >= it->len)
		return 0;
	if (it->len - it->off < PD_ENTRY_HDR_LEN)
		return -EINVAL;
	e = it->buf + it->off;
	elen = rd32(e, it->little);
	name_off = rd32(e + 4, it->little);
	vlen = rd32(e + 8, it->little);
	type = (char)e[12];
	data_off = rd32(e + 16, it->little);
	if (elen < PD_ENTRY_HDR_LEN || elen > it->len - it->off || name_off < PD_ENTRY_HDR_LEN || name_off >= elen ||
	    data_off < PD_ENTRY_HDR_LEN || data_off > elen)
		return -EINVAL;
	/* the name is NUL-terminated before the data (or the entry's end) */
	if (!memchr(e + name_off, 0, (data_off > name_off ? data_off : elen) - name_off))
		return -EINVAL;
	switch (type) {
	case 'J':
		esize = 8;
		break;
	case 'B':
	case 'Z':
		esize = 1;
		break;
	case 'I':
	case 'F':
		esize = 4;
		break;
	case 'S':
	case 'C':
		esize = 2;
		break;
	case 'D':
		esize = 8;
		break;
	default:
		esize = 0; /* unknown: no data */
		break;
	}
	if (vlen > elen)
		return -EINVAL;
	data_len = esize * (vlen ? vlen : 1);
	if (!esize || data_len > elen - data_off)
		data_len = 0;
	if (type && esize && data_len == 0)
		return -EINVAL;
	*ret = (struct pd_entry){
		.name = (const char *)e + name_off,
		.type = type,
		.units = e[14],
		.variability = e[15],
		.vector_len = vlen,
		.data = e + data_off,
		.data_len = data_len,
		.little = it->little,
	};
	it->off += elen;
	it->left--;
	return 1;
}

int64_t pd_entry__long(const struct pd_entry *e)
{
	if (e->type != 'J' || e->vector_len || e->data_len != 8)
		return 0;
	return (int64_t)rd64(e->data, e->little);
}

void pd_entry__str(const struct pd_entry *e, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return;
	if (e->type == 'B' && e->vector_len) {
		const unsigned char *nul = memchr(e->data, 0, e->data_len);

		n = nul ? (size_t)(nul - e->data) : e->data_len;
		if (n > len - 1)
			n = len - 1;
		memcpy(buf, e->data, n);
	}
	buf[n] = 0;
}

/* "<prefix><index>.<rest>": the index (below max) and rest, or -1. */
static int indexed(const char *name, const char *prefix, unsigned int max, const char **rest)
{
	size_t pl = strlen(prefix);
	unsigned int v = 0;
	const char *p;

	if (strncmp(name, prefix, pl))
		return -1;
	p = name + pl;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (unsigned int)(*p++ - '0');
		if (v >= max)
			return -1;
	}
	if (*p != '.')
		return -1;
	*rest = p + 1;
	return (int)v;
}

/* A counter (a jlong, or a string of size bytes) at off in its struct, by its HotSpot name. */
struct field {
	const char *name;
	size_t off, size; /* size 0: an int64_t */
};

#define LF(t, n, m)                  \
	{                            \
		n, offsetof(t, m), 0 \
	}
#define SF(t, n, m)                                    \
	{                                              \
		n, offsetof(t, m), sizeof(((t *)0)->m) \
	}
/* Counters by their exact name. */
static const struct field jvm_fields[] = {
	SF(struct pd_jvm, "java.property.java.vm.name", vm_name),
	SF(struct pd_jvm, "java.property.java.vm.vendor", vm_vendor),
	SF(struct pd_jvm, "java.property.java.vm.version", vm_version),
	SF(struct pd_jvm, "sun.rt.javaCommand", command),
	SF(struct pd_jvm, "sun.gc.policy.name", gc_policy),
	LF(struct pd_jvm, "sun.os.hrt.frequency", hrt_frequency),
	LF(struct pd_jvm, "sun.rt.createVmBeginTime", vm_begin_ms),
	LF(struct pd_jvm, "java.cls.loadedClasses", cls_loaded),
	LF(struct pd_jvm, "java.cls.unloadedClasses", cls_unloaded),
	LF(struct pd_jvm, "java.cls.sharedLoadedClasses", cls_shared_loaded),
	LF(struct pd_jvm, "java.cls.sharedUnloadedClasses", cls_shared_unloaded),
	LF(struct pd_jvm, "java.threads.live", threads_live),
	LF(struct pd_jvm, "java.threads.daemon", threads_daemon),
	LF(struct pd_jvm, "java.threads.livePeak", threads_peak),
	LF(struct pd_jvm, "java.threads.started", threads_started),
	LF(struct pd_jvm, "sun.rt.safepoints", safepoints),
	LF(struct pd_jvm, "sun.rt.safepointTime", safepoint_ticks),
	LF(struct pd_jvm, "sun.rt.safepointSyncTime", safepoint_sync_ticks),
	LF(struct pd_jvm, "java.ci.totalTime", jit_ticks),
	LF(struct pd_jvm, "sun.ci.totalCompiles", jit_compiles),
};
/* sun.gc.collector.<i>.*, sun.gc.generation.<i>.*, and the pools: a generation's spaces, metaspace. */
static const struct field collector_fields[] = {
	SF(struct pd_collector, "name", name),
	LF(struct pd_collector, "invocations", invocations),
	LF(struct pd_collector, "time", ticks),
};
static const struct field gen_fields[] = {
	SF(struct pd_gen, "name", name),
	LF(struct pd_gen, "capacity", capacity),
	LF(struct pd_gen, "maxCapacity", max),
	LF(struct pd_gen, "minCapacity", min),
};
static const struct field pool_fields[] = {
	SF(struct pd_pool, "name", name),	  LF(struct pd_pool, "used", used),
	LF(struct pd_pool, "capacity", capacity), LF(struct pd_pool, "maxCapacity", max),
	LF(struct pd_pool, "initCapacity", init), LF(struct pd_pool, "minCapacity", init),
};
#undef LF
#undef SF
#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* Set the counter of base named name (from fields[0..n)) to e's value: 1, or 0 when none is named so. */
static int set_field(void *base, const struct field *fields, size_t n, const char *name, const struct pd_entry *e)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(name, fields[i].name))
			continue;
		if (fields[i].size)
			pd_entry__str(e, (char *)base + fields[i].off, fields[i].size);
		else
			*(int64_t *)((char *)base + fields[i].off) = pd_entry__long(e);
		return 1;
	}
	return 0;
}

static int pool_field(struct pd_pool *p, const char *rest, const struct pd_entry *e)
{
	if (!set_field(p, pool_fields, NFIELDS(pool_fields), rest, e))
		return 0;
	p->present = 1;
	return 1;
}

static void take(struct pd_jvm *j, const struct pd_entry *e)
{
	const char *n = e->name, *rest;
	int i, k;

	if (set_field(j, jvm_fields, NFIELDS(jvm_fields), n, e))
		return;
	if ((i = indexed(n, "sun.gc.collector.", PD_COLLECTORS_MAX, &rest)) >= 0) {
		if (!set_field(&j->collectors[i], collector_fields, NFIELDS(collector_fields), rest, e))
			return;
		j->collectors[i].present = 1;
		if ((unsigned int)i >= j->ncollectors)
			j->ncollectors = (unsigned int)i + 1;
	} else if ((i = indexed(n, "sun.gc.generation.", PD_GENS_MAX, &rest)) >= 0) {
		const char *srest;

		if ((unsigned int)i >= j->ngens)
			j->ngens = (unsigned int)i + 1;
		if ((k = indexed(rest, "space.", PD_SPACES_MAX, &srest)) >= 0) {
			if (pool_field(&j->gens[i].spaces[k], srest, e) && (unsigned int)k >= j->gens[i].nspaces)
				j->gens[i].nspaces = (unsigned int)k + 1;
			return;
		}
		j->gens[i].present = 1;
		(void)set_field(&j->gens[i], gen_fields, NFIELDS(gen_fields), rest, e);
	} else if (!strncmp(n, "sun.gc.metaspace.", 17))
		(void)pool_field(&j->metaspace, n + 17, e);
	else if (!strncmp(n, "sun.gc.compressedclassspace.", 28))
		(void)pool_field(&j->class_space, n + 28, e);
}

int pd_jvm__parse(const void *buf, size_t len, struct pd_jvm *ret)
{
	struct pd_iter it;
	struct pd_entry e;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = pd_iter__init(&it, buf, len);
	if (err)
		return err;
	while (pd_iter__next(&it, &e) > 0) {
		take(ret, &e);
		ret->nentries++;
	}
	if (ret->metaspace.present && !ret->metaspace.name[0])
		snprintf(ret->metaspace.name, sizeof(ret->metaspace.name), "metaspace");
	if (ret->class_space.present && !ret->class_space.name[0])
		snprintf(ret->class_space.name, sizeof(ret->class_space.name), "compressedclassspace");
	return 0;
}
