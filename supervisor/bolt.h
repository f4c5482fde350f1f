/* bolt.h - a read-only reader of bbolt database files (the key/value store containerd keeps its
 * metadata in: /var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db): find a nested bucket by
 * its path of names and list its key/value pairs, from a consistent meta page, with every offset
 * checked (the file is read while containerd writes it: a torn read is an error, not a crash). */
#ifndef GG_BOLT_H
#define GG_BOLT_H

#include <stddef.h>
#include <stdint.h>

/* Where the bytes come from: a file (pread) or memory (tests, the fuzzer). read() fills exactly len
 * bytes at off or returns a negative errno. */
struct gg_bolt_src {
	int (*read)(void *ctx, uint64_t off, void *buf, size_t len);
	void *ctx;
	uint64_t size;
};

/* Called per key/value pair of the bucket (nested buckets are skipped); a non-zero return stops the
 * walk and is returned. */
typedef int (*gg_bolt_pair_fn)(void *ctx, const char *key, size_t klen, const char *val, size_t vlen);

#define GG_BOLT_PAGE_MAX (1u << 20) /* a page with its overflow pages larger than this is refused */

/* The pairs of the bucket at path[0]/path[1]/.../path[n-1] (n >= 1), at most max_pairs of them.
 * 0, -ENOENT (no such bucket), -EINVAL (not a bbolt file, or a page that does not fit: torn or
 * corrupt), -EAGAIN (the database changed while it was read), or what fn or read returned. */
int gg_bolt__bucket_pairs(const struct gg_bolt_src *src, const char *const *path, unsigned int n,
			  unsigned int max_pairs, gg_bolt_pair_fn fn, void *ctx);
/* The same on the file at path (opened read-only, no lock taken: containerd holds bbolt's flock). */
int gg_bolt__file_bucket_pairs(const char *file, const char *const *path, unsigned int n, unsigned int max_pairs,
			       gg_bolt_pair_fn fn, void *ctx);
/* A source over memory (ctx points at it). */
int gg_bolt__mem_read(void *ctx, uint64_t off, void *buf, size_t len);
struct gg_bolt_mem {
	const unsigned char *data;
	size_t len;
};

#endif
