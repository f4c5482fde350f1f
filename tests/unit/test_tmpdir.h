/* test_tmpdir.h - removal of a unit test's own temporary directory tree, as rm -rf without a shell. */
#ifndef GG_TEST_TMPDIR_H
#define GG_TEST_TMPDIR_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>

static inline int rm_tree_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* dir and everything below it (symbolic links removed, not followed): 0 (also when dir does not
 * exist) or negative errno. */
static inline int rm_tree(const char *dir)
{
	if (nftw(dir, rm_tree_one, 16, FTW_DEPTH | FTW_PHYS) == 0)
		return 0;
	return errno == ENOENT ? 0 : -errno;
}

#endif
