/* gg_common.h - types and constants shared by every BPF probe's kernel half (gg_common.bpf.h) and
 * user half (probes/lib/bpf_util.h): the scope filter maps and the log2 histogram layout. */
#ifndef GG_COMMON_H
#define GG_COMMON_H

/* Histograms are log2: slot 0 holds 0 and 1, slot i (i >= 1) holds [2^i, 2^(i+1) - 1]. */
#define GG_LOG2_SLOTS 32

/* Scope filter: what the supervisor's "scope" resolved to. Map names are part of the contract
 * (bpf_util.c finds them by name in any object that includes gg_common.bpf.h). */
#define GG_SCOPE_CTL_MAP    "gg_scope_ctl"
#define GG_SCOPE_TGID_MAP   "gg_scope_tgid"
#define GG_SCOPE_CGRP_MAP   "gg_scope_cgrp"
#define GG_SCOPE_TGID_MAX   1024 /* entries of the tgid set */
#define GG_SCOPE_CGRP_MAX   256	 /* entries of the cgroup id set */
#define GG_CGROUP_MAX_DEPTH 8	 /* ancestor levels checked against the cgroup set */

/* The one entry (key 0) of the gg_scope_ctl array. */
struct gg_scope_ctl {
	unsigned int filter; /* 0: everything is in scope; 1: only the tgid and cgroup sets */
	unsigned int pad;
};

#endif
