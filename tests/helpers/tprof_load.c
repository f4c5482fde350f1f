/* tprof_load.c - ground truth for the tprofiling tests: named threads that block on a mutex, sleep, read a
 * FIFO that is written late, make a burst of short sleeps and spin on a CPU, each timing what it did with
 * its own clocks; after the work, one JSON line of what was measured, so a test can hold the probe's
 * events against it.
 *
 *   tprof_load FIFO [ROUNDS [MS]]
 *
 * Prints "pid=<pid>", waits for "go" on stdin, works (about ROUNDS * (MS + 130) ms), prints the JSON line,
 * then waits for stdin to close. Threads (their names are what the probe reports as thread.comm):
 *   tp_locker   holds the mutex MS ms per round (nanosleep while holding), then lets it go
 *   tp_waiter   pthread_mutex_lock on that mutex while it is held: lock_ns per round
 *   tp_sleeper  one nanosleep(2) (the syscall itself) of MS ms per round: sleep_ns (gaps between rounds
 *               are glibc nanosleep(3) calls, which make clock_nanosleep)
 *   tp_reader   one read(2) of FIFO per round, which tp_writer writes MS ms later: read_ns
 *   tp_burst    10 nanosleeps of 5 ms back to back, once: burst_ns (their sum), burst_count
 *   tp_spinner  spins for 200 ms of its CPU time: cpu_ns (CLOCK_THREAD_CPUTIME_ID)
 *   tp_alloc    1000 malloc(12345) and free, back to back: n, total_ns (time in the calls)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"

#define MAX_ROUNDS 16
#define BURST	   10
#define BURST_MS   5
#define SPIN_MS	   200
/* Not 100: the waiter's futex wake (its unlock) and its next wait were ~100 ms apart, so with the
 * tests' min_aggr_dur of 100 ms they fell in one window now and then (one "wake" event, a wait lost). */
#define GAP_MS	   130
#define ALLOCS	   1000
#define ALLOC_SIZE 12345

static unsigned int rounds = 3, op_ms = 150;
static const char *fifo;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint held_round; /* the round whose mutex hold has begun */
static atomic_uint read_round; /* the round whose read has begun */

struct th {
	const char *name;
	void *(*fn)(void *);
	pthread_t t;
	pid_t tid;
	uint64_t ns[MAX_ROUNDS];
	uint64_t total_ns;
	unsigned int n;
};

/* The nanosleep syscall itself (glibc's nanosleep() makes clock_nanosleep). */
static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (syscall(SYS_nanosleep, &ts, &ts) && errno == EINTR)
		;
}

/* sleep_ms(ms), and how long it took on the monotonic clock. */
static uint64_t timed_sleep_ms(unsigned int ms)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	sleep_ms(ms);
	return now_ns(CLOCK_MONOTONIC) - t0;
}

/* The gaps between rounds: glibc's nanosleep (the clock_nanosleep syscall), so that the "nanosleep"
 * events are exactly the measured ones. */
static void gap(void)
{
	struct timespec ts = {0, GAP_MS * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static struct th threads[];

static void *locker(void *arg)
{
	struct th *me = arg;

	for (unsigned int r = 1; r <= rounds; r++) {
		pthread_mutex_lock(&mu);
		atomic_store(&held_round, r);
		sleep_ms(op_ms);
		pthread_mutex_unlock(&mu);
		gap();
	}
	me->n = rounds;
	return NULL;
}

static void *waiter(void *arg)
{
	struct th *me = arg;

	for (unsigned int r = 1; r <= rounds; r++) {
		uint64_t t0;

		while (atomic_load(&held_round) < r)
			sched_yield();
		t0 = now_ns(CLOCK_MONOTONIC);
		pthread_mutex_lock(&mu);
		me->ns[r - 1] = now_ns(CLOCK_MONOTONIC) - t0;
		pthread_mutex_unlock(&mu);
		me->total_ns += me->ns[r - 1];
	}
	me->n = rounds;
	return NULL;
}

static void *sleeper(void *arg)
{
	struct th *me = arg;

	for (unsigned int r = 0; r < rounds; r++) {
		me->ns[r] = timed_sleep_ms(op_ms);
		me->total_ns += me->ns[r];
		gap();
	}
	me->n = rounds;
	return NULL;
}

static void *reader(void *arg)
{
	struct th *me = arg;
	int fd = open(fifo, O_RDONLY | O_CLOEXEC); /* waits for the writer's open */

	if (fd < 0)
		return NULL;
	for (unsigned int r = 0; r < rounds; r++) {
		char c;
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		ssize_t n;

		atomic_store(&read_round, r + 1);
		n = read(fd, &c, 1);
		me->ns[r] = now_ns(CLOCK_MONOTONIC) - t0;
		if (n != 1)
			break;
		me->total_ns += me->ns[r];
		me->n++;
	}
	close(fd);
	return NULL;
}

static void *writer(void *arg)
{
	struct th *me = arg;
	int fd = open(fifo, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	for (unsigned int r = 1; r <= rounds; r++) {
		while (atomic_load(&read_round) < r)
			sched_yield();
		sleep_ms(op_ms);
		if (write(fd, "x", 1) != 1)
			break;
		me->n++;
	}
	close(fd);
	return NULL;
}

static void *burst(void *arg)
{
	struct th *me = arg;

	for (unsigned int i = 0; i < BURST; i++) {
		me->total_ns += timed_sleep_ms(BURST_MS);
		me->n++;
	}
	return NULL;
}

static void *spinner(void *arg)
{
	struct th *me = arg;
	uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	volatile uint64_t x = 0;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < (uint64_t)SPIN_MS * 1000000u)
		for (int i = 0; i < 10000; i++)
			x += (uint64_t)i;
	me->total_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	me->n = 1;
	return NULL;
}

static void *allocator(void *arg)
{
	struct th *me = arg;

	for (unsigned int i = 0; i < ALLOCS; i++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		/* volatile: the compiler may not pair and drop them */
		char *volatile p = malloc(ALLOC_SIZE);

		if (!p)
			break;
		p[0] = 1;
		free(p);
		me->total_ns += now_ns(CLOCK_MONOTONIC) - t0;
		me->n++;
	}
	return NULL;
}

static struct th threads[] = {
	{.name = "tp_locker", .fn = locker},   {.name = "tp_waiter", .fn = waiter},
	{.name = "tp_sleeper", .fn = sleeper}, {.name = "tp_reader", .fn = reader},
	{.name = "tp_writer", .fn = writer},   {.name = "tp_burst", .fn = burst},
	{.name = "tp_spinner", .fn = spinner}, {.name = "tp_alloc", .fn = allocator},
};
#define NTHREADS (sizeof(threads) / sizeof(threads[0]))

/* The thread's id, as it runs (the probe's thread.pid). */
static void *start(void *arg)
{
	struct th *me = arg;

	me->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), me->name);
	return me->fn(me);
}

int main(int argc, char **argv)
{
	char line[64];

	if (argc < 2) {
		fprintf(stderr, "usage: tprof_load FIFO [ROUNDS [MS]]\n");
		return 2;
	}
	fifo = argv[1];
	if (argc > 2)
		rounds = (unsigned int)atoi(argv[2]);
	if (argc > 3)
		op_ms = (unsigned int)atoi(argv[3]);
	if (rounds < 1 || rounds > MAX_ROUNDS || op_ms < 1 || op_ms > 10000) {
		fprintf(stderr, "tprof_load: ROUNDS 1..%d, MS 1..10000\n", MAX_ROUNDS);
		return 2;
	}
	if (mkfifo(fifo, 0600) && errno != EEXIST) {
		perror("mkfifo");
		return 1;
	}
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strncmp(line, "go", 2))
		return 1;
	for (size_t i = 0; i < NTHREADS; i++)
		if (pthread_create(&threads[i].t, NULL, start, &threads[i])) {
			perror("pthread_create");
			return 1;
		}
	for (size_t i = 0; i < NTHREADS; i++)
		pthread_join(threads[i].t, NULL);
	printf("{\"pid\":%d,\"rounds\":%u,\"ms\":%u,\"threads\":{", (int)getpid(), rounds, op_ms);
	for (size_t i = 0; i < NTHREADS; i++) {
		const struct th *t = &threads[i];

		printf("%s\"%s\":{\"tid\":%d,\"n\":%u,\"total_ns\":%llu,\"ns\":[", i ? "," : "", t->name, (int)t->tid,
		       t->n, (unsigned long long)t->total_ns);
		for (unsigned int r = 0; r < rounds && t->fn != burst && t->fn != spinner && t->fn != allocator; r++)
			printf("%s%llu", r ? "," : "", (unsigned long long)t->ns[r]);
		printf("]}");
	}
	printf("}}\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	unlink(fifo);
	return 0;
}
