/* uring_http.c - a one-connection HTTP/1.1 server whose first exchange uses recv/send and every later
 * one io_uring's IORING_OP_RECV/IORING_OP_SEND (raw system calls, no liburing): what test_l7_gaps
 * counts as l7probe's uncaptured calls. Usage: uring_http PORT [tw]; prints "ready" once listening,
 * serves one connection until the peer closes, then prints "served N uring M" and exits. With "tw" each
 * receive is submitted without waiting and the thread then blocks in read() on a timerfd: the receive
 * completes in task work run on the way out of that read, whose registers are not the receive's. */
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

static const char RESP[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static int ring_init(struct ring *r)
{
	struct io_uring_params p;
	void *sq, *cq;

	memset(&p, 0, sizeof(p));
	r->fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -1;
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
		return -1;
	r->sq_tail = (unsigned *)((char *)sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)((char *)sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)((char *)sq + p.sq_off.array);
	r->cq_head = (unsigned *)((char *)cq + p.cq_off.head);
	r->cq_tail = (unsigned *)((char *)cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)((char *)cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);
	return 0;
}

static int tw_fd = -1; /* "tw": a timerfd to block in while a receive completes */

/* One request through the ring, waited for: its result (bytes or -errno). */
static int ring_io(struct ring *r, int op, int fd, void *buf, unsigned len)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	int res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = (unsigned char)op;
	sqe->fd = fd;
	sqe->addr = (unsigned long)buf;
	sqe->len = len;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (tw_fd >= 0 && op == IORING_OP_RECV) {
		struct itimerspec its = {.it_value = {.tv_nsec = 20000000}};
		uint64_t ticks;

		if (syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) < 0)
			return -1;
		/* the client sends its next request only after a response: wait for it in read() */
		while (*r->cq_head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
			timerfd_settime(tw_fd, 0, &its, NULL);
			if (read(tw_fd, &ticks, sizeof(ticks)) < 0)
				return -1;
		}
	} else if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
		return -1;
	}
	head = *r->cq_head;
	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		;
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int l = socket(AF_INET, SOCK_STREAM, 0), c, one = 1, served = 0, uring = 0;
	struct ring r;
	char buf[4096];

	if (argc < 2 || l < 0)
		return 2;
	if (argc > 2 && strcmp(argv[2], "tw") == 0)
		tw_fd = timerfd_create(CLOCK_MONOTONIC, 0);
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) || ring_init(&r)) {
		perror("uring_http");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		return 1;
	for (;;) {
		/* one request per read: the client waits for each response */
		int n = served ? ring_io(&r, IORING_OP_RECV, c, buf, sizeof(buf)) : (int)recv(c, buf, sizeof(buf), 0);

		if (n <= 0)
			break;
		if (served) {
			if (ring_io(&r, IORING_OP_SEND, c, (void *)RESP, sizeof(RESP) - 1) != (int)sizeof(RESP) - 1)
				break;
			uring++;
		} else if (send(c, RESP, sizeof(RESP) - 1, 0) != (ssize_t)sizeof(RESP) - 1) {
			break;
		}
		served++;
	}
	printf("served %d uring %d\n", served, uring);
	close(c);
	close(l);
	close(r.fd);
	return 0;
}
