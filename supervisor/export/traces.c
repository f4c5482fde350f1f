/* traces.c - trace_span records -> OpenTelemetry JSON spans (OTLP/JSON ExportTraceServiceRequest:
 * resourceSpans / scopeSpans / spans), with the semantic conventions' attribute names where they
 * exist (http.*, db.*, messaging.*, rpc.*, client.*, server.*, network.*). */
#include "otel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char TRACE_META[] =
	"version = \"1.0.0\";\n"
	"measurements: (\n"
	"  { table_name: \"trace_span\", entity_name: \"trace\", fields: (\n"
	"      { description: \"trace id, 32 hex digits\", type: \"key\", name: \"trace_id\" },\n"
	"      { description: \"span id, 16 hex digits\", type: \"key\", name: \"span_id\" },\n"
	"      { description: \"parent span id, 16 hex digits, or empty\", type: \"label\", name: \"parent_span_id\" "
	"},\n"
	"      { description: \"client or server\", type: \"label\", name: \"kind\" },\n"
	"      { description: \"start, ns since the epoch\", type: \"counter\", name: \"start_unix_ns\" },\n"
	"      { description: \"end, ns since the epoch\", type: \"counter\", name: \"end_unix_ns\" },\n"
	"      { description: \"process\", type: \"label\", name: \"tgid\" },\n"
	"      { description: \"protocol\", type: \"label\", name: \"protocol\" },\n"
	"      { description: \"api, normalised\", type: \"label\", name: \"api\" },\n"
	"      { description: \"api as the parser read it\", type: \"label\", name: \"raw_api\" },\n"
	"      { description: \"protocol status or error code\", type: \"gauge\", name: \"status\" },\n"
	"      { description: \"1 when the request failed\", type: \"gauge\", name: \"error\" },\n"
	"      { description: \"client address\", type: \"label\", name: \"client_ip\" },\n"
	"      { description: \"client port\", type: \"label\", name: \"client_port\" },\n"
	"      { description: \"server address\", type: \"label\", name: \"server_ip\" },\n"
	"      { description: \"server port\", type: \"label\", name: \"server_port\" },\n"
	"      { description: \"tcp_client, tcp_server or udp\", type: \"label\", name: \"l4_role\" },\n"
	"      { description: \"client or server\", type: \"label\", name: \"l7_role\" },\n"
	"      { description: \"1 over TLS\", type: \"label\", name: \"ssl\" },\n"
	"      { description: \"request bytes\", type: \"counter\", name: \"req_bytes\" },\n"
	"      { description: \"response bytes\", type: \"counter\", name: \"resp_bytes\" } ) }\n"
	");\n";

enum {
	F_TRACE = 0,
	F_SPAN,
	F_PARENT,
	F_KIND,
	F_START,
	F_END,
	F_TGID,
	F_PROTO,
	F_API,
	F_RAW,
	F_STATUS,
	F_ERROR,
	F_CIP,
	F_CPORT,
	F_SIP,
	F_SPORT,
	F_L4,
	F_L7,
	F_SSL,
	F_REQB,
	F_RESPB,
	F__COUNT
};

int gg_traces__register(struct meta_registry *reg, char *err, size_t errlen)
{
	return meta_registry__load_buf(reg, "(built-in trace table)", TRACE_META, sizeof(TRACE_META) - 1, err, errlen);
}

int gg_traces__is_trace_table(const struct meta_table *t)
{
	return t->name[0] == 't' && !strcmp(t->name, "trace_span");
}

struct val {
	const char *s;
	size_t n;
};

static struct val field(const struct meta_record *rec, int i)
{
	return (struct val){rec->values[i], rec->lens[i]};
}

static int is(struct val v, const char *s)
{
	return v.n == strlen(s) && !memcmp(v.s, s, v.n);
}

static int all_of(struct val v, const char *set, size_t min, size_t max)
{
	if (v.n < min || v.n > max)
		return 0;
	for (size_t i = 0; i < v.n; i++)
		if (!strchr(set, v.s[i]) || !v.s[i])
			return 0;
	return 1;
}

/* The next attribute is the first of its list (no comma); the supervisor renders on one thread. */
static int first_attr;

static void attr_key(struct gg_buf *b, const char *key)
{
	gg_buf__puts(b, first_attr ? "{\"key\":" : ",{\"key\":");
	first_attr = 0;
	gg_buf__put_json_str(b, key, strlen(key));
}

static void attr_str(struct gg_buf *b, const char *key, const char *s, size_t n)
{
	attr_key(b, key);
	gg_buf__puts(b, ",\"value\":{\"stringValue\":");
	gg_buf__put_json_str(b, s, n);
	gg_buf__puts(b, "}}");
}

/* An integer attribute (OTLP/JSON: int64 as a string); v must be digits, '-' allowed first. */
static void attr_int(struct gg_buf *b, const char *key, struct val v)
{
	if (!v.n || !all_of(v, "-0123456789", 1, 20))
		return;
	attr_key(b, key);
	gg_buf__puts(b, ",\"value\":{\"intValue\":\"");
	gg_buf__put(b, v.s, v.n);
	gg_buf__puts(b, "\"}}");
}

static void attr_bool(struct gg_buf *b, const char *key, int on)
{
	attr_key(b, key);
	gg_buf__puts(b, on ? ",\"value\":{\"boolValue\":true}}" : ",\"value\":{\"boolValue\":false}}");
}

/* op and target of an api: before and after its first space. */
static void split(struct val api, struct val *op, struct val *target)
{
	const char *sp = memchr(api.s, ' ', api.n);

	*op = (struct val){api.s, sp ? (size_t)(sp - api.s) : api.n};
	*target = sp ? (struct val){sp + 1, api.n - (size_t)(sp + 1 - api.s)} : (struct val){"", 0};
}

static const char *db_system(struct val proto)
{
	if (is(proto, "pgsql"))
		return "postgresql";
	if (is(proto, "mysql"))
		return "mysql";
	if (is(proto, "redis"))
		return "redis";
	if (is(proto, "mongo"))
		return "mongodb";
	return NULL;
}

/* The protocol's attributes, from its api (normalised and raw) and status. */
static void proto_attrs(struct gg_buf *b, const struct meta_record *rec)
{
	struct val proto = field(rec, F_PROTO), api = field(rec, F_API), raw = field(rec, F_RAW);
	struct val status = field(rec, F_STATUS), op, target, rop, rtarget;
	const char *db = db_system(proto);
	int err = is(field(rec, F_ERROR), "1");

	split(api, &op, &target);
	split(raw, &rop, &rtarget);
	if (target.n && (target.s[0] == '/' || target.s[0] == '*') &&
	    all_of(op, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_", 1, 16)) {
		/* HTTP/1.x, and HTTP/2 or gRPC when their parsers report ":method :path" the same way */
		const char *q = memchr(rtarget.s, '?', rtarget.n);

		attr_str(b, "http.request.method", op.s, op.n);
		attr_str(b, "http.route", target.s, target.n);
		attr_str(b, "url.path", rtarget.s, q ? (size_t)(q - rtarget.s) : rtarget.n);
		if (!is(status, "0"))
			attr_int(b, "http.response.status_code", status);
		if (proto.n >= 4 && !memcmp(proto.s, "grpc", 4) && target.n > 1) {
			const char *slash = memchr(target.s + 1, '/', target.n - 1);

			attr_str(b, "rpc.system", "grpc", 4);
			if (slash) {
				attr_str(b, "rpc.service", target.s + 1, (size_t)(slash - target.s - 1));
				attr_str(b, "rpc.method", slash + 1, target.n - (size_t)(slash + 1 - target.s));
			}
			attr_int(b, "rpc.grpc.status_code", status);
		}
	} else if (db) {
		/* MySQL's api names the command first ("COM_QUERY SELECT t"): the statement follows */
		if (is(proto, "mysql") && op.n > 4 && !memcmp(op.s, "COM_", 4) && target.n) {
			attr_str(b, "db.mysql.command", op.s, op.n);
			split(target, &op, &target);
		}
		attr_str(b, "db.system.name", db, strlen(db));
		attr_str(b, "db.operation.name", op.s, op.n);
		if (target.n)
			attr_str(b, "db.collection.name", target.s, target.n);
		if (err)
			attr_str(b, "db.response.status_code", status.s, status.n);
	} else if (is(proto, "kafka") || is(proto, "rocketmq")) {
		attr_str(b, "messaging.system", proto.s, proto.n);
		attr_str(b, "messaging.operation.name", op.s, op.n);
		if (target.n)
			attr_str(b, "messaging.destination.name", target.s, target.n);
		if (err && is(proto, "kafka"))
			attr_int(b, "messaging.kafka.error_code", status);
	} else if (is(proto, "dns")) {
		attr_str(b, "dns.question.type", op.s, op.n);
		if (target.n)
			attr_str(b, "dns.question.name", target.s, target.n);
		attr_int(b, "dns.response.rcode", status);
	}
	if (err)
		attr_str(b, "error.type", status.s, status.n);
}

int gg_traces__render(const struct gg_otel_opts *o, const struct meta_record *rec, struct gg_buf *out)
{
	static const char hexd[] = "0123456789abcdef";
	struct val tid, sid, parent, start, end, tgid, proto;
	int server, err;
	const char *cid = NULL, *cname = NULL;
	char tg[16];

	if (rec->nvalues != F__COUNT)
		return -EINVAL;
	tid = field(rec, F_TRACE);
	sid = field(rec, F_SPAN);
	parent = field(rec, F_PARENT);
	start = field(rec, F_START);
	end = field(rec, F_END);
	tgid = field(rec, F_TGID);
	proto = field(rec, F_PROTO);
	if (!all_of(tid, hexd, 32, 32) || !all_of(sid, hexd, 16, 16) || (parent.n && !all_of(parent, hexd, 16, 16)) ||
	    !all_of(start, "0123456789", 1, 20) || !all_of(end, "0123456789", 1, 20) ||
	    !all_of(tgid, "0123456789", 1, 10))
		return -EINVAL;
	server = is(field(rec, F_KIND), "server");
	err = is(field(rec, F_ERROR), "1");
	memcpy(tg, tgid.s, tgid.n);
	tg[tgid.n] = '\0';
	if (o->container)
		o->container(o->ctx, (uint32_t)strtoul(tg, NULL, 10), &cid, &cname);

	gg_buf__puts(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
	first_attr = 1;
	attr_str(out, "service.name", "gala-gopher", 11);
	attr_str(out, "host.name", o->hostname ? o->hostname : "", o->hostname ? strlen(o->hostname) : 0);
	attr_str(out, "host.id", o->machine_id ? o->machine_id : "", o->machine_id ? strlen(o->machine_id) : 0);
	attr_int(out, "process.pid", tgid);
	if (cid && cid[0])
		attr_str(out, "container.id", cid, strlen(cid));
	if (cname && cname[0])
		attr_str(out, "container.name", cname, strlen(cname));
	gg_buf__puts(out, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"gala-gopher.l7probe\",\"version\":");
	gg_buf__put_json_str(out, o->version ? o->version : "", o->version ? strlen(o->version) : 0);
	gg_buf__puts(out, "},\"spans\":[{\"traceId\":\"");
	gg_buf__put(out, tid.s, tid.n);
	gg_buf__puts(out, "\",\"spanId\":\"");
	gg_buf__put(out, sid.s, sid.n);
	if (parent.n) {
		gg_buf__puts(out, "\",\"parentSpanId\":\"");
		gg_buf__put(out, parent.s, parent.n);
	}
	gg_buf__puts(out, "\",\"name\":");
	gg_buf__put_json_str(out, rec->values[F_API], rec->lens[F_API]);
	gg_buf__puts(out, server ? ",\"kind\":2" : ",\"kind\":3");
	gg_buf__puts(out, ",\"startTimeUnixNano\":\"");
	gg_buf__put(out, start.s, start.n);
	gg_buf__puts(out, "\",\"endTimeUnixNano\":\"");
	gg_buf__put(out, end.s, end.n);
	gg_buf__puts(out, "\",\"attributes\":[");
	first_attr = 1;
	attr_str(out, "network.transport", is(field(rec, F_L4), "udp") ? "udp" : "tcp", 3);
	attr_str(out, "network.protocol.name", proto.s, proto.n);
	attr_str(out, "client.address", rec->values[F_CIP], rec->lens[F_CIP]);
	attr_int(out, "client.port", field(rec, F_CPORT));
	attr_str(out, "server.address", rec->values[F_SIP], rec->lens[F_SIP]);
	attr_int(out, "server.port", field(rec, F_SPORT));
	proto_attrs(out, rec);
	attr_str(out, "gala_gopher.api", rec->values[F_API], rec->lens[F_API]);
	attr_str(out, "gala_gopher.l4_role", rec->values[F_L4], rec->lens[F_L4]);
	attr_str(out, "gala_gopher.l7_role", rec->values[F_L7], rec->lens[F_L7]);
	attr_bool(out, "gala_gopher.ssl", is(field(rec, F_SSL), "1"));
	attr_int(out, "gala_gopher.request.bytes", field(rec, F_REQB));
	attr_int(out, "gala_gopher.response.bytes", field(rec, F_RESPB));
	gg_buf__puts(out, "],\"status\":{\"code\":");
	gg_buf__puts(out, err ? "2" : "0");
	gg_buf__puts(out, "}}]}]}]}");
	return 0;
}
