/* fuzz_virt_parse.c - libFuzzer target: virtualized_infos' qemu command line and libvirt status XML
 * parsers on any bytes (a guest owner chooses its -name; domain metadata is free text). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "virt_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct virt_guest g;
	int pid;

	(void)virt_parse_cmdline((const char *)data, size, &g);
	if (strlen(g.name) >= sizeof(g.name) || strlen(g.uuid) > VIRT_UUID_LEN)
		__builtin_trap();
	(void)virt_parse_domstatus((const char *)data, size, &g, &pid);
	if (strlen(g.name) >= sizeof(g.name) || strlen(g.uuid) > VIRT_UUID_LEN)
		__builtin_trap();
	return 0;
}
