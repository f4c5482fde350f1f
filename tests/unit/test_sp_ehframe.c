/* test_sp_ehframe.c - stackprobe's .eh_frame parser against binutils: a program compiled here without
 * frame pointers (and Debian's bash) is parsed, and every row `readelf --debug-dump=frames-interp`
 * prints must be covered by a row of ours with the same CFA, rbp and return address rules; plus
 * hand-made sections for the instructions compilers rarely emit and for malformed input. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#include "ehframe.h"

extern char **environ;

static char g_dir[64];

/* Run argv with stdout to out_path (or /dev/null); its exit status. */
static int run(char *const argv[], const char *out_path)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st = -1;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) == 0)
		(void)waitpid(pid, &st, 0);
	posix_spawn_file_actions_destroy(&fa);
	return st;
}

static const char prog_src[] = "#include <stdio.h>\n"
			       "#include <stdlib.h>\n"
			       "#include <string.h>\n"
			       "volatile unsigned long sink;\n"
			       "__attribute__((noinline)) unsigned long leaf(unsigned long x) {\n"
			       "  for (int i = 0; i < 100; i++) x = x * 31 + i; return x; }\n"
			       "__attribute__((noinline)) unsigned long vla(int n) {\n"
			       "  char buf[n]; memset(buf, n, n); sink = buf[n / 2]; return leaf(buf[0]); }\n"
			       "__attribute__((noinline)) unsigned long b(unsigned long x) {\n"
			       "  unsigned long r = leaf(x) + vla((int)(x % 100) + 1); sink = r; return r + 1; }\n"
			       "__attribute__((noinline)) unsigned long a(unsigned long x) {\n"
			       "  unsigned long r = b(x) * 3; sink = r; return r; }\n"
			       "int main(int argc, char **argv) {\n"
			       "  printf(\"%lu\\n\", a((unsigned long)argc + strlen(argv[0]))); return 0; }\n";

static int setup(void **state)
{
	char path[128];
	FILE *f;

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/test_sp_ehframe.XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(path, sizeof(path), "%s/prog.c", g_dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(prog_src, f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char *const argv[] = {"rm", "-rf", g_dir, NULL};

	(void)state;
	return run(argv, NULL) == 0 ? 0 : -1;
}

/* The kind and offsets a readelf row means. */
struct want {
	uint8_t kind;
	int16_t cfa_off;
	int8_t rbp;
	int exp; /* CFA is an expression: PLT or unsupported */
};

static int parse_cfa(const char *s, struct want *w)
{
	int off;

	w->exp = 0;
	if (!strcmp(s, "exp")) {
		w->exp = 1;
		return 0;
	}
	if (sscanf(s, "rsp+%d", &off) == 1) {
		w->kind = SP_UW_CFA_RSP;
		w->cfa_off = (int16_t)off;
		return 0;
	}
	if (sscanf(s, "rbp+%d", &off) == 1) {
		w->kind = SP_UW_CFA_RBP;
		w->cfa_off = (int16_t)off;
		return 0;
	}
	w->kind = SP_UW_NONE; /* another register */
	return 0;
}

/* Offsets the row holds (int16_t): a frame above 32 KiB is unsupported (frame pointers). */
static void fit_cfa(struct want *w, const char *s)
{
	int off;

	if ((sscanf(s, "rsp+%d", &off) == 1 || sscanf(s, "rbp+%d", &off) == 1) && (off > INT16_MAX || off < INT16_MIN))
		w->kind = SP_UW_NONE;
}

/* A rule column: "u" (none: same value for a callee-saved register, or undefined for ra), "s" (same
 * value), "c-N" (saved at CFA - N), or anything else (register, expression). */
static int col(const char *s, int *off)
{
	if (!strcmp(s, "u"))
		return 'u';
	if (!strcmp(s, "s"))
		return 's';
	if (sscanf(s, "c%d", off) == 1)
		return 'c';
	return '?';
}

static int row_want(const char *cfa, const char *rbp, const char *ra, struct want *w)
{
	int off = 0, c;

	memset(w, 0, sizeof(*w));
	parse_cfa(cfa, w);
	c = col(ra, &off);
	if (c == 'u') {
		w->kind = SP_UW_END;
		w->exp = 0;
		return 0;
	}
	if (c != 'c' || off != -8) {
		w->kind = SP_UW_NONE;
		w->exp = 0;
		return 0;
	}
	if (w->exp)
		return 0;
	if (w->kind == SP_UW_NONE)
		return 0;
	c = rbp ? col(rbp, &off) : 'u';
	if (c == 'c' && off < 0 && off % 8 == 0)
		w->rbp = (int8_t)(off / 8);
	else if (c != 'u' && c != 's')
		w->kind = SP_UW_NONE;
	fit_cfa(w, cfa);
	return 0;
}

struct check_stats {
	unsigned int rows, fdes, rsp, rbp_cfa, rbp_saved, end, plt;
};

static void check_row(const struct sp_eh_file *ef, uint64_t loc, const struct want *w, struct check_stats *cs)
{
	const struct sp_uw_row *r = sp_ehframe__find(ef->rows, ef->n, loc);

	if (!r)
		fail_msg("no row covers 0x%llx", (unsigned long long)loc);
	cs->rows++;
	if (w->exp) {
		if (r->kind != SP_UW_PLT && r->kind != SP_UW_NONE)
			fail_msg("0x%llx: expression CFA, got kind %u", (unsigned long long)loc, r->kind);
		cs->plt += r->kind == SP_UW_PLT;
		return;
	}
	if (r->kind != w->kind)
		fail_msg("0x%llx: kind %u, readelf says %u", (unsigned long long)loc, r->kind, w->kind);
	if (w->kind == SP_UW_CFA_RSP || w->kind == SP_UW_CFA_RBP) {
		if (r->cfa_off != w->cfa_off || r->rbp != w->rbp)
			fail_msg("0x%llx: cfa_off %d rbp %d, readelf says %d %d", (unsigned long long)loc, r->cfa_off,
				 r->rbp, w->cfa_off, w->rbp);
		cs->rsp += w->kind == SP_UW_CFA_RSP;
		cs->rbp_cfa += w->kind == SP_UW_CFA_RBP;
		cs->rbp_saved += w->rbp != 0;
	}
	cs->end += w->kind == SP_UW_END;
}

#define MAX_CIES 256

struct cie_row {
	unsigned long off;
	struct want w;
};

/* An FDE without instructions (readelf prints no table): the CIE's initial row covers it. */
static void check_bare_fde(const struct sp_eh_file *ef, const struct cie_row *cies, unsigned int ncies,
			   unsigned long cie, unsigned long long lo, unsigned long long hi, unsigned int rows,
			   struct check_stats *cs)
{
	if (rows || hi <= lo)
		return;
	for (unsigned int i = 0; i < ncies; i++)
		if (cies[i].off == cie)
			check_row(ef, lo, &cies[i].w, cs);
}

/* Compare our rows of path with readelf's table of every FDE (the CIE's initial row for an FDE
 * without instructions). */
static void compare_with_readelf(const char *path, struct check_stats *cs)
{
	char out[160], line[1024], cols[16][32];
	char *const argv[] = {"readelf", "--debug-dump=frames-interp", (char *)path, NULL};
	struct sp_eh_file ef = {0};
	struct cie_row cies[MAX_CIES];
	unsigned int ncies = 0, ncols = 0, fde_rows = 0;
	int in_cie = 0, fd, rbp_col = -1, ra_col = -1, st;
	unsigned long cur_cie = 0, fde_cie = 0;
	unsigned long long pc_lo = 0, pc_hi = 0;
	FILE *f;

	memset(cs, 0, sizeof(*cs));
	snprintf(out, sizeof(out), "%s/readelf.out", g_dir);
	/* readelf exits 1 on libc.so.6 with a complete table and no message: what matters is the table */
	st = run(argv, out);
	assert_true(WIFEXITED(st));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(sp_ehframe__read_elf(fd, SP_UW_FILE_ROWS, &ef), 0);
	close(fd);
	assert_true(ef.n > 0);
	assert_true(ef.nloads > 0);
	f = fopen(out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long off, len, id;
		unsigned long long loc;
		char kind[8];
		char a[32], b[32];

		if (sscanf(line, "%lx %lx %lx %7s", &off, &len, &id, kind) == 4 &&
		    (!strcmp(kind, "CIE") || !strcmp(kind, "FDE")))
			check_bare_fde(&ef, cies, ncies, fde_cie, pc_lo, pc_hi, fde_rows, cs);
		if (sscanf(line, "%lx %lx %lx %7s", &off, &len, &id, kind) == 4 && !strcmp(kind, "CIE")) {
			in_cie = 1;
			pc_lo = pc_hi = 0;
			cur_cie = off;
			continue;
		}
		if (sscanf(line, "%lx %lx %lx FDE cie=%lx pc=%llx..%llx", &off, &len, &id, &fde_cie, &pc_lo, &pc_hi) ==
		    6) {
			in_cie = 0;
			fde_rows = 0;
			cs->fdes++;
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			char *save = NULL, *t;

			ncols = 0;
			rbp_col = ra_col = -1;
			for (t = strtok_r(line, " \n", &save); t && ncols < 16; t = strtok_r(NULL, " \n", &save)) {
				snprintf(cols[ncols], sizeof(cols[ncols]), "%s", t);
				if (!strcmp(t, "rbp"))
					rbp_col = (int)ncols;
				if (!strcmp(t, "ra"))
					ra_col = (int)ncols;
				ncols++;
			}
			continue;
		}
		if (sscanf(line, "%llx %31s", &loc, a) == 2 && ncols >= 3 && ra_col > 0 && strlen(line) > 17 &&
		    line[16] == ' ') {
			char tok[16][32];
			unsigned int nt = 0;
			char *save = NULL, *t;
			struct want w;

			for (t = strtok_r(line, " \n", &save); t && nt < 16; t = strtok_r(NULL, " \n", &save))
				snprintf(tok[nt++], sizeof(tok[0]), "%s", t);
			if (nt != ncols)
				continue;
			snprintf(b, sizeof(b), "%s", rbp_col > 0 ? tok[rbp_col] : "u");
			row_want(tok[1], rbp_col > 0 ? b : NULL, tok[ra_col], &w);
			if (in_cie) {
				if (ncies < MAX_CIES) {
					cies[ncies].off = cur_cie;
					cies[ncies].w = w;
					ncies++;
				}
				continue;
			}
			if (loc < pc_lo || loc >= pc_hi)
				continue;
			fde_rows++;
			check_row(&ef, loc, &w, cs);
		}
	}
	check_bare_fde(&ef, cies, ncies, fde_cie, pc_lo, pc_hi, fde_rows, cs);
	fclose(f);
	sp_eh_file__clear(&ef);
}

GG_TEST(test_own_program)
{
	char src[128], bin[128];
	char *const argv[] = {
		"gcc", "-O2", "-g0", "-fomit-frame-pointer", "-fasynchronous-unwind-tables", "-fno-inline", "-o",
		bin,   src,   NULL};
	struct check_stats cs;

	snprintf(src, sizeof(src), "%s/prog.c", g_dir);
	snprintf(bin, sizeof(bin), "%s/prog", g_dir);
	assert_int_equal(run(argv, NULL), 0);
	compare_with_readelf(bin, &cs);
	/* main, a, b, leaf, vla, _start, the CRT's: rsp rules, an rbp CFA (the VLA) with rbp saved, _start's end */
	assert_true(cs.fdes >= 6);
	assert_true(cs.rsp >= 10);
	assert_true(cs.rbp_cfa >= 1);
	assert_true(cs.rbp_saved >= 1);
	assert_true(cs.end >= 1);
	print_message("prog: %u FDEs, %u rows checked (%u rsp, %u rbp CFA, %u rbp saved, %u end, %u plt)\n", cs.fdes,
		      cs.rows, cs.rsp, cs.rbp_cfa, cs.rbp_saved, cs.end, cs.plt);
}

/* Debian's own binaries (no frame pointers): bash and libc, thousands of FDEs each, the PLT too. */
GG_TEST(test_debian_binaries)
{
	static const char *const paths[] = {"/usr/bin/bash", "/lib/x86_64-linux-gnu/libc.so.6"};
	struct check_stats cs;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (access(paths[i], R_OK))
			continue;
		compare_with_readelf(paths[i], &cs);
		assert_true(cs.fdes > 500);
		assert_true(cs.rows > 5000);
		print_message("%s: %u FDEs, %u rows checked (%u rsp, %u rbp CFA, %u rbp saved, %u end, %u plt)\n",
			      paths[i], cs.fdes, cs.rows, cs.rsp, cs.rbp_cfa, cs.rbp_saved, cs.end, cs.plt);
	}
}

/* ---- hand-made sections -------------------------------------------------------------------------- */

struct buf {
	uint8_t b[512];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

/* A CIE "zR" (pcrel|sdata4 FDE pointers) with code align 1, data align -8, ra 16, and the usual
 * initial instructions (CFA = rsp + 8, ra at CFA - 8). */
static void put_cie(struct buf *b)
{
	static const uint8_t body[] = {
		0,    0,    0,	 0,		 /* CIE id */
		1,    'z',  'R', 0, 1, 0x78, 16, /* version, "zR", code 1, data -8, ra 16 */
		1,    0x1b,			 /* augmentation: pcrel|sdata4 */
		0x0c, 7,    8,			 /* def_cfa rsp+8 */
		0x90, 1,			 /* offset r16 at cfa-8 */
		0,    0,			 /* padding */
	};

	put_u32(b, sizeof(body));
	put(b, body, sizeof(body));
}

/* An FDE for [pc, pc + range) with insns; the section is at address sect. */
static void put_fde(struct buf *b, uint64_t sect, uint32_t pc, uint32_t range, const uint8_t *insns, size_t n)
{
	size_t start = b->n, len_at = b->n;
	uint32_t cie_ptr, pcrel;

	put_u32(b, 0); /* length, patched */
	cie_ptr = (uint32_t)(b->n - 0);
	put_u32(b, cie_ptr); /* the CIE is at offset 0 */
	pcrel = (uint32_t)(pc - (sect + b->n));
	put_u32(b, pcrel);
	put_u32(b, range);
	b->b[b->n++] = 0; /* augmentation length */
	put(b, insns, n);
	while ((b->n - start) % 8)
		b->b[b->n++] = 0;
	{
		uint32_t len = (uint32_t)(b->n - len_at - 4);

		memcpy(b->b + len_at, &len, 4);
	}
}

/* A hand-made section at address sect (the CIE of put_cie, then the test's FDEs) and what it parses to. */
struct eh {
	struct buf b;
	uint64_t sect;
	struct sp_uw_row *rows;
	size_t n;
	struct sp_eh_stats st;
};

static void eh_parse(struct eh *e)
{
	assert_int_equal(sp_ehframe__parse(e->b.b, e->b.n, e->sect, 1000, &e->rows, &e->n, &e->st), 0);
}

/* The row sp_ehframe__find answers at pc: its kind, and its CFA offset and rbp rule unless NOCHECK. */
#define NOCHECK INT_MIN
struct want_row {
	uint64_t pc;
	int kind, cfa_off, rbp;
};

static void expect_rows(const struct eh *e, const struct want_row *w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		const struct sp_uw_row *r = sp_ehframe__find(e->rows, e->n, w[i].pc);

		assert_non_null(r);
		assert_int_equal(r->kind, w[i].kind);
		if (w[i].cfa_off != NOCHECK)
			assert_int_equal(r->cfa_off, w[i].cfa_off);
		if (w[i].rbp != NOCHECK)
			assert_int_equal(r->rbp, w[i].rbp);
	}
}

GG_TEST(test_remember_restore)
{
	/* push rbp; mov rsp,rbp; ... remember; leave-like epilogue; ret; restore; more body */
	static const uint8_t insns[] = {
		0x41,	       /* advance 1 */
		0x0e, 16,      /* def_cfa_offset 16 */
		0x86, 2,       /* rbp at cfa-16 */
		0x43,	       /* advance 3 */
		0x0d, 6,       /* def_cfa_register rbp */
		0x4a,	       /* advance 10 */
		0x0a,	       /* remember_state */
		0x0c, 7,    8, /* def_cfa rsp+8 */
		0xc6,	       /* restore rbp */
		0x41,	       /* advance 1 */
		0x0b,	       /* restore_state */
		0x2e, 0x10,    /* GNU_args_size 16 */
	};
	static const struct want_row want[] = {
		{0x1000, SP_UW_CFA_RSP, 8, 0},
		{0x1002, SP_UW_CFA_RSP, 16, -2},
		{0x1004, SP_UW_CFA_RBP, 16, NOCHECK},
		{0x100e, SP_UW_CFA_RSP, 8, 0}, /* after the epilogue (remembered state popped at 0x100f) */
		{0x100f, SP_UW_CFA_RBP, 16, -2},
		{0x1020, SP_UW_NONE, NOCHECK, NOCHECK}, /* past the FDE: a gap */
	};
	struct eh e = {.sect = 0x2000};

	put_cie(&e.b);
	put_fde(&e.b, e.sect, 0x1000, 0x20, insns, sizeof(insns));
	put_u32(&e.b, 0); /* terminator */
	eh_parse(&e);
	assert_int_equal(e.st.cies, 1);
	assert_int_equal(e.st.fdes, 1);
	assert_int_equal(e.st.bad, 0);
	expect_rows(&e, want, sizeof(want) / sizeof(want[0]));
	assert_null(sp_ehframe__find(e.rows, e.n, 0xfff));
	free(e.rows);
}

GG_TEST(test_plt_and_unsupported)
{
	static const uint8_t plt[] = {0x0e, 16, 0x4a, 0x0e, 24,	  0x46, 0x0f, 11,   0x77, 8,
				      0x80, 0,	0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
	/* CFA = rsp + 8 but the return address in a register: unsupported */
	static const uint8_t odd[] = {0x09, 16, 3};
	static const struct want_row want[] = {
		{0x1000, SP_UW_CFA_RSP, 16, NOCHECK},
		{0x1010, SP_UW_PLT, NOCHECK, 11},
		{0x1044, SP_UW_NONE, NOCHECK, NOCHECK},
	};
	struct eh e = {.sect = 0x3000};

	put_cie(&e.b);
	put_fde(&e.b, e.sect, 0x1000, 0x40, plt, sizeof(plt));
	put_fde(&e.b, e.sect, 0x1040, 0x10, odd, sizeof(odd));
	eh_parse(&e);
	expect_rows(&e, want, sizeof(want) / sizeof(want[0]));
	assert_true(e.st.unsupported >= 1);
	free(e.rows);
}

GG_TEST(test_malformed)
{
	static const uint8_t bad_op[] = {0x20}; /* an opcode that does not exist */
	const uint64_t sect = 0x4000;
	struct sp_uw_row *rows = NULL;
	struct sp_eh_stats st;
	struct buf b = {0};
	size_t n = 0, full;

	put_cie(&b);
	put_fde(&b, sect, 0x1000, 0x10, bad_op, sizeof(bad_op));
	full = b.n;
	/* the bad FDE is skipped and counted, the section still parses */
	assert_int_equal(sp_ehframe__parse(b.b, full, sect, 1000, &rows, &n, &st), 0);
	assert_int_equal(st.bad, 1);
	assert_int_equal(n, 0);
	assert_null(rows);
	/* every truncation parses without reading past the end (ASan watches) */
	for (size_t cut = 0; cut < full; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);

		memcpy(copy, b.b, cut);
		rows = NULL;
		assert_int_equal(sp_ehframe__parse(copy, cut, sect, 1000, &rows, &n, &st), 0);
		free(rows);
		free(copy);
	}
	/* a CIE pointer before the section start */
	b.n = 0;
	put_cie(&b);
	put_fde(&b, sect, 0x1000, 0x10, (const uint8_t *)"\x41\x0e\x10", 3);
	{
		uint32_t bogus = 0x7fffffff;

		memcpy(b.b + 28, &bogus, 4); /* the FDE's CIE pointer: after the 24-byte CIE and its length */
	}
	assert_int_equal(sp_ehframe__parse(b.b, b.n, sect, 1000, &rows, &n, &st), 0);
	assert_int_equal(st.bad, 1);
	free(rows);
	/* too many rows for the limit */
	b.n = 0;
	put_cie(&b);
	put_fde(&b, sect, 0x1000, 0x10, (const uint8_t *)"\x41\x0e\x10\x41\x0e\x18\x41\x0e\x20", 9);
	rows = NULL;
	assert_int_equal(sp_ehframe__parse(b.b, b.n, sect, 2, &rows, &n, &st), -E2BIG);
}

GG_TEST_GROUP(setup, teardown);
