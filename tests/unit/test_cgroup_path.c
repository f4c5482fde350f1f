/* test_cgroup_path.c - container ids and pod UIDs from cgroup paths (ipc/cgroup_path.c), the parser the
 * supervisor's identity resolver and snoopers and sliprobe's container rows share. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"

#include "cgroup_path.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

GG_TEST(test_cgroup_layouts)
{
	static const char *const with_id[] = {
		"/system.slice/docker-" ID64 ".scope",
		"/docker/" ID64,
		"/kubepods.slice/kubepods-burstable.slice/"
		"kubepods-burstable-pod1a2b3c4d_0000_1111_2222_333344445555.slice/cri-containerd-" ID64 ".scope",
		"/kubepods/besteffort/pod1a2b3c4d-0000-1111-2222-333344445555/" ID64,
		"/kubepods.slice/kubepods-pod1a2b3c4d_0000_1111_2222_333344445555.slice/crio-" ID64 ".scope",
		"/machine.slice/libpod-" ID64 ".scope/container",
		"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope",
	};
	static const char *const without[] = {
		"/",
		"/system.slice/sshd.service",
		"/machine.slice/libpod-conmon-" ID64 ".scope",
		"/kubepods.slice/kubepods-pod1a2b.slice/crio-conmon-" ID64 ".scope",
		"/system.slice/docker-" ID64 "0.scope", /* 65 digits */
		"/x/abc" ID64,
	};
	char id[80];

	for (size_t i = 0; i < sizeof(with_id) / sizeof(with_id[0]); i++) {
		if (gg_cgroup__container_id(with_id[i], id, sizeof(id)))
			fail_msg("no container id in %s", with_id[i]);
		assert_string_equal(id, ID64);
	}
	for (size_t i = 0; i < sizeof(without) / sizeof(without[0]); i++) {
		if (gg_cgroup__container_id(without[i], id, sizeof(id)) == 0)
			fail_msg("container id %s found in %s", id, without[i]);
	}
	/* upper-case ids are folded */
	assert_int_equal(
		gg_cgroup__container_id("/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", id,
					sizeof(id)),
		0);
	assert_string_equal(id, ID64);

	assert_int_equal(gg_cgroup__pod_uid(with_id[2], id, sizeof(id)), 0);
	assert_string_equal(id, "1a2b3c4d-0000-1111-2222-333344445555");
	assert_int_equal(gg_cgroup__pod_uid(with_id[3], id, sizeof(id)), 0);
	assert_string_equal(id, "1a2b3c4d-0000-1111-2222-333344445555");
	assert_int_equal(gg_cgroup__pod_uid(with_id[4], id, sizeof(id)), 0);
	assert_string_equal(id, "1a2b3c4d-0000-1111-2222-333344445555");
	assert_int_equal(gg_cgroup__pod_uid(with_id[0], id, sizeof(id)), -ENOENT);
	assert_int_equal(gg_cgroup__pod_uid("/system.slice/pod1a2b3c4d-0000.slice", id, sizeof(id)), -ENOENT);
}

/* The component holding the id, nearest the leaf; a short buffer is refused. */
GG_TEST(test_container_id_span)
{
	const char *path = "/machine.slice/libpod-" ID64 ".scope/container";
	const char *cs = NULL, *ce = NULL;
	char id[65];

	assert_int_equal(gg_cgroup__container_id_at(path, id, sizeof(id), &cs, &ce), 0);
	assert_string_equal(id, ID64);
	assert_int_equal((int)(ce - cs), (int)strlen("libpod-" ID64 ".scope"));
	assert_memory_equal(cs, "libpod-", 7);
	assert_int_equal(gg_cgroup__container_id(path, id, 64), -EINVAL);
	assert_int_equal(gg_cgroup__container_id("", id, sizeof(id)), -ENOENT);
	/* two ids: the one nearer the leaf */
	assert_int_equal(
		gg_cgroup__container_id("/docker/" ID64
					"/docker/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
					id, sizeof(id)),
		0);
	assert_string_equal(id, "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
}
