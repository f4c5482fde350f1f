/* tls_elf.c - symbols and code of the binaries the TLS uprobes go into (libssl, Go programs): libelf
 * for symbols, segments and sections, capstone for the x86-64 instructions (call targets, ret sites,
 * instructions the kernel's uprobes emulate). */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls_elf.h"

struct elf_bin {
	int fd;
	Elf *elf;
};

int elf_bin__open(const char *path, struct elf_bin **ret_bin)
{
	struct elf_bin *b;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (b->fd < 0) {
		int err = -errno;

		free(b);
		return err;
	}
	b->elf = elf_begin(b->fd, ELF_C_READ_MMAP, NULL);
	if (!b->elf || elf_kind(b->elf) != ELF_K_ELF) {
		elf_bin__close(b);
		return -ENOEXEC;
	}
	*ret_bin = b;
	return 0;
}

void elf_bin__close(struct elf_bin *b)
{
	if (!b)
		return;
	if (b->elf)
		elf_end(b->elf);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

static Elf_Scn *section_by_type(struct elf_bin *b, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(b->elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	}
	return NULL;
}

static Elf_Scn *section_by_name(struct elf_bin *b, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(b->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(b->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(b->elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static int find_in(struct elf_bin *b, Elf64_Word type, const char *name, struct elf_fn *ret_fn)
{
	Elf_Scn *scn = section_by_type(b, type);
	Elf_Data *data;
	GElf_Shdr sh;
	size_t n;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -ENOENT;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -ENOENT;
	n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
			continue;
		s = elf_strptr(b->elf, sh.sh_link, sym.st_name);
		if (!s || strcmp(s, name))
			continue;
		ret_fn->vaddr = sym.st_value;
		ret_fn->size = sym.st_size;
		return elf_bin__off(b, sym.st_value, &ret_fn->off);
	}
	return -ENOENT;
}

int elf_bin__find(struct elf_bin *b, const char *name, struct elf_fn *ret_fn)
{
	int err = find_in(b, SHT_SYMTAB, name, ret_fn);

	if (err == -ENOENT)
		err = find_in(b, SHT_DYNSYM, name, ret_fn);
	return err;
}

int elf_bin__off(struct elf_bin *b, uint64_t vaddr, uint64_t *ret_off)
{
	size_t n;

	if (elf_getphdrnum(b->elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(b->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*ret_off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_bin__read(struct elf_bin *b, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;
	size_t size;
	char *img;
	int err = elf_bin__off(b, vaddr, &off);

	if (err)
		return err;
	img = elf_rawfile(b->elf, &size);
	if (!img || off > size || len > size - off)
		return -ERANGE;
	memcpy(buf, img + off, len);
	return 0;
}

int elf_bin__has_section(struct elf_bin *b, const char *name)
{
	return section_by_name(b, name) != NULL;
}

int elf_bin__section(struct elf_bin *b, const char *name, void *buf, size_t len, size_t *ret_len)
{
	Elf_Scn *scn = section_by_name(b, name);
	GElf_Shdr sh;
	size_t size;
	char *img;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		return -ENOENT;
	img = elf_rawfile(b->elf, &size);
	if (!img || sh.sh_offset > size)
		return -ERANGE;
	if (len > sh.sh_size)
		len = sh.sh_size;
	if (len > size - sh.sh_offset)
		len = size - sh.sh_offset;
	memcpy(buf, img + sh.sh_offset, len);
	*ret_len = len;
	return 0;
}

/* ---- x86-64 instructions ------------------------------------------------------------------------ */

/* A decoder over code[0..len) at address vaddr: capstone, and the one instruction it decodes into. */
struct dis {
	csh h;
	cs_insn *insn;
	const uint8_t *p;
	size_t len;
	uint64_t addr;
};

/* With the operands' details when detail; freed with dis_end. -ENOSYS (no capstone) or -ENOMEM. */
static int dis_begin(struct dis *d, const uint8_t *code, size_t len, uint64_t vaddr, bool detail)
{
	*d = (struct dis){.p = code, .len = len, .addr = vaddr};
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->h) != CS_ERR_OK)
		return -ENOSYS;
	if (detail)
		cs_option(d->h, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs_malloc(d->h);
	if (!d->insn) {
		cs_close(&d->h);
		return -ENOMEM;
	}
	return 0;
}

/* The next instruction into d->insn; false at the end or on bytes that do not decode. */
static bool dis_next(struct dis *d)
{
	return cs_disasm_iter(d->h, &d->p, &d->len, &d->addr, d->insn);
}

static void dis_end(struct dis *d)
{
	cs_free(d->insn, 1);
	cs_close(&d->h);
}

/* What a scan's step says of the instruction in d->insn. */
enum dis_step { DIS_ON, DIS_FOUND, DIS_STOP };

/* Decode at most max_insns instructions of code[0..len) at vaddr (with operand details when detail),
 * asking step of each: 0 when it found what it looks for (it wrote *ret), -ENOENT when it stopped or
 * the instructions ran out first, dis_begin's errors. */
static int dis_scan(const uint8_t *code, size_t len, uint64_t vaddr, unsigned int max_insns, bool detail,
		    enum dis_step (*step)(struct dis *d, uint64_t *ret), uint64_t *ret)
{
	enum dis_step s = DIS_ON;
	struct dis d;
	int err = dis_begin(&d, code, len, vaddr, detail);

	if (err)
		return err;
	for (unsigned int i = 0; s == DIS_ON && i < max_insns && dis_next(&d); i++)
		s = step(&d, ret);
	dis_end(&d);
	return s == DIS_FOUND ? 0 : -ENOENT;
}

/* x86_first_call's step: e8 rel32, a direct call (its target), before a ret or jmp. */
static enum dis_step first_call_step(struct dis *d, uint64_t *ret_target)
{
	if (d->insn->id == X86_INS_CALL && d->insn->size == 5 && d->insn->bytes[0] == 0xe8) {
		int32_t rel;

		memcpy(&rel, &d->insn->bytes[1], 4);
		*ret_target = d->insn->address + 5 + (int64_t)rel;
		return DIS_FOUND;
	}
	return d->insn->id == X86_INS_RET || d->insn->id == X86_INS_JMP ? DIS_STOP : DIS_ON;
}

int x86_first_call(const uint8_t *code, size_t len, uint64_t vaddr, unsigned int max_insns, uint64_t *ret_target)
{
	return dis_scan(code, len, vaddr, max_insns, false, first_call_step, ret_target);
}

int x86_ret_sites(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *rets, unsigned int max,
		  unsigned int *ret_n)
{
	unsigned int n = 0;
	struct dis d;
	int ret;

	ret = dis_begin(&d, code, len, vaddr, false);
	if (ret)
		return ret;
	/* Go puts no data in its functions' bodies: they decode from start to end; int3 padding
	 * after the last instruction is part of the symbol's size. */
	while (d.len) {
		if (!dis_next(&d)) {
			ret = -EILSEQ;
			break;
		}
		if (d.insn->id == X86_INS_RET) {
			if (n >= max) {
				ret = -E2BIG;
				break;
			}
			rets[n++] = d.insn->address;
		}
	}
	dis_end(&d);
	*ret_n = n;
	return ret;
}

int x86_defer_result_slot(const uint8_t *code, size_t len, uint64_t vaddr, int64_t *ret_disp)
{
	bool after_call = false, found = false;
	int64_t disp = 0;
	struct dis d;
	int ret;

	ret = dis_begin(&d, code, len, vaddr, true);
	if (ret)
		return ret;
	while (d.len && !ret) {
		const cs_x86 *x;

		if (!dis_next(&d)) {
			ret = -EILSEQ;
			break;
		}
		x = &d.insn->detail->x86;
		if (after_call) {
			/* mov DISP(%rsp),%rax: the result back into its register */
			if (d.insn->id != X86_INS_MOV || x->op_count != 2 || x->operands[0].type != X86_OP_REG ||
			    x->operands[0].reg != X86_REG_RAX || x->operands[1].type != X86_OP_MEM ||
			    x->operands[1].mem.base != X86_REG_RSP || x->operands[1].mem.index != X86_REG_INVALID ||
			    (found && x->operands[1].mem.disp != disp)) {
				ret = -EINVAL;
				break;
			}
			disp = x->operands[1].mem.disp;
			found = true;
			after_call = false;
			continue;
		}
		after_call = d.insn->id == X86_INS_CALL && x->op_count == 1 && x->operands[0].type == X86_OP_REG;
	}
	dis_end(&d);
	if (!ret && !found)
		ret = -ENOENT;
	if (!ret)
		*ret_disp = disp;
	return ret;
}

int x86_uprobe_emulated(const uint8_t *code, size_t len)
{
	size_t i = 0;

	if (!len)
		return 0;
	/* a REX.B prefix only, for push %r8..%r15 */
	if (code[0] == 0x41 && len > 1)
		return code[1] >= 0x50 && code[1] <= 0x57;
	if (code[i] >= 0x50 && code[i] <= 0x57) /* push reg */
		return 1;
	switch (code[i]) {
	case 0xe8: /* call rel32 */
	case 0xe9: /* jmp rel32 */
	case 0xeb: /* jmp rel8 */
	case 0x90: /* nop */
		return 1;
	default:
		break;
	}
	if (code[i] >= 0x70 && code[i] <= 0x7f) /* jcc rel8 */
		return 1;
	if (code[i] == 0x0f && len > 1 && ((code[1] >= 0x80 && code[1] <= 0x8f) || code[1] == 0x1f))
		return 1; /* jcc rel32, nopl */
	return 0;
}

/* x86_entry_site's step: an instruction uprobes emulate, before one that writes a register the Go
 * return probe needs. */
static enum dis_step entry_site_step(struct dis *d, uint64_t *ret_addr)
{
	static const uint16_t kept[] = {X86_REG_RAX, X86_REG_EAX, X86_REG_AX,  X86_REG_AL,  X86_REG_RBX, X86_REG_EBX,
					X86_REG_BX,  X86_REG_BL,  X86_REG_RCX, X86_REG_ECX, X86_REG_CX,	 X86_REG_CL,
					X86_REG_RDI, X86_REG_EDI, X86_REG_RSI, X86_REG_ESI, X86_REG_R8,	 X86_REG_R9,
					X86_REG_R10, X86_REG_R11, X86_REG_R14, X86_REG_RSP};
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	if (x86_uprobe_emulated(d->insn->bytes, d->insn->size)) {
		*ret_addr = d->insn->address;
		return DIS_FOUND;
	}
	if (cs_regs_access(d->h, d->insn, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return DIS_STOP;
	for (uint8_t w = 0; w < nwr; w++)
		for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++)
			if (wr[w] == kept[k])
				return DIS_STOP;
	return DIS_ON;
}

int x86_entry_site(const uint8_t *code, size_t len, uint64_t vaddr, unsigned int max_insns, uint64_t *ret_addr)
{
	return dis_scan(code, len, vaddr, max_insns, true, entry_site_step, ret_addr);
}
