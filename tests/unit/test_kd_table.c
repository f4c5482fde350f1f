/* test_kd_table.c - kdiag's bounded flow table: rows found again by key across growth, new keys refused
 * (-ENOSPC) at max while known ones still count, max raised live, insertion order kept. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"

#include "kd_table.h"

struct key {
	uint32_t a, b;
	uint8_t addr[16];
};

static struct key mk(uint32_t i)
{
	struct key k;

	memset(&k, 0, sizeof(k));
	k.a = i;
	k.b = i * 7u;
	k.addr[15] = (uint8_t)i;
	return k;
}

GG_TEST(test_counts_and_bound)
{
	struct kd_table t;
	uint64_t *v;

	assert_int_equal(kd_table__init(&t, sizeof(struct key), sizeof(uint64_t), 1000), 0);
	/* every key twice: the second time finds the first's row (across several growths) */
	for (int round = 0; round < 2; round++)
		for (uint32_t i = 0; i < 1000; i++) {
			struct key k = mk(i);

			assert_int_equal(kd_table__get(&t, &k, (void **)&v), 0);
			*v += i + 1;
		}
	assert_int_equal(t.n, 1000);
	for (uint32_t i = 0; i < 1000; i++) {
		struct key k = mk(i);

		assert_memory_equal(kd_table__key(&t, i), &k, sizeof(k)); /* insertion order */
		assert_int_equal(*(uint64_t *)kd_table__val(&t, i), 2 * (i + 1));
	}
	/* full: a new key is refused, a known one still found */
	{
		struct key k = mk(5000), old = mk(3);

		assert_int_equal(kd_table__get(&t, &k, (void **)&v), -ENOSPC);
		assert_int_equal(kd_table__get(&t, &old, (void **)&v), 0);
		assert_int_equal(*v, 8);
		t.max = 1001; /* flow_max raised live */
		assert_int_equal(kd_table__get(&t, &k, (void **)&v), 0);
		assert_int_equal(*v, 0);
		assert_int_equal(t.n, 1001);
	}
	kd_table__free(&t);
	kd_table__free(&t); /* twice: harmless */
	kd_table__free(NULL);
}

GG_TEST(test_bad_sizes)
{
	struct kd_table t;

	assert_int_equal(kd_table__init(&t, 0, 8, 10), -EINVAL);
	assert_int_equal(kd_table__init(&t, 8, 0, 10), -EINVAL);
}
