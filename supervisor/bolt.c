/* bolt.c - read-only bbolt reader (file format of go.etcd.io/bbolt 1.x: meta pages 0 and 1, branch and
 * leaf pages, inline buckets): one nested bucket's key/value pairs, for containerd's metadata. */
#include "bolt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE_HDR       16u
#define ELEM_SIZE      16u
#define FLAG_BRANCH    0x01u
#define FLAG_LEAF      0x02u
#define FLAG_META      0x04u
#define BUCKET_LEAF    0x01u /* a leaf element whose value is a bucket */
#define MAGIC	       0xED0CDAEDu
#define VERSION	       2u
#define META_SUMMED    56u /* bytes of the meta covered by its checksum */
#define DEPTH_MAX      64
#define WALK_PAGES_MAX 4096u
#define PAGE_SIZE_MIN  512u
#define PAGE_SIZE_MAX  (64u << 10)

/* A page (or an inline bucket's page) in memory. */
struct view {
	unsigned char *buf; /* owned when own */
	size_t len;
	int own;
};

struct bolt {
	const struct gg_bolt_src *src;
	uint32_t psize;
	uint64_t hwm; /* pages at or above are not allocated */
	uint64_t root;
	uint64_t txid;
	unsigned int pages; /* read by a walk */
};

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void view_free(struct view *v)
{
	if (v->own)
		free(v->buf);
	v->buf = NULL;
	v->own = 0;
}

int gg_bolt__mem_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct gg_bolt_mem *m = ctx;

	if (off > m->len || len > m->len - off)
		return -EINVAL;
	memcpy(buf, m->data + off, len);
	return 0;
}

static int src_read(const struct bolt *b, uint64_t off, void *buf, size_t len)
{
	if (off > b->src->size || len > b->src->size - off)
		return -EINVAL;
	return b->src->read(b->src->ctx, off, buf, len);
}

/* The meta page at off: 0 and its txid, or -EINVAL when it is not a valid one. */
static int meta_at(const struct bolt *b, uint64_t off, uint32_t *ret_psize, uint64_t *ret_root, uint64_t *ret_hwm,
		   uint64_t *ret_txid)
{
	unsigned char m[PAGE_HDR + 64];
	uint64_t h = 0xcbf29ce484222325ULL;

	if (src_read(b, off, m, sizeof(m)) || !(le16(m + 8) & FLAG_META))
		return -EINVAL;
	for (unsigned int i = 0; i < META_SUMMED; i++) {
		h ^= m[PAGE_HDR + i];
		h *= 0x100000001b3ULL;
	}
	if (le32(m + PAGE_HDR) != MAGIC || le32(m + PAGE_HDR + 4) != VERSION || le64(m + PAGE_HDR + META_SUMMED) != h)
		return -EINVAL;
	*ret_psize = le32(m + PAGE_HDR + 8);
	*ret_root = le64(m + PAGE_HDR + 16);
	*ret_hwm = le64(m + PAGE_HDR + 40);
	*ret_txid = le64(m + PAGE_HDR + 48);
	if (*ret_psize < PAGE_SIZE_MIN || *ret_psize > PAGE_SIZE_MAX || (*ret_psize & (*ret_psize - 1)))
		return -EINVAL;
	return 0;
}

/* The newest valid meta of the two. */
static int load_meta(struct bolt *b)
{
	uint32_t ps[2];
	uint64_t root[2], hwm[2], txid[2];
	int ok0, ok1;

	ok0 = !meta_at(b, 0, &ps[0], &root[0], &hwm[0], &txid[0]);
	/* the second meta page is one page on; its size comes from the first, else the usual 4 KiB */
	ok1 = !meta_at(b, ok0 ? ps[0] : 4096u, &ps[1], &root[1], &hwm[1], &txid[1]);
	if (!ok0 && !ok1)
		return -EINVAL;
	int i = ok0 && (!ok1 || txid[0] >= txid[1]) ? 0 : 1;

	b->psize = ps[i];
	b->root = root[i];
	b->hwm = hwm[i];
	b->txid = txid[i];
	return 0;
}

static int load_page(struct bolt *b, uint64_t pgid, struct view *ret)
{
	unsigned char hdr[PAGE_HDR];
	uint64_t off, total;
	int err;

	if (pgid < 2 || pgid >= b->hwm || pgid > UINT64_MAX / b->psize || ++b->pages > WALK_PAGES_MAX)
		return -EINVAL;
	off = pgid * b->psize;
	err = src_read(b, off, hdr, sizeof(hdr));
	if (err)
		return err;
	total = ((uint64_t)le32(hdr + 12) + 1) * b->psize;
	if (le64(hdr) != pgid || total > GG_BOLT_PAGE_MAX)
		return -EINVAL; /* torn: the page was rewritten for another id, or garbage */
	ret->buf = malloc((size_t)total);
	if (!ret->buf)
		return -ENOMEM;
	ret->len = (size_t)total;
	ret->own = 1;
	err = src_read(b, off, ret->buf, ret->len);
	if (err)
		view_free(ret);
	return err;
}

/* Element i of page v: its key, and for a leaf its flags and value, for a branch its child. */
static int elem(const struct view *v, unsigned int i, int leaf, const unsigned char **k, size_t *kn,
		const unsigned char **val, size_t *vn, uint32_t *flags, uint64_t *child)
{
	uint64_t eoff = PAGE_HDR + (uint64_t)i * ELEM_SIZE, ks, ksz, vsz = 0;
	const unsigned char *e;

	if (eoff + ELEM_SIZE > v->len)
		return -EINVAL;
	e = v->buf + eoff;
	if (leaf) {
		*flags = le32(e);
		ks = eoff + le32(e + 4);
		ksz = le32(e + 8);
		vsz = le32(e + 12);
	} else {
		ks = eoff + le32(e);
		ksz = le32(e + 4);
		*child = le64(e + 8);
	}
	if (ks + ksz + vsz > v->len)
		return -EINVAL;
	*k = v->buf + ks;
	*kn = (size_t)ksz;
	if (leaf) {
		*val = *k + ksz;
		*vn = (size_t)vsz;
	}
	return 0;
}

static int keycmp(const unsigned char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : (an > bn) - (an < bn);
}

/* A bucket: its root page, or its inline page (root 0). */
struct bucket {
	uint64_t root;
	struct view inl;
};

static int bucket_of(const unsigned char *v, size_t vn, struct bucket *ret)
{
	if (vn < 16)
		return -EINVAL;
	ret->root = le64(v);
	ret->inl.buf = NULL;
	ret->inl.len = 0;
	ret->inl.own = 0;
	if (ret->root)
		return 0;
	if (vn < 16 + PAGE_HDR)
		return -EINVAL;
	ret->inl.buf = malloc(vn - 16);
	if (!ret->inl.buf)
		return -ENOMEM;
	memcpy(ret->inl.buf, v + 16, vn - 16);
	ret->inl.len = vn - 16;
	ret->inl.own = 1;
	return 0;
}

/* The page a bucket starts at (borrowed for an inline one). */
static int bucket_page(struct bolt *b, const struct bucket *bk, struct view *ret)
{
	if (bk->root)
		return load_page(b, bk->root, ret);
	*ret = bk->inl;
	ret->own = 0;
	return 0;
}

/* The nested bucket named name in bucket bk. */
static int bucket_child(struct bolt *b, const struct bucket *bk, const char *name, struct bucket *ret)
{
	size_t nn = strlen(name);
	struct view v = {NULL, 0, 0};
	int err = bucket_page(b, bk, &v);

	for (int depth = 0; !err; depth++) {
		unsigned int flags, count, i;
		const unsigned char *k, *val = NULL;
		size_t kn, vn = 0;
		uint32_t ef = 0;
		uint64_t child = 0, pick = 0;

		if (depth > DEPTH_MAX || !v.buf || v.len < PAGE_HDR) {
			err = -EINVAL;
			break;
		}
		flags = le16(v.buf + 8);
		count = le16(v.buf + 10);
		if (flags & FLAG_LEAF) {
			err = -ENOENT;
			for (i = 0; i < count; i++) {
				int e = elem(&v, i, 1, &k, &kn, &val, &vn, &ef, NULL);

				if (e) {
					err = e;
					break;
				}
				if (!keycmp(k, kn, name, nn)) {
					err = (ef & BUCKET_LEAF) ? bucket_of(val, vn, ret) : -ENOENT;
					break;
				}
			}
			break;
		}
		if (!(flags & FLAG_BRANCH) || !count) {
			err = -EINVAL;
			break;
		}
		/* the last child whose first key is not after name */
		for (i = 0; i < count; i++) {
			err = elem(&v, i, 0, &k, &kn, NULL, NULL, NULL, &child);
			if (err)
				break;
			if (i && keycmp(k, kn, name, nn) > 0)
				break;
			pick = child;
		}
		if (err)
			break;
		view_free(&v);
		err = load_page(b, pick, &v);
	}
	view_free(&v);
	return err;
}

struct walk {
	gg_bolt_pair_fn fn;
	void *ctx;
	unsigned int left;
};

static int walk_page(struct bolt *b, struct view *v, struct walk *w, int depth)
{
	unsigned int flags, count;
	int err = 0;

	if (depth > DEPTH_MAX || !v->buf || v->len < PAGE_HDR)
		return -EINVAL;
	flags = le16(v->buf + 8);
	count = le16(v->buf + 10);
	for (unsigned int i = 0; i < count && !err && w->left; i++) {
		const unsigned char *k, *val;
		size_t kn, vn;
		uint32_t ef;
		uint64_t child;

		if (flags & FLAG_LEAF) {
			err = elem(v, i, 1, &k, &kn, &val, &vn, &ef, NULL);
			if (!err && !(ef & BUCKET_LEAF)) {
				err = w->fn(w->ctx, (const char *)k, kn, (const char *)val, vn);
				w->left--;
			}
		} else if (flags & FLAG_BRANCH) {
			struct view c = {NULL, 0, 0};

			err = elem(v, i, 0, &k, &kn, NULL, NULL, NULL, &child);
			if (!err)
				err = load_page(b, child, &c);
			if (!err) {
				err = walk_page(b, &c, w, depth + 1);
				view_free(&c);
			}
		} else {
			err = -EINVAL;
		}
	}
	return err;
}

static int read_once(struct bolt *b, const char *const *path, unsigned int n, struct walk *w)
{
	struct bucket bk = {.root = 0}, next = {.root = 0};
	struct view v = {NULL, 0, 0};
	uint64_t txid;
	int err = load_meta(b);

	if (err)
		return err;
	txid = b->txid;
	bk.root = b->root;
	if (!bk.root)
		return -EINVAL; /* the root bucket is never inline */
	b->pages = 0;
	for (unsigned int i = 0; i < n && !err; i++) {
		err = bucket_child(b, &bk, path[i], &next);
		view_free(&bk.inl);
		if (!err)
			bk = next;
	}
	if (!err)
		err = bucket_page(b, &bk, &v);
	if (!err) {
		err = walk_page(b, &v, w, 0);
		view_free(&v);
	}
	view_free(&bk.inl);
	/* a commit while we read: what we read may mix two versions */
	if (load_meta(b) || b->txid != txid)
		return -EAGAIN;
	return err;
}

int gg_bolt__bucket_pairs(const struct gg_bolt_src *src, const char *const *path, unsigned int n,
			  unsigned int max_pairs, gg_bolt_pair_fn fn, void *ctx)
{
	struct bolt b = {.src = src};
	struct walk w = {.fn = fn, .ctx = ctx, .left = max_pairs};
	int err;

	if (!n)
		return -EINVAL;
	err = read_once(&b, path, n, &w);
	if (err == -EAGAIN) {
		w.left = max_pairs;
		err = read_once(&b, path, n, &w);
	}
	return err;
}

static int fd_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	int fd = *(int *)ctx;
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EINVAL; /* shorter than its pages say */
		got += (size_t)r;
	}
	return 0;
}

int gg_bolt__file_bucket_pairs(const char *file, const char *const *path, unsigned int n, unsigned int max_pairs,
			       gg_bolt_pair_fn fn, void *ctx)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY), err;
	struct gg_bolt_src src = {.read = fd_read, .ctx = &fd};
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto cleanup;
	}
	src.size = (uint64_t)st.st_size;
	err = gg_bolt__bucket_pairs(&src, path, n, max_pairs, fn, ctx);
cleanup:
	close(fd);
	return err;
}
