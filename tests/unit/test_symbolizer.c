/* test_symbolizer.c - the symbolizer on this very process (its own functions, libc, aliases), the kernel
 * (kallsyms), a JIT perf map, unknown addresses, exec/pid-reuse invalidation on a fake /proc, and
 * separate debug files (build-id, .gnu_debuglink with its CRC) for a stripped copy of this test. */
#include <dlfcn.h>
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "unit.h"
#include <gelf.h>
#include <fcntl.h>

#include "symbolizer.h"
#include "test_tmpdir.h"

__attribute__((noinline)) int sym_test_target(int x)
{
	return x * 3 + 1;
}

GG_TEST(test_own_function_and_libc)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_frame f;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

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

	/* aliases at one address (glibc: malloc, __libc_malloc, __GI___libc_malloc; ASan: malloc,
	 * __interceptor_malloc): the public name */
	assert_int_equal(
		symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "malloc"), &f), 0);
	assert_string_equal(f.name, "malloc");

	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), 0x10, &f), -ENOENT);
	assert_int_equal(f.kind, SYM_UNKNOWN);
	assert_null(f.module);
	symbolizer__free(s);
}

/* max_elf_bytes: symbol tables over the bound are dropped, least recently used first, and loaded again
 * when an address falls in them; the memory held stays within the bound between rounds. */
GG_TEST(test_elf_bytes_bounded)
{
	struct symbolizer_opts o = {.max_elf_bytes = 1};
	struct symbolizer *s = symbolizer__new(&o);
	struct symbolizer_stats st, st2;
	struct sym_frame f;

	assert_non_null(s);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)sym_test_target + 2, &f), 0);
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)getpid, &f), 0);
	symbolizer__stats(s, &st);
	assert_true(st.elf_loads >= 2);
	assert_int_equal(st.evictions, 0); /* used in this round: kept until the round ends */
	symbolizer__begin_round(s);
	symbolizer__stats(s, &st2);
	assert_true(st2.evictions >= 2);
	assert_true(st2.mem_bytes < st.mem_bytes);
	/* used again: loaded again, same answer */
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)getpid, &f), 0);
	assert_non_null(strstr(f.name, "getpid"));
	symbolizer__stats(s, &st2);
	assert_true(st2.elf_loads > st.elf_loads);
	symbolizer__free(s);
}

GG_TEST(test_kernel)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_frame f;
	char line[512];
	unsigned long long addr = 0;
	FILE *k = fopen("/proc/kallsyms", "r");

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

GG_TEST(test_perf_map)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_frame f;
	char path[64];
	void *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *m;

	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	m = fopen(path, "w");
	assert_non_null(m);
	/* the third line as HotSpot's jcmd Compiler.perfmap writes it (0x-prefixed, 16 digits) */
	fprintf(m,
		"%llx 100 LJava/lang/Thread;::run\n%llx 40 jit_second\n0x%016llx 0x%016llx long "
		"HotJava.hotLoop(long)\n",
		(unsigned long long)(uintptr_t)code, (unsigned long long)(uintptr_t)code + 0x200,
		(unsigned long long)(uintptr_t)code + 0x400, 0x80ull);
	fclose(m);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)code + 0x10, &f), 0);
	assert_int_equal(f.kind, SYM_JIT);
	assert_string_equal(f.name, "LJava/lang/Thread;::run");
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)code + 0x210, &f), 0);
	assert_string_equal(f.name, "jit_second");
	assert_int_equal(symbolizer__user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)code + 0x47f, &f), 0);
	assert_string_equal(f.name, "long HotJava.hotLoop(long)");
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
GG_TEST(test_exec_invalidates)
{
	char root[] = "/tmp/symtest-XXXXXX", dir[PATH_MAX], path[PATH_MAX + 32], exe[PATH_MAX];
	struct symbolizer_opts o = {.proc_root = root};
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_frame f;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t ip = (uint64_t)(uintptr_t)sym_test_target;
	FILE *fp;

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
	assert_int_equal(rm_tree(dir), 0);
	symbolizer__begin_round(s);
	assert_int_equal(symbolizer__user(s, 4242, ip, &f), 0);
	symbolizer__free(s);
	rmdir(root);
}

/* This binary's GNU build-id as hex (the debug file's name under .build-id/xx/). */
static void self_build_id(const char *exe, char *hex, size_t len)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;

	hex[0] = '\0';
	assert_true(fd >= 0);
	assert_true(elf_version(EV_CURRENT) != EV_NONE);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	while ((scn = elf_nextscn(e, scn)) && !hex[0]) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + noff, "GNU", 4))
				continue;
			for (size_t i = 0; i < nh.n_descsz && 2 * i + 3 < len; i++)
				snprintf(hex + 2 * i, 3, "%02x", ((unsigned char *)d->d_buf)[doff + i]);
			break;
		}
	}
	elf_end(e);
	close(fd);
}

static void run(const char *fmt, ...)
{
	char cmd[3 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/*
 * A fake /proc/4243 whose root holds /bin/app, a stripped copy of this binary mapped where this
 * process maps itself: names come only from a separate debug file, found by build-id
 * (<root>/usr/lib/debug/.build-id/xx/rest.debug) or by .gnu_debuglink (<root>/usr/lib/debug/bin/ and
 * <root>/bin/.debug/), and a debuglink file whose CRC does not match is refused.
 */
static void check_debug_file(const char *case_name, int expect_name)
{
	char root[] = "/tmp/symdbg-XXXXXX", proc[PATH_MAX], exe[PATH_MAX], app[PATH_MAX + 16], path[PATH_MAX + 64];
	char id[128], line[1024];
	struct symbolizer_opts o = {0};
	struct symbolizer *s;
	struct sym_frame f;
	struct stat sb;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *in, *out;

	assert_true(n > 0);
	exe[n] = '\0';
	self_build_id(exe, id, sizeof(id));
	assert_true(strlen(id) >= 4);
	assert_non_null(mkdtemp(root));
	/* <root>/proc/4243/{root -> <root>/fs, maps, exe, stat} */
	snprintf(proc, sizeof(proc), "%s/proc", root);
	run("mkdir -p %s/4243 %s/fs/bin %s/fs/bin/.debug %s/fs/usr/lib/debug/bin %s/fs/usr/lib/debug/.build-id/%.2s",
	    proc, root, root, root, root, id);
	snprintf(app, sizeof(app), "%s/fs/bin/app", root);
	if (!strcmp(case_name, "build-id")) {
		run("strip --strip-debug --strip-unneeded -o %s %s", app, exe);
		run("objcopy --only-keep-debug %s %s/fs/usr/lib/debug/.build-id/%.2s/%s.debug", exe, root, id, id + 2);
	} else {
		/* no build-id file: the link, with the CRC of the debug file it names */
		run("objcopy --only-keep-debug %s %s/app.dbg", exe, root);
		run("strip --strip-debug --strip-unneeded --remove-section=.note.gnu.build-id -o %s %s", app, exe);
		run("cd %s && objcopy --add-gnu-debuglink=app.dbg %s", root, app);
		if (!strcmp(case_name, "debuglink"))
			run("cp %s/app.dbg %s/fs/usr/lib/debug/bin/app.dbg", root, root);
		else /* bad-crc: same name, another file's contents */
			run("cp /bin/true %s/fs/bin/.debug/app.dbg", root);
	}
	assert_int_equal(stat(app, &sb), 0);
	/* this process's maps with its own image replaced by /bin/app (same addresses) */
	in = fopen("/proc/self/maps", "r");
	snprintf(path, sizeof(path), "%s/4243/maps", proc);
	out = fopen(path, "w");
	assert_non_null(in);
	assert_non_null(out);
	while (fgets(line, sizeof(line), in)) {
		char *p = strstr(line, exe);
		unsigned long long a, b, off;
		char perms[8];

		if (!p) {
			fputs(line, out);
			continue;
		}
		if (sscanf(line, "%llx-%llx %7s %llx", &a, &b, perms, &off) != 4)
			continue;
		fprintf(out, "%llx-%llx %s %08llx %02x:%02x %llu %s\n", a, b, perms, off, major(sb.st_dev),
			minor(sb.st_dev), (unsigned long long)sb.st_ino, "/bin/app");
	}
	fclose(in);
	fclose(out);
	snprintf(path, sizeof(path), "%s/4243/root", proc);
	snprintf(line, sizeof(line), "%s/fs", root);
	assert_int_equal(symlink(line, path), 0);
	snprintf(path, sizeof(path), "%s/4243/exe", proc);
	assert_int_equal(symlink(app, path), 0);
	snprintf(path, sizeof(path), "%s/4243/stat", proc);
	out = fopen(path, "w");
	assert_non_null(out);
	fputs("4243 (app) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0\n", out);
	fclose(out);

	o.proc_root = proc;
	s = symbolizer__new(&o);
	assert_non_null(s);
	symbolizer__begin_round(s);
	if (expect_name) {
		assert_int_equal(symbolizer__user(s, 4243, (uint64_t)(uintptr_t)sym_test_target + 1, &f), 0);
		assert_string_equal(f.name, "sym_test_target");
		assert_string_equal(f.module, "/bin/app");
	} else {
		/* the stripped file alone: the module, no invented name */
		assert_int_equal(symbolizer__user(s, 4243, (uint64_t)(uintptr_t)sym_test_target + 1, &f), -ENOENT);
		assert_null(f.name);
		assert_string_equal(f.module, "/bin/app");
	}
	symbolizer__free(s);
	assert_int_equal(rm_tree(root), 0);
}

GG_TEST(test_debug_build_id)
{
	check_debug_file("build-id", 1);
}

GG_TEST(test_debug_debuglink)
{
	check_debug_file("debuglink", 1);
	check_debug_file("bad-crc", 0);
}
