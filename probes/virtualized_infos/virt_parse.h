/* virt_parse.h - what names a virtual machine: a qemu command line (-name, -uuid) and libvirt's status
 * XML of a running domain (/run/libvirt/qemu/<name>.xml). Bounded parsers, no allocation, no I/O. */
#ifndef GG_VIRT_PARSE_H
#define GG_VIRT_PARSE_H

#include <stddef.h>

#define VIRT_NAME_MAX 256u
#define VIRT_UUID_LEN 36u

struct virt_guest {
	char name[VIRT_NAME_MAX];
	char uuid[VIRT_UUID_LEN + 1]; /* lower case; "" when unknown */
};

/* 1 when s (n bytes) is a UUID in its 8-4-4-4-12 hex form. */
int virt_uuid_ok(const char *s, size_t n);

/*
 * A qemu command line as /proc/<pid>/cmdline has it (arguments separated by NULs) into *ret: the
 * guest name of "-name guest=NAME,..." or "-name NAME" (qemu's ",," escapes a comma), the uuid of
 * "-uuid". Options may be given with one or two dashes. 0 when it named a name or a uuid, -ENOENT when
 * neither (ret holds "" then).
 */
int virt_parse_cmdline(const char *buf, size_t len, struct virt_guest *ret);

/*
 * libvirt's status XML (<domstatus ... pid='N'><domain ...><name>..</name><uuid>..</uuid>...): the
 * domain's own name and uuid (children of <domain>, not of its metadata) into *ret, the pid into
 * *ret_pid (0 when absent). Entities &amp; &lt; &gt; &quot; &apos; and &#N; &#xN; are decoded. 0, or
 * -EINVAL when it is not such a document (no <domain>, no name, nesting deeper than 64).
 */
int virt_parse_domstatus(const char *xml, size_t len, struct virt_guest *ret, int *ret_pid);

#endif
