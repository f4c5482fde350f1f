/* test_virt_parse.c - virtualized_infos' parsers: qemu command lines (-name forms, ",," escapes, -uuid)
 * and libvirt status XML (the domain's own name and uuid, not its metadata's; entities; bad documents). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "virt_parse.h"

#define UUID  "6f1c3a5e-1111-4222-8333-123456789abc"
#define CL(s) s, sizeof(s) - 1 /* a literal with its NULs, without the terminating one */

GG_TEST(test_cmdline_forms)
{
	struct virt_guest g;

	assert_int_equal(virt_parse_cmdline(CL("qemu-system-x86_64\0-S\0-name\0guest=vm1,debug-threads=on\0-uuid\0"
					       "6F1C3A5E-1111-4222-8333-123456789ABC\0-nographic\0"),
					    &g),
			 0);
	assert_string_equal(g.name, "vm1");
	assert_string_equal(g.uuid, UUID);

	assert_int_equal(virt_parse_cmdline(CL("qemu\0-name\0legacy-name\0"), &g), 0);
	assert_string_equal(g.name, "legacy-name");
	assert_string_equal(g.uuid, "");

	assert_int_equal(virt_parse_cmdline(CL("qemu\0--name\0guest=a,,b,,,debug-threads=on\0--uuid\0" UUID "\0"), &g),
			 0);
	assert_string_equal(g.name, "a,b,");
	assert_string_equal(g.uuid, UUID);

	assert_int_equal(virt_parse_cmdline(CL("qemu\0-name\0process=qemu:x,guest=bar\0"), &g), 0);
	assert_string_equal(g.name, "bar");

	/* only options, no name: nothing */
	assert_int_equal(virt_parse_cmdline(CL("qemu\0-name\0debug-threads=on\0"), &g), -ENOENT);
	assert_string_equal(g.name, "");
	/* a malformed uuid is not taken */
	assert_int_equal(virt_parse_cmdline(CL("qemu\0-uuid\0not-a-uuid\0"), &g), -ENOENT);
	assert_int_equal(virt_parse_cmdline(CL("qemu\0-uuid\0" UUID "0\0"), &g), -ENOENT);
	/* "-name" last, or its value cut without a NUL */
	assert_int_equal(virt_parse_cmdline(CL("qemu\0-name\0"), &g), -ENOENT);
	assert_int_equal(virt_parse_cmdline("qemu\0-name\0guest=cut", 21, &g), 0);
	assert_string_equal(g.name, "cut");
	assert_int_equal(virt_parse_cmdline(CL(""), &g), -ENOENT);
}

GG_TEST(test_cmdline_long_name)
{
	static char buf[2048];
	struct virt_guest g;
	size_t n = 0;

	memcpy(buf, "qemu\0-name\0guest=", 17);
	n = 17;
	memset(buf + n, 'x', 1000);
	n += 1000;
	buf[n++] = 0;
	assert_int_equal(virt_parse_cmdline(buf, n, &g), 0);
	assert_int_equal(strlen(g.name), VIRT_NAME_MAX - 1);
}

static const char status_xml[] =
	"<!--\nWARNING: THIS IS AN AUTO-GENERATED FILE. <domain><name>comment</name></domain>\n-->\n"
	"<domstatus state='running' reason='booted' pid='4242'>\n"
	"  <taint flag='high-privileges'/>\n"
	"  <monitor path='/var/lib/libvirt/qemu/domain-1-web/monitor.sock' type='unix'/>\n"
	"  <vcpus>\n    <vcpu id='0' pid='4250'/>\n  </vcpus>\n"
	"  <qemuCaps>\n    <flag name='kvm'/>\n  </qemuCaps>\n"
	"  <domain type='kvm' id='1'>\n"
	"    <metadata>\n      <app:info xmlns:app='http://example.org/'><name>metadata name</name>"
	"<uuid>00000000-0000-0000-0000-000000000000</uuid></app:info>\n    </metadata>\n"
	"    <name>web &amp; db &#x4e2d;&#25991;</name>\n"
	"    <uuid>" UUID "</uuid>\n"
	"    <memory unit='KiB'>1048576</memory>\n"
	"    <devices><disk type='file'><source file='/x'/></disk></devices>\n"
	"  </domain>\n"
	"</domstatus>\n";

GG_TEST(test_domstatus)
{
	struct virt_guest g;
	int pid;

	assert_int_equal(virt_parse_domstatus(status_xml, sizeof(status_xml) - 1, &g, &pid), 0);
	assert_int_equal(pid, 4242);
	assert_string_equal(g.name, "web & db \xe4\xb8\xad\xe6\x96\x87");
	assert_string_equal(g.uuid, UUID);
}

GG_TEST(test_domstatus_bad)
{
	static char deep[4096];
	struct virt_guest g;
	int pid;
	size_t n = 0;
	const char *s;

	s = "<domstatus pid='1'><other><name>x</name></other></domstatus>";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), -EINVAL);
	s = "<domstatus pid='1'><domain><uuid>" UUID "</uuid></domain></domstatus>";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), -EINVAL); /* no name */
	s = "<domstatus pid='1'><domain><name>x</name";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), -EINVAL); /* cut in a tag */
	s = "<!-- never closed <domain><name>x</name></domain>";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), -EINVAL);
	s = "</a></b><domain><name>x</name></domain>";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), -EINVAL);
	/* a bare domain (an inactive definition): a name, no pid */
	s = "<domain type='kvm'><name>bare</name></domain>";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), 0);
	assert_int_equal(pid, 0);
	assert_string_equal(g.name, "bare");
	/* an unknown entity stays as it is; a huge code point becomes '?' */
	s = "<domain><name>&nope; &#99999999;</name></domain>";
	assert_int_equal(virt_parse_domstatus(s, strlen(s), &g, &pid), 0);
	assert_string_equal(g.name, "&nope; ?");
	/* nesting deeper than 64 is refused */
	for (int i = 0; i < 100; i++) {
		memcpy(deep + n, "<a>", 3);
		n += 3;
	}
	memcpy(deep + n, "<domain><name>x</name></domain>", 31);
	n += 31;
	assert_int_equal(virt_parse_domstatus(deep, n, &g, &pid), -EINVAL);
}
