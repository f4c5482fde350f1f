/* test_sup_events.c - unit tests of event translation: gala-gopher's event layout and its successor to
 * OTel-log-shaped JSON, entity_id sanitising, severities, languages, labels, de-duplication within the
 * timeout and its bound. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "unit.h"

#include "../../supervisor/export/events.h"
#include "test_sup_fixture.h"

static struct gg_events *new_events(unsigned int timeout_s, int zh, unsigned int dedup_max)
{
	struct gg_events_opts o = {timeout_s, zh, "mid1", "host1", dedup_max, NULL, NULL};
	struct gg_events *ev = gg_events__new(&o);

	assert_non_null(ev);
	return ev;
}

/* Process line; on success return the parsed JSON (caller deletes), else NULL and *ret_err. */
static cJSON *process(struct gg_events *ev, const char *line, uint64_t mono, int *ret_err)
{
	struct meta_record rec;
	struct gg_buf b;
	cJSON *j = NULL;
	int err;

	assert_int_equal(meta_record__parse(reg, line, strlen(line), &rec, NULL), META_OK);
	assert_true(gg_events__is_event_table(rec.table));
	gg_buf__init(&b, 0);
	gg_buf__puts(&b, "prefix:");
	err = gg_events__process(ev, &rec, 1700000000123ull, mono, &b);
	if (ret_err)
		*ret_err = err;
	if (!err) {
		assert_memory_equal(b.data, "prefix:", 7);
		j = cJSON_Parse(b.data + 7);
		assert_non_null(j);
	} else {
		/* nothing left behind in the buffer */
		assert_int_equal(b.len, 7);
	}
	gg_buf__fini(&b);
	return j;
}

static const char *str_at(const cJSON *j, const char *a, const char *b)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, a);

	if (b)
		o = cJSON_GetObjectItemCaseSensitive(o, b);
	assert_true(cJSON_IsString(o));
	return o->valuestring;
}

static double num_at(const cJSON *j, const char *a)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, a);

	assert_true(cJSON_IsNumber(o));
	return o->valuedouble;
}

GG_TEST(test_gala_gopher_layout)
{
	struct gg_events *ev = new_events(60, 0, 0);
	cJSON *j, *labels;

	j = process(ev, "|event|system_df|/tmp|inode_used_per|WARN|13|Too many Inodes consumed(95%).|", 0, NULL);
	assert_int_equal((uint64_t)num_at(j, "Timestamp"), 1700000000123ull);
	assert_string_equal(str_at(j, "event_id", NULL), "1700000000123_mid1_system_df_:tmp");
	assert_string_equal(str_at(j, "Attributes", "entity_id"), "mid1_system_df_:tmp");
	assert_string_equal(str_at(j, "Attributes", "event_id"), "1700000000123_mid1_system_df_:tmp");
	assert_string_equal(str_at(j, "Attributes", "event_type"), "sys");
	assert_string_equal(str_at(j, "Resource", "metric"), "gala_gopher_system_df_inode_used_per");
	labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "Resource"), "labels");
	assert_string_equal(str_at(labels, "machine_id", NULL), "mid1");
	assert_string_equal(str_at(labels, "hostname", NULL), "host1");
	assert_string_equal(str_at(labels, "entity_id", NULL), "/tmp");
	assert_string_equal(str_at(j, "SeverityText", NULL), "WARN");
	assert_int_equal((int)num_at(j, "SeverityNumber"), 13);
	assert_string_equal(str_at(j, "Body", NULL), "Too many Inodes consumed(95%).");
	cJSON_Delete(j);
	gg_events__free(ev);
}

GG_TEST(test_dedup_within_timeout)
{
	struct gg_events *ev = new_events(10, 0, 0);
	int err;

	cJSON_Delete(process(ev, "|event|thread|123|off_cpu_ns|WARN|13|a|", 1000, NULL));
	assert_null(process(ev, "|event|thread|123|off_cpu_ns|ERROR|17|b|", 5000, &err));
	assert_int_equal(err, -EALREADY);
	/* another entity, another metric of the same entity: reported */
	cJSON_Delete(process(ev, "|event|thread|124|off_cpu_ns|WARN|13|a|", 5000, NULL));
	cJSON_Delete(process(ev, "|event|thread|123|fork_count|WARN|13|a|", 5000, NULL));
	assert_null(process(ev, "|event|thread|123|off_cpu_ns|WARN|13|c|", 10999, &err));
	assert_int_equal(err, -EALREADY);
	/* 10 s after the first report: again */
	cJSON_Delete(process(ev, "|event|thread|123|off_cpu_ns|WARN|13|d|", 11000, NULL));
	assert_int_equal(gg_events__stats(ev)->reported, 4);
	assert_int_equal(gg_events__stats(ev)->deduplicated, 2);
	assert_int_equal(gg_events__stats(ev)->received, 6);
	gg_events__free(ev);
}

GG_TEST(test_severity)
{
	struct gg_events *ev = new_events(10, 0, 0);
	cJSON *j;
	int err;

	/* unknown text, known number: the number decides */
	j = process(ev, "|event|a|1|m|warning|17|x|", 0, NULL);
	assert_string_equal(str_at(j, "SeverityText", NULL), "ERROR");
	assert_int_equal((int)num_at(j, "SeverityNumber"), 17);
	cJSON_Delete(j);
	assert_null(process(ev, "|event|a|2|m|BAD|5|x|", 0, &err));
	assert_int_equal(err, -EINVAL);
	/* probe text with a tab and a quote in the entity name still makes valid JSON */
	j = process(ev, "|event|a\tb\"c|3|m|INFO|9|x|", 0, NULL);
	assert_string_equal(str_at(j, "Resource", "metric"), "gala_gopher_a\tb\"c_m");
	cJSON_Delete(j);
	/* an invalid event does not take the de-duplication slot */
	cJSON_Delete(process(ev, "|event|a|2|m|FATAL|0|x|", 0, NULL));
	assert_int_equal(gg_events__stats(ev)->invalid, 1);
	gg_events__free(ev);
}

GG_TEST(test_v2_language_labels_type)
{
	struct gg_events *en = new_events(10, 0, 0), *zh = new_events(10, 1, 0);
	const char *line =
		"|event_v2|tcp_link|1_2|tcp_oom|ERROR|out of memory|内存不足|comm=nginx&path=%2Fa%26b%3Dc&x=a+b|app|";
	cJSON *j, *labels;
	int err;

	j = process(en, line, 0, NULL);
	assert_string_equal(str_at(j, "Body", NULL), "out of memory");
	assert_string_equal(str_at(j, "Attributes", "event_type"), "app");
	labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "Resource"), "labels");
	assert_string_equal(str_at(labels, "comm", NULL), "nginx");
	assert_string_equal(str_at(labels, "path", NULL), "/a&b=c");
	assert_string_equal(str_at(labels, "x", NULL), "a b");
	assert_string_equal(str_at(labels, "machine_id", NULL), "mid1");
	cJSON_Delete(j);
	j = process(zh, line, 0, NULL);
	assert_string_equal(str_at(j, "Body", NULL), "内存不足");
	cJSON_Delete(j);
	/* zh_CN asked, only English given: English */
	j = process(zh, "|event_v2|tcp_link|9|tcp_oom|INFO|only english||||", 0, NULL);
	assert_string_equal(str_at(j, "Body", NULL), "only english");
	assert_string_equal(str_at(j, "Attributes", "event_type"), "sys");
	cJSON_Delete(j);
	/* bad labels, bad event type: invalid */
	assert_null(process(en, "|event_v2|t|1|m|INFO|b||novalue|sys|", 0, &err));
	assert_int_equal(err, -EINVAL);
	assert_null(process(en, "|event_v2|t|1|m|INFO|b||a=%zz|sys|", 0, &err));
	assert_int_equal(err, -EINVAL);
	assert_null(process(en, "|event_v2|t|1|m|INFO|b||1a=x|sys|", 0, &err));
	assert_int_equal(err, -EINVAL);
	assert_null(process(en, "|event_v2|t|1|m|INFO|b|||other|", 0, &err));
	assert_int_equal(err, -EINVAL);
	assert_int_equal(gg_events__stats(en)->invalid, 4);
	gg_events__free(en);
	gg_events__free(zh);
}

GG_TEST(test_entity_id_bounded)
{
	struct gg_events *ev = new_events(10, 0, 0);
	char line[1200], id[1001];
	cJSON *j;

	memset(id, 'x', 1000);
	id[1000] = 0;
	snprintf(line, sizeof(line), "|event|e|%s|m|INFO|9|b|", id);
	j = process(ev, line, 0, NULL);
	assert_int_equal(strlen(str_at(j, "Attributes", "entity_id")), 254);
	cJSON_Delete(j);
	gg_events__free(ev);
}

GG_TEST(test_dedup_bound)
{
	struct gg_events *ev = new_events(10, 0, 3);
	char line[64];
	int err;

	for (int i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "|event|e|%d|m|INFO|9|b|", i);
		cJSON_Delete(process(ev, line, 0, &err));
		assert_int_equal(err, i < 3 ? 0 : -ENOSPC);
	}
	assert_int_equal(gg_events__stats(ev)->dedup_full, 2);
	assert_int_equal(gg_events__tracked(ev), 3);
	/* once the remembered ones expire there is room again */
	cJSON_Delete(process(ev, "|event|e|9|m|INFO|9|b|", 10000, &err));
	assert_int_equal(err, 0);
	assert_int_equal(gg_events__tracked(ev), 1);
	gg_events__free(ev);
}

GG_TEST_GROUP_REG(NULL, gg_events__register);
