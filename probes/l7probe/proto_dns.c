/* proto_dns.c - DNS for l7probe: one message per UDP datagram or per 2-byte length prefix over TCP,
 * queries matched to responses by id, rcode as status (non-zero = error), api = qtype + qname. */
#include <stdio.h>
#include <string.h>

#include "l7_proto_impl.h"

#define DNS_HDR	     12
#define DNS_NAME_MAX 255
/* TCP: most bytes of a message read to get past its question (header, name, type and class) */
#define DNS_TCP_NEED (2 + DNS_HDR + DNS_NAME_MAX + 1 + 4)

struct dns_info {
	uint16_t id;
	bool qr;
	int rcode;
	char api[L7_API_MAX];
};

static const struct {
	uint16_t type;
	const char *name;
} dns_types[] = {
	{1, "A"},      {2, "NS"},     {5, "CNAME"},   {6, "SOA"},    {12, "PTR"},   {13, "HINFO"}, {15, "MX"},
	{16, "TXT"},   {28, "AAAA"},  {33, "SRV"},    {35, "NAPTR"}, {39, "DNAME"}, {41, "OPT"},   {43, "DS"},
	{46, "RRSIG"}, {47, "NSEC"},  {48, "DNSKEY"}, {50, "NSEC3"}, {52, "TLSA"},  {64, "SVCB"},  {65, "HTTPS"},
	{99, "SPF"},   {251, "IXFR"}, {252, "AXFR"},  {255, "ANY"},  {257, "CAA"},
};

/* Header and first question of msg[0..n). -1 when the bytes are not a DNS message (or its question
 * was not captured). */
static int dns_read(const uint8_t *p, size_t n, struct dns_info *ret)
{
	char name[DNS_NAME_MAX + 2];
	size_t i = DNS_HDR, k = 0;
	uint16_t flags, qd, type, klass;
	unsigned int opcode;
	const char *tname = NULL;
	char tbuf[16];

	memset(ret, 0, sizeof(*ret));
	if (n < DNS_HDR)
		return -1;
	flags = l7__be16(p + 2);
	opcode = (flags >> 11) & 0xf;
	qd = l7__be16(p + 4);
	if (opcode == 3 || opcode > 6 || qd > 4)
		return -1;
	ret->id = l7__be16(p);
	ret->qr = flags >> 15;
	ret->rcode = flags & 0xf;
	if (qd == 0)
		return 0; /* some updates, notifies and errors have no question */
	for (;;) {
		uint8_t l;

		if (i >= n)
			return -1;
		l = p[i++];
		if (l == 0)
			break;
		if ((l & 0xc0) == 0xc0) {
			/* compressed (not seen in a question in practice): the name is cut here */
			if (i >= n)
				return -1;
			i++;
			break;
		}
		if (l & 0xc0 || i + l > n || k + l + 1 > DNS_NAME_MAX)
			return -1;
		if (k)
			name[k++] = '.';
		for (uint8_t j = 0; j < l; j++) {
			uint8_t c = p[i + j];

			name[k++] = (char)(c > ' ' && c < 0x7f ? c : '?');
		}
		i += l;
	}
	if (k == 0)
		name[k++] = '.';
	name[k] = '\0';
	if (i + 4 > n)
		return -1;
	type = l7__be16(p + i);
	klass = l7__be16(p + i + 2) & 0x7fff; /* mDNS: the top bit asks for a unicast reply */
	if (klass != 1 && klass != 3 && klass != 4 && klass != 254 && klass != 255)
		return -1;
	for (size_t t = 0; t < sizeof(dns_types) / sizeof(dns_types[0]); t++)
		if (dns_types[t].type == type)
			tname = dns_types[t].name;
	if (!tname) {
		snprintf(tbuf, sizeof(tbuf), "TYPE%u", type);
		tname = tbuf;
	}
	snprintf(ret->api, sizeof(ret->api), "%s %s", tname, name);
	return 0;
}

/* Start (and end) the message described by info; the direction is the QR bit's, whatever the flow. */
static enum l7_flow dns_msg(struct l7_session *s, const struct dns_info *info, uint64_t ts)
{
	enum l7_flow flow = info->qr ? L7_FLOW_RESP : L7_FLOW_REQ;
	struct l7_msg *m = &s->dir[flow].msg;

	l7__msg_start(s, flow, ts);
	m->aux = info->id;
	if (info->qr) {
		m->status = info->rcode;
		m->error = info->rcode != 0;
	} else {
		memcpy(m->api, info->api, sizeof(m->api));
	}
	l7__msg_end(s, flow);
	return flow;
}

long l7__dns_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	struct dns_info info;
	size_t mlen, need, used;
	enum l7_flow f;

	if (n < 2)
		return 0;
	mlen = l7__be16(p);
	if (mlen < DNS_HDR)
		return -1;
	need = 2 + mlen < DNS_TCP_NEED ? 2 + mlen : DNS_TCP_NEED;
	if (n < need)
		return 0;
	used = n < 2 + mlen ? n : 2 + mlen;
	if (dns_read(p + 2, used - 2, &info) < 0)
		return -1;
	f = dns_msg(s, &info, start_ts);
	if (f != flow) {
		/* the tracker's idea of the direction disagrees with QR: keep the message where QR says */
		s->dir[f].msg.bytes = 2 + mlen;
		l7__msg_finish(s, f);
		s->dir[flow].skip = 2 + mlen - used;
		return (long)used;
	}
	s->dir[flow].skip = 2 + mlen - used;
	return (long)used;
}

void l7__dns_datagram(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t total, uint64_t ts)
{
	struct dns_info info;
	enum l7_flow f;

	if (dns_read(p, n, &info) < 0) {
		s->st.unparsable++;
		return;
	}
	f = dns_msg(s, &info, ts);
	s->dir[f].msg.bytes = total;
	l7__msg_finish(s, f);
}

bool l7__dns_infer(const uint8_t *p, size_t n, enum l7_transport transport, uint16_t port, enum l7_flow *ret_flow)
{
	struct dns_info info;
	size_t mlen;
	uint16_t flags, an, ns, ar;

	if (transport == L7_TRANSPORT_TCP) {
		if (n < 2 + DNS_HDR)
			return false;
		mlen = l7__be16(p);
		if (mlen < DNS_HDR || mlen + 2 < n)
			return false;
		p += 2;
		n -= 2;
	}
	if (n < DNS_HDR + 5 || dns_read(p, n, &info) < 0)
		return false;
	flags = l7__be16(p + 2);
	an = l7__be16(p + 6);
	ns = l7__be16(p + 8);
	ar = l7__be16(p + 10);
	/* a standard query with one question; off port 53 also no answers in a query and no reserved Z bit */
	if (((flags >> 11) & 0xf) != 0 || l7__be16(p + 4) != 1 || info.api[0] == '\0')
		return false;
	if (port != 53 && port != 5353 && (flags & 0x0040))
		return false;
	if (!info.qr && port != 53 && port != 5353 && (an || ns || ar > 2))
		return false;
	*ret_flow = info.qr ? L7_FLOW_RESP : L7_FLOW_REQ;
	return true;
}
