/* stackprobe_unwind.h - types shared by stackprobe's .eh_frame unwinder in BPF (stackprobe_unwind.bpf.h)
 * and the user half that builds its tables (probes/stackprobe/ehframe.c, unwind.c). */
#ifndef GG_STACKPROBE_UNWIND_H
#define GG_STACKPROBE_UNWIND_H

#include "stackprobe.h"

/* Rows of every loaded ELF file together (8 bytes each: 4 MiB). A file's rows are loaded once and
 * shared by every process that maps it; a file that does not fit is counted (unwind_overflow) and its
 * frames are walked with frame pointers. */
#define SP_UW_ROWS (1u << 19)
/* Rows of one file at most: the BPF binary search takes log2 of it steps (python3.11 has 60k). */
#define SP_UW_FILE_ROWS	 (1u << 18)
#define SP_UW_FILE_STEPS 19
/* Processes with tables at once, executable mappings with tables per process (binary search). */
#define SP_UW_PROCS	1024
#define SP_UW_MAPS	64
#define SP_UW_MAP_STEPS 7
/* Processes waiting for their tables (BPF asks, user space builds them about once a second). */
#define SP_UW_WANT 256

/* How the caller's frame is found from a row (x86-64). */
enum sp_uw_kind {
	SP_UW_NONE = 0,	   /* no usable rule here (gap between FDEs, unsupported CFA): frame-pointer walk */
	SP_UW_CFA_RSP = 1, /* CFA = rsp + cfa_off */
	SP_UW_CFA_RBP = 2, /* CFA = rbp + cfa_off */
	SP_UW_PLT = 3,	   /* .plt: CFA = rsp + 8, + 8 more when (pc & 15) >= rbp (the PLT expression) */
	SP_UW_END = 4,	   /* return address undefined: the outermost frame (_start, thread start) */
};

/* One row: from pc (ELF virtual address) up to the next row's pc. The return address is at CFA - 8,
 * the caller's rbp at CFA + 8 * rbp when rbp < 0, else rbp is unchanged. */
struct sp_uw_row {
	__u32 pc;
	__s16 cfa_off;
	__u8 kind; /* enum sp_uw_kind */
	__s8 rbp;
};

/* An executable mapping of a process whose file has rows: ELF vaddr = address - bias. */
struct sp_uw_map {
	__u64 start, end, bias;
	__u32 row_start, row_count; /* in the rows array; row_count 0: no rows (frame pointers) */
};

/* A process's mappings, sorted by start. n = 0: known, nothing to unwind with tables (a kernel
 * thread, no ELF with .eh_frame): the kernel's frame-pointer walk is used. */
struct sp_uw_proc {
	__u32 n;
	__u32 pad;
	struct sp_uw_map maps[SP_UW_MAPS];
};

/* Why BPF asks for a process's tables (uw_want values). */
enum sp_uw_want {
	SP_UW_WANT_NEW = 1,	/* no tables yet */
	SP_UW_WANT_REFRESH = 2, /* the sampled pc is in no mapping: exec, dlopen, pid reuse */
};

/* A user stack unwound in BPF, 0-terminated when shorter (the stack map's value layout). */
struct sp_ustack {
	__u64 ips[SP_MAX_DEPTH];
};

#endif
