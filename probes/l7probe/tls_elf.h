/* tls_elf.h - what the TLS uprobes need to know of a binary's code: its symbols (libelf), the file
 * offset a uprobe takes, and a few facts from its x86-64 instructions (capstone): call targets, return
 * sites, and whether the kernel emulates an instruction instead of single-stepping it. */
#ifndef GG_L7_TLS_ELF_H
#define GG_L7_TLS_ELF_H

#include <stddef.h>
#include <stdint.h>

struct elf_bin;

/* A function of the binary: its address (as linked), size and the file offset of its first byte. */
struct elf_fn {
	uint64_t vaddr;
	uint64_t size;
	uint64_t off;
};

/* Open path (an ELF file); 0 or a negative errno. */
int elf_bin__open(const char *path, struct elf_bin **ret_bin);
void elf_bin__close(struct elf_bin *b);
/* The function called name, from .symtab, else .dynsym. 0, -ENOENT, or another negative errno. */
int elf_bin__find(struct elf_bin *b, const char *name, struct elf_fn *ret_fn);
/* The file offset of the byte linked at vaddr (in a PT_LOAD segment with file data). */
int elf_bin__off(struct elf_bin *b, uint64_t vaddr, uint64_t *ret_off);
/* len bytes of code linked at vaddr into buf. */
int elf_bin__read(struct elf_bin *b, uint64_t vaddr, void *buf, size_t len);
/* 1 when the binary has a section of that name (".go.buildinfo"), 0 when not. */
int elf_bin__has_section(struct elf_bin *b, const char *name);
/* Up to len bytes of the section called name into buf; *ret_len what was read. */
int elf_bin__section(struct elf_bin *b, const char *name, void *buf, size_t len, size_t *ret_len);

/* The target of the first direct call in code (linked at vaddr), looking at most at max_insns
 * instructions. 0 or -ENOENT. */
int x86_first_call(const uint8_t *code, size_t len, uint64_t vaddr, unsigned int max_insns, uint64_t *ret_target);
/* The addresses of the ret instructions of the function code (linked at vaddr), decoded from its
 * start to its end: up to max in rets, *ret_n how many. -E2BIG when there are more, -EILSEQ when
 * the code does not decode to its end (data in it: the sites cannot be trusted). */
int x86_ret_sites(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *rets, unsigned int max,
		  unsigned int *ret_n);
/* Where a Go function keeps its first result while its open-coded defer runs: every indirect call
 * (`call reg`, the deferred closure) in code must be followed by `mov DISP(%rsp),%rax` (the result
 * reloaded into its register), all with one DISP, returned in *ret_disp. -ENOENT when there is no such
 * call, -EINVAL when they disagree or another instruction follows one, -EILSEQ as x86_ret_sites. */
int x86_defer_result_slot(const uint8_t *code, size_t len, uint64_t vaddr, int64_t *ret_disp);
/* 1 when the kernel's x86 uprobes emulate the instruction at code (push of a register, direct call
 * or jmp, conditional jump, nop): a uprobe there costs the trap only, not a trap and a single-step
 * (which, under a hypervisor that intercepts debug exceptions, is tens of microseconds). */
int x86_uprobe_emulated(const uint8_t *code, size_t len);

/* The first instruction among the first max_insns of code (linked at vaddr) that the kernel emulates,
 * provided none before it writes a register of Go's argument registers (rax, rbx, rcx, rdi, rsi,
 * r8-r11), r14 (g) or rsp: Go's stack check (cmp rsp, [r14+16]; jbe morestack) puts a jbe there. */
int x86_entry_site(const uint8_t *code, size_t len, uint64_t vaddr, unsigned int max_insns, uint64_t *ret_addr);

#endif
