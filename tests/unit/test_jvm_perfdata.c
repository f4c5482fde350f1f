/* test_jvm_perfdata.c - jvmprobe's hsperfdata parser: a real JDK 17 G1 file, synthetic files in both byte
 * orders, and malformed ones (cut, bad lengths, unterminated names, not ready, other versions). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "perfdata.h"

#define FIXTURE "tests/unit/data/hsperfdata_g1_jdk17.bin"

static unsigned char *load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = malloc(PD_FILE_MAX);
	size_t n;

	assert_non_null(f);
	assert_non_null(b);
	n = fread(b, 1, PD_FILE_MAX, f);
	fclose(f);
	*len = n;
	return b;
}

/* The file of a `java Probe 5` (G1, 5 extra threads, 3 System.gc()), values as jcmd printed them. */
GG_TEST(test_real_file)
{
	static struct pd_jvm j;
	size_t len;
	unsigned char *b = load(FIXTURE, &len);

	assert_int_equal(len, 32768);
	assert_int_equal(pd_jvm__parse(b, len, &j), 0);
	assert_int_equal(j.nentries, 187);
	assert_string_equal(j.vm_name, "OpenJDK 64-Bit Server VM");
	assert_string_equal(j.vm_vendor, "Debian");
	assert_string_equal(j.vm_version, "17.0.15+6-Debian-1deb12u1");
	assert_string_equal(j.command, "Probe 5");
	assert_string_equal(j.gc_policy, "GarbageFirst");
	assert_int_equal(j.hrt_frequency, 1000000000);
	assert_int_equal(j.threads_live, 11);
	assert_int_equal(j.threads_daemon, 8);
	assert_int_equal(j.threads_peak, 11);
	assert_int_equal(j.threads_started, 11);
	assert_int_equal(j.cls_loaded, 6);
	assert_int_equal(j.cls_shared_loaded, 488);
	assert_int_equal(j.cls_unloaded, 0);
	assert_int_equal(j.ncollectors, 3);
	assert_string_equal(j.collectors[0].name, "G1 young collection pauses");
	assert_string_equal(j.collectors[1].name, "G1 full collection pauses");
	assert_int_equal(j.collectors[1].invocations, 3);
	assert_int_equal(j.collectors[1].ticks, 7056100);
	assert_int_equal(j.safepoints, 3);
	assert_int_equal(j.jit_compiles, 12);
	assert_int_equal(j.ngens, 2);
	assert_string_equal(j.gens[0].name, "young");
	assert_int_equal(j.gens[0].nspaces, 3);
	assert_string_equal(j.gens[0].spaces[0].name, "eden");
	assert_string_equal(j.gens[1].name, "old");
	assert_int_equal(j.gens[1].spaces[0].used, 4248832);
	assert_int_equal(j.metaspace.used, 131688);
	assert_int_equal(j.class_space.used, 4464);
	free(b);
}

/* Every prefix of the real file: no read past it (ASan), and a cut one is either refused or a walk
 * that stops at the cut. */
GG_TEST(test_every_prefix)
{
	static struct pd_jvm j;
	size_t len;
	unsigned char *b = load(FIXTURE, &len);

	for (size_t n = 0; n <= 13000 && n <= len; n++) {
		unsigned char *copy = malloc(n ? n : 1);

		memcpy(copy, b, n);
		if (pd_jvm__parse(copy, n, &j) == 0)
			assert_true(j.nentries <= 187);
		else
			assert_true(n < PD_PROLOGUE_LEN);
		free(copy);
	}
	free(b);
}

/* ---- synthetic files ---------------------------------------------------------------------------- */

struct builder {
	unsigned char b[4096];
	size_t len;
	int little;
	unsigned int n;
};

static void put32(struct builder *w, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		w->b[at + (size_t)i] = (unsigned char)(w->little ? v >> (8 * i) : v >> (8 * (3 - i)));
}

static void put64(struct builder *w, size_t at, uint64_t v)
{
	put32(w, at + (w->little ? 0 : 4), (uint32_t)v);
	put32(w, at + (w->little ? 4 : 0), (uint32_t)(v >> 32));
}

static void start(struct builder *w, int little)
{
	memset(w, 0, sizeof(*w));
	w->little = little;
	w->b[0] = 0xca, w->b[1] = 0xfe, w->b[2] = 0xc0, w->b[3] = 0xc0;
	w->b[4] = (unsigned char)little;
	w->b[5] = 2;
	w->b[7] = 1;
	put32(w, 24, PD_PROLOGUE_LEN);
	w->len = PD_PROLOGUE_LEN;
}

static void finish(struct builder *w)
{
	put32(w, 8, (uint32_t)w->len);
	put32(w, 28, w->n);
}

/* name, then data aligned to 8, as HotSpot lays them out */
static void add(struct builder *w, const char *name, char type, const void *data, uint32_t vlen)
{
	size_t at = w->len, nl = strlen(name) + 1, doff = (PD_ENTRY_HDR_LEN + nl + 7) & ~(size_t)7;
	size_t dl = type == 'J' ? 8 : vlen, elen = (doff + dl + 7) & ~(size_t)7;

	put32(w, at + 4, PD_ENTRY_HDR_LEN);
	put32(w, at + 8, type == 'J' ? 0 : vlen);
	w->b[at + 12] = (unsigned char)type;
	w->b[at + 14] = type == 'J' ? 4 : 5;
	w->b[at + 15] = type == 'J' ? 2 : 1;
	put32(w, at + 16, (uint32_t)doff);
	put32(w, at, (uint32_t)elen);
	memcpy(w->b + at + PD_ENTRY_HDR_LEN, name, nl);
	if (type == 'J')
		put64(w, at + doff, *(const uint64_t *)data);
	else
		memcpy(w->b + at + doff, data, vlen);
	w->len += elen;
	w->n++;
}

static void add_long(struct builder *w, const char *name, uint64_t v)
{
	add(w, name, 'J', &v, 0);
}

static void add_str(struct builder *w, const char *name, const char *s, uint32_t vlen)
{
	char buf[256] = {0};

	memcpy(buf, s, strlen(s));
	add(w, name, 'B', buf, vlen);
}

static void build_sample(struct builder *w, int little)
{
	start(w, little);
	add_long(w, "java.threads.live", 42);
	add_str(w, "sun.gc.collector.1.name", "PSMarkSweep", 32);
	add_long(w, "sun.gc.collector.1.invocations", 0x123456789ull);
	add_long(w, "sun.gc.generation.2.space.3.used", 77);
	add_str(w, "sun.rt.javaCommand", "org.example.Main --flag", 64);
	add_long(w, "sun.gc.collector.8.invocations", 5); /* index beyond the table: ignored */
	add_long(w, "sun.gc.collector.x.invocations", 5); /* no index: ignored */
	finish(w);
}

GG_TEST(test_both_byte_orders)
{
	static struct pd_jvm j;
	struct builder w;

	for (int little = 0; little <= 1; little++) {
		build_sample(&w, little);
		assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
		assert_int_equal(j.nentries, 7);
		assert_int_equal(j.threads_live, 42);
		assert_int_equal(j.ncollectors, 2);
		assert_string_equal(j.collectors[1].name, "PSMarkSweep");
		assert_int_equal(j.collectors[1].invocations, 0x123456789ll);
		assert_int_equal(j.ngens, 3);
		assert_int_equal(j.gens[2].nspaces, 4);
		assert_int_equal(j.gens[2].spaces[3].used, 77);
		assert_string_equal(j.command, "org.example.Main --flag");
	}
}

GG_TEST(test_prologue_checks)
{
	static struct pd_jvm j;
	struct builder w;

	build_sample(&w, 1);
	w.b[7] = 0; /* the VM is still creating it */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), -EAGAIN);
	build_sample(&w, 1);
	w.b[5] = 1;
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), -ENOTSUP);
	build_sample(&w, 1);
	w.b[0] = 0xc0; /* little-endian magic is not the format */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), -EINVAL);
	build_sample(&w, 1);
	w.b[4] = 2;
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), -EINVAL);
	build_sample(&w, 1);
	put32(&w, 24, 8); /* first entry inside the prologue */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), -EINVAL);
	build_sample(&w, 1);
	put32(&w, 24, 5000); /* beyond "used" */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), -EINVAL);
	assert_int_equal(pd_jvm__parse(NULL, 0, &j), -EINVAL);
}

/* A bad entry ends the walk there; what came before is kept. */
GG_TEST(test_bad_entries)
{
	static struct pd_jvm j;
	struct builder w;
	size_t second;

	build_sample(&w, 0);
	second = PD_PROLOGUE_LEN + (w.b[PD_PROLOGUE_LEN + 3] | (size_t)w.b[PD_PROLOGUE_LEN + 2] << 8);

	put32(&w, second, 0xfffffff0u); /* entry length past the end */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(j.nentries, 1);
	assert_int_equal(j.threads_live, 42);

	build_sample(&w, 0);
	put32(&w, second, 4); /* shorter than its header: would loop forever if taken */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(j.nentries, 1);

	build_sample(&w, 0);
	put32(&w, second + 16, 0x7fffffff); /* data offset past the entry */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(j.nentries, 1);

	build_sample(&w, 0);
	put32(&w, second + 8, 0x10000); /* vector longer than the entry */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(j.nentries, 1);

	build_sample(&w, 0);
	/* unterminated name: fill the name up to the data with letters */
	memset(w.b + second + PD_ENTRY_HDR_LEN, 'a', 24);
	put32(&w, second + 16, PD_ENTRY_HDR_LEN + 24);
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(j.nentries, 1);

	build_sample(&w, 0);
	put32(&w, 28, 100000); /* more entries than there are: the walk ends at "used" */
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(j.nentries, 7);
}

/* A long string is cut, and a string without NUL ends at its vector. */
GG_TEST(test_strings)
{
	static struct pd_jvm j;
	struct builder w;
	char big[256];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	start(&w, 1);
	add_str(&w, "sun.rt.javaCommand", big, 255);
	add(&w, "java.property.java.vm.name", 'B', "abcdefgh", 8);
	finish(&w);
	assert_int_equal(pd_jvm__parse(w.b, w.len, &j), 0);
	assert_int_equal(strlen(j.command), PD_STR_MAX - 1);
	assert_string_equal(j.vm_name, "abcdefgh");
}
