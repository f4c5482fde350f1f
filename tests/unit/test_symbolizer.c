/* test_symbolizer.c - the symbolizer on this very process (its own functions, libc), the kernel
 * (kallsyms), a JIT perf map, unknown addresses, and exec/pid-reuse invalidation on a fake /proc. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolizer.h"

__attribute__((noinline)) int sym_test_target(int x)
{
	return x * 3 + 1;
}

static void test_own_function_and_libc(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_frame f;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)state;
	assert_non_null(s);
	assert_true(n > 0);
	exe[n] = '\0';
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)sym_test_target + 2, &f), 0);
	assert_int_equal(f.kind, SYM_EXE);
	assert_string_equal(f.name, "sym_test_target");
	assert_int_equal(f.offset, 2);
	assert_string_equal(f.module, exe);

	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)getpid, &f), 0);
	assert_int_equal(f.kind, SYM_LIB);
	assert_non_null(strstr(f.name, "getpid"));
	assert_non_null(strstr(f.module, "libc"));

	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), 0x10, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_UNKNOWN);
	assert_null(f.module);
	symbolizer__free(s);
}

static void test_kernel(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_frame f;
	char line[512];
	unsigned long long addr = 0;
	FILE *k = fopen("/proc/kallsyms", "r");

	(void)state;
	assert_non_null(k);
	while (fgets(line, sizeof(line), k)) {
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && !strcmp(name, "schedule") && addr)
			break;
		addr = 0;
	}
	fclose(k);
	if (!addr)
		skip(); /* kptr_restrict: no addresses to check against */
	assert_int_equal(symbolizer__kernel(s, addr + 4, &f), 0);
	assert_int_equal(f.kind, SYM_KERNEL);
	assert_string_equal(f.name, "schedule");
	assert_int_equal(f.offset, 4);
	symbolizer__free(s);
}

static void test_perf_map(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_frame f;
	char path[64];
	void *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *m;

	(void)state;
	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	m = fopen(path, "w");
	assert_non_null(m);
	fprintf(m, "%llx 100 LJava/lang/Thread;::run\n%llx 40 jit_second\n", (unsigned long long)(uintptr_t)code,
		(unsigned long long)(uintptr_t)code + 0x200);
	fclose(m);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)code + 0x10, &f), 0);
	assert_int_equal(f.kind, SYM_JIT);
	assert_string_equal(f.name, "LJava/lang/Thread;::run");
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)code + 0x210, &f), 0);
	assert_string_equal(f.name, "jit_second");
	/* between the two entries: the anonymous mapping only */
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)code + 0x180, &f), -ENOENT);
	assert_null(f.name);
	unlink(path);
	munmap(code, 8192);
	symbolizer__free(s);
}

/* Write this process's own maps (not cp's) to path. */
static void copy_self_maps(const char *path)
{
	char buf[65536];
	FILE *in = fopen("/proc/self/maps", "r"), *out = fopen(path, "w");
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
}

/* A fake /proc/<4242> made of this process's maps: then an "exec" swaps its image. */
static void test_exec_invalidates(void **state)
{
	char root[] = "/tmp/symtest-XXXXXX", dir[PATH_MAX], path[PATH_MAX + 32], cmd[PATH_MAX + 64], exe[PATH_MAX];
	struct symbolizer_opts o = {.proc_root = root};
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_frame f;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t ip = (uint64_t)(uintptr_t)sym_test_target;
	FILE *fp;

	(void)state;
	assert_true(n > 0);
	exe[n] = '\0';
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/4242", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/maps", dir);
	copy_self_maps(path);
	snprintf(path, sizeof(path), "%s/exe", dir);
	assert_int_equal(symlink(exe, path), 0);
	snprintf(path, sizeof(path), "%s/root", dir);
	assert_int_equal(symlink("/", path), 0);
	snprintf(path, sizeof(path), "%s/stat", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("4242 (fake (x)) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n", fp);
	fclose(fp);

	s = symbolizer__new(&o);
	assert_non_null(s);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, 4242, ip, &f), 0);
	assert_string_equal(f.name, "sym_test_target");

	/* same round: cached, even though the image changes now */
	snprintf(path, sizeof(path), "%s/exe", dir);
	unlink(path);
	assert_int_equal(symlink("/bin/sh", path), 0);
	snprintf(path, sizeof(path), "%s/maps", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(symbolizer__user(s, 4242, ip, &f), 0);

	/* next round: the exec is noticed and the new (empty) maps are read */
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, 4242, ip, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_UNKNOWN);
	symbolizer__stats(s, &st);
	assert_int_equal(st.execs, 1);
	assert_true(st.mem_bytes > 0);

	/* the pid reused by another process with the same image: the start time differs */
	snprintf(path, sizeof(path), "%s/maps", dir);
	copy_self_maps(path);
	snprintf(path, sizeof(path), "%s/stat", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("4242 (fake (x)) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0\n", fp);
	fclose(fp);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, 4242, ip, &f), 0);
	assert_string_equal(f.name, "sym_test_target");
	symbolizer__stats(s, &st);
	assert_int_equal(st.execs, 2);

	/* gone: the last maps still serve the rest of the round */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, 4242, ip, &f), 0);
	symbolizer__free(s);
	rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_function_and_libc),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_perf_map),
		cmocka_unit_test(test_exec_invalidates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
