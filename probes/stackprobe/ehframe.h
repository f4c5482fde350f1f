/* ehframe.h - .eh_frame parser: an ELF file's call frame information as sorted unwind rows for
 * stackprobe's BPF unwinder (x86-64 rules only; anything else is a SP_UW_NONE row). */
#ifndef GG_SP_EHFRAME_H
#define GG_SP_EHFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../../bpf/stackprobe_unwind.h"

struct sp_eh_stats {
	uint32_t cies, fdes;
	uint32_t bad;	      /* CIEs/FDEs skipped: malformed, unknown encoding or augmentation */
	uint32_t unsupported; /* rows whose rule is not one the BPF unwinder handles (SP_UW_NONE) */
};

/*
 * Rows of an .eh_frame section's contents (data, len) loaded at ELF address sect_addr: sorted by pc,
 * equal neighbours merged, a SP_UW_NONE row where an FDE ends and no other begins. At most max_rows
 * (else -E2BIG). *ret_rows is the caller's to free (NULL when there are none).
 */
int sp_ehframe__parse(const uint8_t *data, size_t len, uint64_t sect_addr, size_t max_rows, struct sp_uw_row **ret_rows,
		      size_t *ret_n, struct sp_eh_stats *ret_st);

/* An executable PT_LOAD segment: ELF address = file offset - offset + vaddr within it. */
struct sp_eh_load {
	uint64_t offset, vaddr, filesz;
};
#define SP_EH_LOADS 8

/* An ELF file's rows (from .eh_frame) and its executable segments. The file is read with libelf. */
struct sp_eh_file {
	struct sp_uw_row *rows;
	size_t n;
	struct sp_eh_load loads[SP_EH_LOADS];
	unsigned int nloads;
	struct sp_eh_stats st;
};
int sp_ehframe__read_elf(int fd, size_t max_rows, struct sp_eh_file *ret);
void sp_eh_file__clear(struct sp_eh_file *f);

/* The row covering ELF address pc (NULL when none): the user-space twin of the BPF lookup. */
const struct sp_uw_row *sp_ehframe__find(const struct sp_uw_row *rows, size_t n, uint64_t pc);

#endif
