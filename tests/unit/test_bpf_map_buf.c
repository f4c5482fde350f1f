/* test_bpf_map_buf.c - struct gg_bpf_map_buf (probes/lib/bpf_util.c) on real BPF hash maps: a whole read,
 * a bounded read, a dump in chunks (with and without delete, batch commands and the one-by-one path) and
 * forget_gone. The maps are created with bpf_map_create and given to libbpf as the map of an unloaded
 * skeleton (bpf_map__reuse_fd), since the functions take a struct bpf_map. Needs root (CAP_BPF): skipped
 * with a message when map creation is refused (EPERM). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_util.h"
#include "hwprobe.skel.h"

/* More entries than a dump chunk holds (CHUNK), in a map with room to spare. */
#define NENT   3000
#define MAXENT 4096
#define CHUNK  256

struct key {
	__u32 id;
	__u32 tgid;
};

/* An entry's tgid by its id: this process (alive), a reaped child (gone), or a pid above any pid_max. */
static __u32 self_pid, dead_pid;
#define GONE_PID 0x7ffffff0u

static __u32 tgid_of(__u32 id)
{
	return id % 3 == 0 ? self_pid : id % 3 == 1 ? dead_pid : GONE_PID;
}

static __u64 val_of(__u32 id)
{
	return (__u64)id * 7919 + 1;
}

struct maps {
	struct hwprobe *skel;
	struct bpf_map *map; /* the skeleton's map, now on fd */
	int fd;
};

/* A hash map with NENT entries, as the skeleton's map. 0, or -EPERM when BPF is not allowed here. */
static int maps_new(struct maps *m)
{
	struct key k = {0};
	__u64 v;

	m->fd = bpf_map_create(BPF_MAP_TYPE_HASH, "gg_test_buf", sizeof(struct key), sizeof(__u64), MAXENT, NULL);
	if (m->fd == -EPERM)
		return -EPERM;
	assert_true(m->fd >= 0);
	for (__u32 id = 0; id < NENT; id++) {
		k = (struct key){.id = id, .tgid = tgid_of(id)};
		v = val_of(id);
		assert_int_equal(bpf_map_update_elem(m->fd, &k, &v, BPF_NOEXIST), 0);
	}
	m->skel = hwprobe__open();
	assert_non_null(m->skel);
	m->map = m->skel->maps.hw_events;
	assert_int_equal(bpf_map__reuse_fd(m->map, m->fd), 0);
	assert_int_equal(bpf_map__fd(m->map) >= 0, 1);
	return 0;
}

static void maps_free(struct maps *m)
{
	hwprobe__destroy(m->skel);
	close(m->fd);
}

/* Each test's map, made by its setup (none when BPF is not allowed here: the test is then skipped). */
static int setup(void **state)
{
	struct maps *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	if (maps_new(m)) {
		free(m);
		m = NULL;
	}
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	struct maps *m = *state;

	if (m) {
		maps_free(m);
		free(m);
	}
	return 0;
}

static struct maps *maps_of(void **state)
{
	if (!*state) {
		print_message("bpf_map_create: EPERM: this test needs root (CAP_BPF); skipped\n");
		skip();
	}
	return *state;
}

/* A pid that was a process of ours and is no more (reaped), and not reused since. */
static int group_setup(void **state)
{
	char path[32];

	self_pid = (__u32)getpid();
	for (int tries = 0; tries < 10; tries++) {
		pid_t c = fork();

		assert_true(c >= 0);
		if (!c)
			_exit(0);
		assert_int_equal(waitpid(c, NULL, 0), c);
		snprintf(path, sizeof(path), "/proc/%d", (int)c);
		if (access(path, F_OK)) {
			dead_pid = (__u32)c;
			return 0;
		}
	}
	return -1;
}

GG_TEST_GROUP(group_setup, NULL);

/* Entries [0, n) of b, each checked against what was put and counted in seen[] by id. */
static void see(const struct gg_bpf_map_buf *b, uint32_t n, unsigned char *seen)
{
	const struct key *k = b->keys;
	const __u64 *v = b->vals;

	for (uint32_t i = 0; i < n; i++) {
		assert_true(k[i].id < NENT);
		assert_int_equal(k[i].tgid, tgid_of(k[i].id));
		assert_int_equal(v[i], val_of(k[i].id));
		seen[k[i].id]++;
	}
}

static void assert_all_once(const unsigned char *seen)
{
	for (__u32 id = 0; id < NENT; id++)
		if (seen[id] != 1)
			fail_msg("entry %u seen %u times", id, seen[id]);
}

static uint32_t map_count(int fd)
{
	struct key k, next;
	uint32_t n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}

/* read: the whole map, every entry once, with its value; the map is left as it was. */
GG_TEST_SETUP_TEARDOWN(test_read_all, setup, teardown)
{
	struct maps *m = maps_of(state);
	struct gg_bpf_map_buf b;
	unsigned char seen[NENT] = {0};

	assert_int_equal(gg_bpf_map_buf__alloc(&b, sizeof(struct key), sizeof(__u64), MAXENT), 0);
	assert_int_equal(gg_bpf_map_buf__read(&b, m->map), NENT);
	see(&b, NENT, seen);
	assert_all_once(seen);
	assert_int_equal(map_count(m->fd), NENT);
	gg_bpf_map_buf__free(&b);
	assert_null(b.keys);
	assert_null(b.vals);
	gg_bpf_map_buf__free(&b); /* again: nothing */
}

/* read into a buffer smaller than the map: at most b->max entries, each a real one, none twice (the read
 * stops with ENOSPC, logged as a warning, when the next hash bucket does not fit in the room left). */
GG_TEST_SETUP_TEARDOWN(test_read_bounded, setup, teardown)
{
	struct maps *m = maps_of(state);
	struct gg_bpf_map_buf b;
	unsigned char seen[NENT] = {0};
	uint32_t n;

	assert_int_equal(gg_bpf_map_buf__alloc(&b, sizeof(struct key), sizeof(__u64), CHUNK), 0);
	n = gg_bpf_map_buf__read(&b, m->map);
	assert_true(n > 0 && n <= CHUNK);
	see(&b, n, seen);
	for (__u32 id = 0; id < NENT; id++)
		assert_true(seen[id] <= 1);
	gg_bpf_map_buf__free(&b);
}

/* dump in chunks of at most b->max: every entry exactly once over the chunks, then done; with del the map
 * is empty at the end, without it untouched. slow: the one-by-one path (kernels without batch commands). */
static void dump_check(struct maps *m, int del, int slow)
{
	struct gg_bpf_map_buf b;
	struct gg_bpf_dump_cursor cur = {.slow = slow};
	unsigned char seen[NENT] = {0};
	uint32_t total = 0, calls = 0;

	assert_int_equal(gg_bpf_map_buf__alloc(&b, sizeof(struct key), sizeof(__u64), CHUNK), 0);
	while (!cur.done) {
		uint32_t n = CHUNK + 1;

		assert_int_equal(gg_bpf_map_buf__dump(&b, m->map, &cur, &n, del), 0);
		assert_true(n <= CHUNK);
		see(&b, n, seen);
		total += n;
		assert_true(++calls <= NENT); /* it ends */
	}
	assert_int_equal(total, NENT);
	assert_true(calls > NENT / CHUNK); /* more than one chunk */
	assert_all_once(seen);
	if (!slow && cur.slow)
		print_message("no batch commands for hash maps here: the one-by-one path ran\n");
	assert_true(cur.slow >= slow);
	/* once done, a dump reads nothing more */
	{
		uint32_t n = 1;

		assert_int_equal(gg_bpf_map_buf__dump(&b, m->map, &cur, &n, del), 0);
		assert_int_equal(n, 0);
	}
	assert_int_equal(map_count(m->fd), del ? 0 : NENT);
	gg_bpf_map_buf__free(&b);
}

GG_TEST_SETUP_TEARDOWN(test_dump_chunks, setup, teardown)
{
	dump_check(maps_of(state), 0, 0);
}

GG_TEST_SETUP_TEARDOWN(test_dump_chunks_delete, setup, teardown)
{
	dump_check(maps_of(state), 1, 0);
}

GG_TEST_SETUP_TEARDOWN(test_dump_chunks_slow, setup, teardown)
{
	dump_check(maps_of(state), 0, 1);
}

GG_TEST_SETUP_TEARDOWN(test_dump_chunks_slow_delete, setup, teardown)
{
	dump_check(maps_of(state), 1, 1);
}

/* forget_gone after a read: the entries of the reaped child and of the impossible pid are deleted from the
 * map, their keys at the front of b->keys; those of this live process stay, values untouched. */
GG_TEST_SETUP_TEARDOWN(test_forget_gone, setup, teardown)
{
	struct maps *m = maps_of(state);
	struct gg_bpf_map_buf b;
	unsigned char seen[NENT] = {0};
	const struct key *k;
	uint32_t n, ngone = 0, nlive = 0;

	for (__u32 id = 0; id < NENT; id++)
		tgid_of(id) == self_pid ? nlive++ : ngone++;
	assert_int_equal(gg_bpf_map_buf__alloc(&b, sizeof(struct key), sizeof(__u64), MAXENT), 0);
	n = gg_bpf_map_buf__read(&b, m->map);
	assert_int_equal(n, NENT);
	assert_int_equal(gg_bpf_map_buf__forget_gone(&b, m->map, n, offsetof(struct key, tgid)), 0);
	k = b.keys;
	for (uint32_t i = 0; i < ngone; i++) {
		assert_true(k[i].tgid == dead_pid || k[i].tgid == GONE_PID);
		seen[k[i].id]++;
	}
	for (__u32 id = 0; id < NENT; id++)
		assert_int_equal(seen[id], tgid_of(id) != self_pid);
	/* what is left: exactly the live process's entries */
	memset(seen, 0, sizeof(seen));
	memset(b.keys, 0, (size_t)b.max * b.key_size);
	n = gg_bpf_map_buf__read(&b, m->map);
	assert_int_equal(n, nlive);
	see(&b, n, seen);
	for (__u32 id = 0; id < NENT; id++)
		assert_int_equal(seen[id], tgid_of(id) == self_pid);
	/* nothing gone any more: nothing deleted */
	assert_int_equal(gg_bpf_map_buf__forget_gone(&b, m->map, n, offsetof(struct key, tgid)), 0);
	assert_int_equal(map_count(m->fd), nlive);
	gg_bpf_map_buf__free(&b);
}
