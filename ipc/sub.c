/* sub.c - supervisor side of the data plane: one NNG SUB socket every probe publishes to. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>

#include "fsutil.h"
#include "ipc.h"
#include "ipc_impl.h"

/* The listening SUB socket and its pollable fd. */
struct ipc_sub {
	struct ipc__ep ep; /* first: made by ipc__ep_new */
	/* ipc_sub__restrict_peers: read from NNG's pipe callback thread, set before peers can connect */
	int restricted;
	uid_t peer_uid;
	pid_t peer_parent;
	atomic_uint_fast64_t refused;
};
_Static_assert(offsetof(struct ipc_sub, ep) == 0, "ipc__ep_new returns the endpoint as its ep");

/* ppid (ret_ppid) and process group (ret_pgid) of pid from /proc/<pid>/stat; 0 or negative errno. */
static int proc_ids(pid_t pid, pid_t *ret_ppid, pid_t *ret_pgid)
{
	char path[64], buf[512];
	const char *p;
	ssize_t n;
	int ppid, pgid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = gg_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	/* comm may hold spaces and parentheses: the fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d %d", &ppid, &pgid) != 2)
		return -EIO;
	*ret_ppid = ppid;
	*ret_pgid = pgid;
	return 0;
}

/* A publisher is let in only when it runs as the expected uid and belongs to a process group whose
 * leader the expected parent (the supervisor) started: a spawned probe or one of its children. */
static void on_pipe_add(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct ipc_sub *sub = arg;
	uint64_t uid = UINT64_MAX, pid = 0;
	pid_t ppid, pgid, lppid, lpgid;

	(void)ev;
	if (!sub->restricted)
		return;
	if (nng_pipe_get_uint64(pipe, NNG_OPT_IPC_PEER_UID, &uid) == 0 &&
	    nng_pipe_get_uint64(pipe, NNG_OPT_IPC_PEER_PID, &pid) == 0 && uid == (uint64_t)sub->peer_uid && pid > 1 &&
	    proc_ids((pid_t)pid, &ppid, &pgid) == 0 && pgid > 1 && proc_ids(pgid, &lppid, &lpgid) == 0 &&
	    lpgid == pgid && lppid == sub->peer_parent)
		return;
	atomic_fetch_add(&sub->refused, 1);
	nng_pipe_close(pipe);
}

struct ipc_sub *ipc_sub__new(const char *url)
{
	/* NNG's default 1 MiB receive limit is below our largest batch (header + 1 MiB payload); a
	 * larger message would make NNG drop the whole connection. The header may grow to 64 KiB. */
	const struct ipc__ep_conf conf = {.open = nng_sub0_open,
					  .recvbuf = IPC_SUB_DEFAULT_RECVBUF,
					  .recvmaxsz = 65535u + IPC_BATCH_MAX_PAYLOAD,
					  .topic = "",
					  .topic_len = 0,
					  .notify = {{NNG_PIPE_EV_ADD_PRE, on_pipe_add}},
					  .url = url,
					  .listen = 1,
					  .want_fd = 1};

	return ipc__ep_new(url != NULL, sizeof(struct ipc_sub), &conf);
}

int ipc_sub__relisten(struct ipc_sub *sub, const char *url)
{
	return ipc__ep_relisten(sub ? &sub->ep : NULL, url);
}

int ipc_sub__restrict_peers(struct ipc_sub *sub, uid_t uid, pid_t parent)
{
	if (!sub || parent <= 0)
		return -EINVAL;
	sub->peer_uid = uid;
	sub->peer_parent = parent;
	sub->restricted = 1;
	return 0;
}

uint64_t ipc_sub__refused(const struct ipc_sub *sub)
{
	return sub ? atomic_load(&((struct ipc_sub *)sub)->refused) : 0;
}

int ipc_sub__set_recvbuf(struct ipc_sub *sub, int nmsgs)
{
	if (!sub || nmsgs < 1 || nmsgs > 8192)
		return -EINVAL;
	return ipc__nng_err(nng_socket_set_int(sub->ep.sock, NNG_OPT_RECVBUF, nmsgs));
}

int ipc_sub__fd(const struct ipc_sub *sub)
{
	return sub ? sub->ep.fd : -EINVAL;
}

int ipc_sub__recv(struct ipc_sub *sub, void **ret_msg, size_t *ret_len)
{
	nng_msg *m;
	int rv;

	if (!sub || !ret_msg || !ret_len)
		return -EINVAL;
	rv = ipc__ep_recv(&sub->ep, &m);
	if (rv <= 0)
		return rv;
	/* Hand out the body itself, not a copy, and keep the nng_msg pointer just in front of it so
	 * ipc_msg__free can find it. NNG allocates received messages with headroom, so this insert
	 * normally moves a pointer instead of copying. */
	rv = nng_msg_insert(m, &m, sizeof(m));
	if (rv != 0) {
		nng_msg_free(m);
		return ipc__nng_err(rv);
	}
	*ret_msg = (char *)nng_msg_body(m) + sizeof(m);
	*ret_len = nng_msg_len(m) - sizeof(m);
	return 1;
}

void ipc_msg__free(void *msg)
{
	nng_msg *m;

	if (!msg)
		return;
	memcpy(&m, (char *)msg - sizeof(m), sizeof(m));
	nng_msg_free(m);
}

void ipc_sub__free(struct ipc_sub *sub)
{
	if (!sub)
		return;
	ipc__ep_close(&sub->ep);
	free(sub);
}
