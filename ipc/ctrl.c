/* ctrl.c - control plane: the supervisor publishes versioned JSON updates, each probe subscribes to its name. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>

#include "decimal.h"
#include "ipc.h"
#include "ipc_impl.h"

#define VERSION_DIGITS_MAX GG_U64_DIGITS
#define CTRL_MSG_MAX	   (IPC_PROBE_NAME_MAX + 1 + VERSION_DIGITS_MAX + 1 + IPC_CTRL_MAX_PAYLOAD)

/* Supervisor's listening PUB socket for updates. */
struct ipc_ctrl_pub {
	struct ipc__ep ep; /* first: made by ipc__ep_new */
};
_Static_assert(offsetof(struct ipc_ctrl_pub, ep) == 0, "ipc__ep_new returns the endpoint as its ep");

/* A probe's SUB socket, subscribed to its own topic. */
struct ipc_ctrl_sub {
	struct ipc__ep ep;		    /* first: made by ipc__ep_new */
	char topic[IPC_PROBE_NAME_MAX + 1]; /* "<probe>\n" */
	size_t topic_len;
};
_Static_assert(offsetof(struct ipc_ctrl_sub, ep) == 0, "ipc__ep_new returns the endpoint as its ep");

static int check_probe(const char *probe, size_t *ret_len)
{
	size_t n;

	if (!probe)
		return -EINVAL;
	n = strnlen(probe, IPC_PROBE_NAME_MAX);
	/* '\n' ends the topic: a name containing it would let one probe read another's updates. */
	if (n == 0 || n >= IPC_PROBE_NAME_MAX || memchr(probe, '\n', n))
		return -EINVAL;
	*ret_len = n;
	return 0;
}

struct ipc_ctrl_pub *ipc_ctrl_pub__new(const char *url)
{
	/* Every probe gets every update (SUB filters locally), so a burst of reconfigurations needs
	 * room for one message per probe. */
	const struct ipc__ep_conf conf = {.open = nng_pub0_open, .sendbuf = 256, .url = url, .listen = 1};

	return ipc__ep_new(url != NULL, sizeof(struct ipc_ctrl_pub), &conf);
}

int ipc_ctrl_pub__relisten(struct ipc_ctrl_pub *cp, const char *url)
{
	return ipc__ep_relisten(cp ? &cp->ep : NULL, url);
}

int ipc_ctrl_pub__send(struct ipc_ctrl_pub *cp, const char *probe, uint64_t version, const char *payload, size_t len)
{
	char head[IPC_PROBE_NAME_MAX + VERSION_DIGITS_MAX + 2];
	size_t nlen, hlen;
	nng_msg *m;
	int rv, rc;

	if (!cp)
		return -EINVAL;
	rc = check_probe(probe, &nlen);
	if (rc < 0)
		return rc;
	if (len > IPC_CTRL_MAX_PAYLOAD)
		return -E2BIG;
	if (len > 0 && (!payload || memchr(payload, '\0', len)))
		return -EINVAL;

	memcpy(head, probe, nlen);
	hlen = nlen;
	head[hlen++] = '\n';
	hlen += gg_fmt_u64(head + hlen, version);
	head[hlen++] = '\n';

	rv = nng_msg_alloc(&m, 0);
	if (rv != 0)
		return ipc__nng_err(rv);
	if ((rv = nng_msg_append(m, head, hlen)) != 0 || (len > 0 && (rv = nng_msg_append(m, payload, len)) != 0)) {
		nng_msg_free(m);
		return ipc__nng_err(rv);
	}
	rv = nng_sendmsg(cp->ep.sock, m, NNG_FLAG_NONBLOCK);
	if (rv != 0) {
		nng_msg_free(m);
		return ipc__nng_err(rv);
	}
	return 0;
}

void ipc_ctrl_pub__free(struct ipc_ctrl_pub *cp)
{
	if (!cp)
		return;
	ipc__ep_close(&cp->ep);
	free(cp);
}

struct ipc_ctrl_sub *ipc_ctrl_sub__new(const char *url, const char *probe)
{
	struct ipc_ctrl_sub *cs;
	char topic[IPC_PROBE_NAME_MAX + 1];
	size_t nlen = 0; /* set when the arguments are valid (else no cs) */
	int valid = url && check_probe(probe, &nlen) == 0;
	const struct ipc__ep_conf conf = {.open = nng_sub0_open,
					  .recvmaxsz = CTRL_MSG_MAX,
					  .topic = topic,
					  .topic_len = nlen + 1,
					  .url = url,
					  .want_fd = 1};

	if (valid) {
		memcpy(topic, probe, nlen);
		topic[nlen] = '\n';
	}
	cs = ipc__ep_new(valid, sizeof(*cs), &conf);
	if (!cs)
		return NULL;
	memcpy(cs->topic, topic, conf.topic_len);
	cs->topic_len = conf.topic_len;
	return cs;
}

int ipc_ctrl_sub__fd(const struct ipc_ctrl_sub *cs)
{
	return cs ? cs->ep.fd : -EINVAL;
}

/* "<probe>\n<digits>\n<payload>": everything after the topic comes from a peer, so check it all. */
static int parse_ctrl(const struct ipc_ctrl_sub *cs, const char *b, size_t len, uint64_t *ret_version,
		      char **ret_payload)
{
	const char *digits, *p, *end = b + len;
	uint64_t v;
	size_t plen;
	char *out;

	if (len < cs->topic_len || memcmp(b, cs->topic, cs->topic_len) != 0)
		return -EBADMSG;
	digits = b + cs->topic_len;
	for (p = digits; p < end && *p >= '0' && *p <= '9'; p++)
		;
	if (gg_parse_u64(digits, (size_t)(p - digits), &v) < 0 || p >= end || *p != '\n')
		return -EBADMSG;
	p++;
	plen = (size_t)(end - p);
	if (plen > IPC_CTRL_MAX_PAYLOAD || memchr(p, '\0', plen))
		return -EBADMSG;
	out = malloc(plen + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, p, plen);
	out[plen] = '\0';
	*ret_version = v;
	*ret_payload = out;
	return 0;
}

int ipc_ctrl_sub__recv(struct ipc_ctrl_sub *cs, uint64_t *ret_version, char **ret_payload)
{
	nng_msg *m;
	int rc;

	if (!cs || !ret_version || !ret_payload)
		return -EINVAL;
	rc = ipc__ep_recv(&cs->ep, &m);
	if (rc <= 0)
		return rc;
	rc = parse_ctrl(cs, nng_msg_body(m), nng_msg_len(m), ret_version, ret_payload);
	nng_msg_free(m);
	return rc < 0 ? rc : 1;
}

void ipc_ctrl_sub__free(struct ipc_ctrl_sub *cs)
{
	if (!cs)
		return;
	ipc__ep_close(&cs->ep);
	free(cs);
}
