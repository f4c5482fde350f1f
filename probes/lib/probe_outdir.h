/* probe_outdir.h - files a probe writes into directories named at run time (REST `params`), confined:
 * nothing a process can do to the tree below the output base after the REST check makes root write
 * elsewhere. */
#ifndef GG_PROBE_OUTDIR_H
#define GG_PROBE_OUTDIR_H

#include <stddef.h>
#include <stdio.h>

/* The supervisor's rest_api_server.output_base_dir (':' separated), handed to every native probe. */
#define PROBE_OUTDIR_BASES_ENV "GALA_GOPHER_OUTPUT_BASES"

/*
 * A directory fd for path, made (0755) when create and missing. Below one of the output bases, as spelled,
 * every component after the base is opened from its parent's fd with O_NOFOLLOW: a symbolic link there
 * (swapped in after the REST check, say) fails with -ELOOP or -ENOTDIR, and ".." is refused (-EINVAL).
 * Elsewhere (paths from the root-owned configuration file) the path is used as it is. Negative errno.
 */
int probe_outdir__open(const char *path, int create);
/* probe_outdir__open(dir/sub...) for a relative sub (no ".."), e.g. "store/oncpu". */
int probe_outdir__open_sub(const char *dir, const char *sub, int create);

/*
 * Write name in dfd atomically: "<name>.tmp" created afresh (O_EXCL | O_NOFOLLOW, 0644; a leftover is
 * removed first), then renamed over name. probe_outdir__fopen_tmp returns the stream to write;
 * probe_outdir__commit closes it and renames (err == 0 and the stream clean) or removes it.
 */
FILE *probe_outdir__fopen_tmp(int dfd, const char *name);
int probe_outdir__commit(int dfd, const char *name, FILE *f, int err);
/* The whole of data as name in dfd, as above. */
int probe_outdir__write(int dfd, const char *name, const void *data, size_t len);

#endif
