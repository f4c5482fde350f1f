/* machine_id.h - gala-gopher's form of the machine id (global.machine_id = "dmi-ip"): the DMI product
 * uuid, '-', the host's first IPv4 address that is not a loopback one, as gala-gopher's imdb builds it. */
#ifndef GG_MACHINE_ID_H
#define GG_MACHINE_ID_H

#include <stddef.h>

/* "<product uuid>-<ipv4>" from uuid_file (e.g. /sys/class/dmi/id/product_uuid) and the interfaces.
 * 0, -ENOENT (no uuid, or no IPv4 address), -ENAMETOOLONG (len too small), or the errno of reading. */
int gg_machine_id__dmi_ip(const char *uuid_file, char *buf, size_t len);
/* The first IPv4 address of the host outside 127.0.0.0/8, in interface order (as `ip a` lists them). */
int gg_machine_id__host_ipv4(char *buf, size_t len);

#endif
