/* host.c - the host sub-probe: one system_os record describing the machine. */
#include "system_infos.h"
#include "system_infos.meta.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#define IP_LIST_MAX 1024u

/* PRETTY_NAME="Debian GNU/Linux 12 (bookworm)" from an os-release text, quotes removed, into out; out
 * is left alone when there is none (or it is empty). */
static void pretty_name_parse(const char *data, size_t dlen, char *out, size_t len)
{
	const char *p = data, *end = data + dlen;

	while (p < end) {
		const char *eol = si_line_end(p, end);

		if (eol - p > 12 && !memcmp(p, "PRETTY_NAME=", 12)) {
			const char *v = p + 12, *ve = eol;

			if (ve > v && (*v == '"' || *v == '\''))
				v++;
			if (ve > v && (ve[-1] == '"' || ve[-1] == '\''))
				ve--;
			if (ve > v)
				snprintf(out, len, "%.*s", (int)(ve - v), v);
			return;
		}
		p = eol < end ? eol + 1 : end;
	}
}

static void os_pretty_name(struct si_host *h, char *out, size_t len)
{
	static const char *const paths[] = {"/etc/os-release", "/usr/lib/os-release"};

	snprintf(out, len, "Linux");
	for (unsigned int i = 0; i < 2; i++) {
		if (probe_read_file(paths[i], &h->buf, 64u << 10))
			continue;
		pretty_name_parse(h->buf.data, h->buf.len, out, len);
		return;
	}
}

/* "vm" when the CPU says it runs under a hypervisor or the firmware names a virtual platform. */
static void find_host_type(struct si_host *h)
{
	static const char *const vendors[] = {
		"QEMU",	      "KVM",	"VMware", "VirtualBox", "Xen",	  "Microsoft Corporation",
		"Amazon EC2", "Google", "Bochs",  "OpenStack",	"innotek"};
	char v[128];

	snprintf(h->host_type, sizeof(h->host_type), "pm");
	if (!probe_read_file("/proc/cpuinfo", &h->buf, SI_PROC_FILE_MAX) && strstr(h->buf.data, " hypervisor")) {
		snprintf(h->host_type, sizeof(h->host_type), "vm");
		return;
	}
	if (!si_read_line("/sys/class/dmi/id/sys_vendor", v, sizeof(v)) ||
	    !si_read_line("/sys/class/dmi/id/product_name", v, sizeof(v))) {
		for (unsigned int i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
			if (strstr(v, vendors[i]))
				snprintf(h->host_type, sizeof(h->host_type), "vm");
	}
}

static void ip_list(char *out, size_t len)
{
	struct ifaddrs *ifa, *it;
	size_t n = 0;

	out[0] = '\0';
	if (getifaddrs(&ifa) < 0)
		return;
	for (it = ifa; it; it = it->ifa_next) {
		char a[INET6_ADDRSTRLEN];
		const void *src;
		int w;

		if (!it->ifa_addr || (it->ifa_flags & IFF_LOOPBACK))
			continue;
		if (it->ifa_addr->sa_family == AF_INET)
			src = &((const struct sockaddr_in *)(const void *)it->ifa_addr)->sin_addr;
		else if (it->ifa_addr->sa_family == AF_INET6)
			src = &((const struct sockaddr_in6 *)(const void *)it->ifa_addr)->sin6_addr;
		else
			continue;
		if (!inet_ntop(it->ifa_addr->sa_family, src, a, sizeof(a)))
			continue;
		w = snprintf(out + n, len - n, "%s%s", n ? "," : "", a);
		if (w < 0 || (size_t)w >= len - n) {
			out[n] = '\0'; /* the list is cut at an address boundary */
			break;
		}
		n += (size_t)w;
	}
	freeifaddrs(ifa);
}

int si_host__report(struct si_host *h, struct probe_rt *rt)
{
	char os[256], machine_id[64], ips[IP_LIST_MAX], num[32];
	uint64_t btime = 0;
	double uptime = 0;
	struct probe_rec rec;
	struct utsname un;
	struct sysinfo si;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long tck = sysconf(_SC_CLK_TCK);
	const char *b;

	if (!h->host_type[0])
		find_host_type(h);
	os_pretty_name(h, os, sizeof(os));
	if (uname(&un) < 0)
		memset(&un, 0, sizeof(un));
	if (si_read_line("/etc/machine-id", machine_id, sizeof(machine_id)))
		machine_id[0] = '\0';
	ip_list(ips, sizeof(ips));
	if (!probe_read_file("/proc/stat", &h->buf, SI_PROC_FILE_MAX) && (b = strstr(h->buf.data, "\nbtime ")))
		(void)si_parse_u64(b + 7, h->buf.data + h->buf.len, 10, &btime);
	if (!si_read_line("/proc/uptime", num, sizeof(num)))
		uptime = strtod(num, NULL);
	if (sysinfo(&si) < 0)
		memset(&si, 0, sizeof(si));

	probe_rec__begin(&rec, &TBL_system_os);
	probe_rec__str(&rec, os);
	probe_rec__str(&rec, un.nodename);
	probe_rec__str(&rec, un.release);
	probe_rec__str(&rec, machine_id);
	probe_rec__u64(&rec, ncpu > 0 ? (uint64_t)ncpu : 0);
	probe_rec__u64(&rec, (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1) / (1024u * 1024u));
	probe_rec__str(&rec, ips);
	probe_rec__str(&rec, h->host_type);
	probe_rec__u64(&rec, tck > 0 ? (uint64_t)tck : 0);
	probe_rec__u64(&rec, btime);
	probe_rec__u64(&rec, 1);
	probe_rec__f64(&rec, uptime >= 0 ? uptime : 0);
	return probe_rt__emit(rt, &rec);
}

void si_host__free(struct si_host *h)
{
	if (!h)
		return;
	probe_buf__free(&h->buf);
}
