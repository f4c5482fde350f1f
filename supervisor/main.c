/* main.c - gala-gopher: the supervisor daemon. Loads the configuration and the table schemas, runs
 * every probe as its own process, validates what they send and writes it out. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"
#include "export.h"
#include "otel.h"
#include "machine_id.h"
#include "rest.h"
#include "supervisor.h"

static struct gg_sup g_sup;

static void usage(FILE *f)
{
	fprintf(f, "Usage: gala-gopher -c FILE\n"
		   "eBPF observability agent: runs probes, validates their records against .meta schemas and\n"
		   "exports them.\n\n"
		   "  -c, --config FILE   configuration (libconfig syntax, gala-gopher.conf compatible)\n"
		   "  -n, --check         load and check the configuration and schemas, then exit\n"
		   "  -h, --help          this help\n"
		   "  -v, --version       print the version\n");
}

/*
 * `gala-gopher --exec-probe PPID:DEV:INO BINARY ARGS...`: the supervisor spawns probes through this so
 * that PR_SET_PDEATHSIG is set before the probe's own code runs (libuv offers no hook between fork and
 * exec). The parent check closes the race where the supervisor died before prctl. DEV:INO is the file
 * the supervisor checked (gg_exec_trusted_id): the binary is opened once, run only if it is still that
 * file, and an ELF binary is run from that very descriptor (fexecve), so a path swapped after the check
 * runs nothing. A script is run by its path (its interpreter opens it again, and $0 stays the path
 * scripts expect), after the same identity check.
 */
static int exec_probe(int argc, char **argv)
{
	unsigned long long dev, ino;
	char hdr[2] = {0, 0};
	struct stat st;
	long ppid;
	char *end;
	int fd;

	if (argc < 4)
		return 127;
	ppid = strtol(argv[2], &end, 10);
	if (*end != ':' || sscanf(end, ":%llu:%llu", &dev, &ino) != 2)
		_exit(127);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != (pid_t)ppid)
		_exit(127);
	/* Into the probe's own cgroups before exec: all it allocates is charged to its own limits. */
	{
		const char *procs = getenv("GALA_GOPHER_CGROUP_PROCS");
		int err = procs ? gg_cglimits__join(procs) : 0;

		if (err)
			fprintf(stderr,
				"gala-gopher: cannot join the probe's cgroups (%s): %s; running without limits\n",
				procs, strerror(-err));
		unsetenv("GALA_GOPHER_CGROUP_PROCS");
	}
	fd = open(argv[3], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "gala-gopher: cannot open %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	if ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino) {
		fprintf(stderr,
			"gala-gopher: not executing %s: it is not the file checked before (replaced after the "
			"check)\n",
			argv[3]);
		_exit(126);
	}
	if (pread(fd, hdr, sizeof(hdr), 0) == 2 && hdr[0] == '#' && hdr[1] == '!')
		execv(argv[3], &argv[3]);
	else
		fexecve(fd, &argv[3], environ);
	fprintf(stderr, "gala-gopher: cannot execute %s: %s\n", argv[3], strerror(errno));
	_exit(127);
}

/* The probes' cgroups, once every probe has exited. */
static void remove_cgroups(struct gg_sup *sup)
{
	const char *names[GG_PROBES_MAX];
	unsigned int n = 0;

	if (!sup->cg.available)
		return;
	for (unsigned int i = 0; i < sup->nprobes && n < GG_PROBES_MAX; i++)
		names[n++] = sup->probes[i].conf->name;
	gg_cglimits__cleanup(&sup->cg, names, n);
}

static void config_warn(const char *msg)
{
	gg_warn("config: %s", msg);
}

static void close_all(struct gg_sup *sup)
{
	gg_probes__close(sup);
	gg_ingest__close(sup);
	gg_export__close(sup);
	gg_rest__close(sup);
	uv_close((uv_handle_t *)&sup->tick, NULL);
	uv_close((uv_handle_t *)&sup->sig_term, NULL);
	uv_close((uv_handle_t *)&sup->sig_int, NULL);
	uv_close((uv_handle_t *)&sup->sig_hup, NULL);
}

static void on_tick(uv_timer_t *t)
{
	struct gg_sup *sup = t->data;

	gg_ingest__flush(sup);
	if (sup->stopping) {
		if (gg_probes__all_stopped(sup)) {
			gg_status__write(sup);
			close_all(sup);
		}
		return;
	}
	gg_ingest__watch_run_dir(sup);
	gg_probes__tick(sup);
	(void)gg_status__write(sup);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct gg_sup *sup = h->data;

	if (signum == SIGHUP) {
		gg_info("SIGHUP ignored: the configuration file is read at start; change probes at run time through "
			"the REST API");
		return;
	}
	if (sup->stopping)
		return;
	gg_info("signal %d: stopping probes", signum);
	sup->stopping = 1;
	gg_rest__close(sup); /* no more requests: nothing starts while we stop */
	gg_probes__stop_all(sup);
	/* Check every 100 ms for the children to be gone. */
	uv_timer_start(&sup->tick, on_tick, 100, 100);
}

/* A directory root keeps sockets, bookkeeping and saved configuration in must be root's alone: anyone
 * else able to write there could replace the sockets or the children list. */
static int check_private_dir(const char *key, const char *path)
{
	char why[160];
	int ret = gg_private_dir(path, why, sizeof(why));

	if (ret)
		fprintf(stderr, "gala-gopher: %s %s %s\n", key, path, why);
	return ret;
}

/* 0 when set up, 1 when only checking (and the configuration is valid), or a negative errno. */
static int setup(struct gg_sup *sup, const char *conf_path, int check_only)
{
	char err[1024], path[4400];
	enum gg_log_level lvl = GG_LOG_INFO;
	size_t n = sizeof(sup->self_exe);
	int ret;

	ret = gg_config__load(&sup->cfg, conf_path, err, sizeof(err), config_warn);
	if (ret) {
		fprintf(stderr, "gala-gopher: invalid configuration: %s\n", err);
		return ret;
	}
	(void)gg_log_level__parse(sup->cfg.global.log_level, &lvl);
	sup->reg = meta_registry__new();
	if (!sup->reg)
		return -ENOMEM;
	ret = gg_events__register(sup->reg, err, sizeof(err));
	if (!ret)
		ret = gg_traces__register(sup->reg, err, sizeof(err));
	if (!ret)
		ret = gg_otel_logs__register(sup->reg, err, sizeof(err));
	if (!ret)
		ret = meta_registry__load_dir(sup->reg, sup->cfg.global.meta_path, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "gala-gopher: cannot load table schemas: %s\n", err);
		return ret;
	}
	if (check_only) {
		printf("configuration %s and %u tables from %s are valid\n", conf_path, meta_registry__count(sup->reg),
		       sup->cfg.global.meta_path);
		return 1;
	}

	ret = gg_mkdir_p(sup->cfg.global.run_dir, 0750);
	if (!ret)
		ret = gg_mkdir_p(sup->cfg.logs.debug_dir, 0750);
	if (ret) {
		fprintf(stderr, "gala-gopher: cannot create %s or %s: %s\n", sup->cfg.global.run_dir,
			sup->cfg.logs.debug_dir, strerror(-ret));
		return ret;
	}
	ret = check_private_dir("global.run_dir", sup->cfg.global.run_dir);
	if (ret)
		return ret;
	/* state_dir is made when the first configuration is saved; one that exists already must be private. */
	if (access(sup->cfg.rest.state_dir, F_OK) == 0) {
		ret = check_private_dir("rest_api_server.state_dir", sup->cfg.rest.state_dir);
		if (ret)
			return ret;
	}
	snprintf(path, sizeof(path), "%s/%s", sup->cfg.logs.debug_dir, sup->cfg.global.log_file_name);
	ret = gg_log_open(path, (uint64_t)sup->cfg.logs.debug_file_size << 20, lvl);
	if (ret) {
		fprintf(stderr, "gala-gopher: cannot open log %s: %s\n", path, strerror(-ret));
		return ret;
	}
	gg_info("gala-gopher %s starting, configuration %s, %u tables", GG_VERSION, conf_path,
		meta_registry__count(sup->reg));

	ret = uv_exepath(sup->self_exe, &n);
	if (ret) {
		gg_error("cannot find my own executable: %s", uv_strerror(ret));
		return -EIO;
	}
	ret = gg_ensure_tracefs();
	if (ret)
		gg_warn("cannot mount tracefs at /sys/kernel/tracing: %s (tracepoint probes will fail)",
			strerror(-ret));
	ret = gg_ensure_bpffs();
	if (ret)
		gg_warn("cannot mount bpffs at /sys/fs/bpf: %s (probes cannot pin maps)", strerror(-ret));
	ret = -ENOENT;
	if (!strcmp(sup->cfg.global.machine_id, "dmi-ip")) {
		ret = gg_machine_id__dmi_ip(sup->cfg.global.product_uuid_file, sup->machine_id,
					    sizeof(sup->machine_id));
		if (ret)
			gg_warn("global.machine_id = \"dmi-ip\": no DMI uuid (%s) or no IPv4 address: %s; using "
				"/etc/machine-id",
				sup->cfg.global.product_uuid_file, strerror(-ret));
	}
	if (ret && gg_read_machine_id(sup->machine_id, sizeof(sup->machine_id)))
		gg_warn("no machine id found (/etc/machine-id, DMI product uuid)");
	if (gethostname(sup->hostname, sizeof(sup->hostname) - 1))
		snprintf(sup->hostname, sizeof(sup->hostname), "unknown");

	snprintf(sup->data_url, sizeof(sup->data_url), "ipc://%s/data.ipc", sup->cfg.global.run_dir);
	snprintf(sup->ctrl_url, sizeof(sup->ctrl_url), "ipc://%s/ctrl.ipc", sup->cfg.global.run_dir);
	gg_probes__reap_leftovers(sup);
	if (gg_cglimits__init(&sup->cg, "gala-gopher-") == 0)
		gg_info("probe limits: memory %s, cpu %s, pids %s (cgroup %s)",
			sup->cg.base[GG_CG_MEM][0] ? "yes" : "no", sup->cg.base[GG_CG_CPU][0] ? "yes" : "no",
			sup->cg.base[GG_CG_PIDS][0] ? "yes" : "no", sup->cg.v2[GG_CG_MEM] ? "v2" : "v1");
	else
		gg_warn("no cgroup controller usable: probes run without memory, CPU and pids limits");

	/* In this order, the first failure ends it. REST after the probes (it restores REST-applied
	 * configuration onto them), before they start. */
	static int (*const init[])(struct gg_sup *) = {gg_export__init, gg_ingest__init, gg_probes__init,
						       gg_rest__init};
	for (size_t i = 0; i < sizeof(init) / sizeof(init[0]); i++) {
		ret = init[i](sup);
		if (ret)
			return ret;
	}
	return 0;
}

/* Frees what setup() made, once the loop has closed every handle: after a run or a failed setup
 * (each part accepts never having been set up). The REST state before the probes it points to. */
static void teardown(struct gg_sup *sup)
{
	gg_ingest__free(sup);
	gg_export__free(sup);
	gg_rest__free(sup);
	remove_cgroups(sup);
	gg_probes__free(sup);
	meta_registry__free(sup->reg);
	gg_config__fini(&sup->cfg);
	gg_log_close();
	uv_loop_close(sup->loop);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	struct gg_sup *sup = &g_sup;
	const char *conf = NULL;
	int c, check_only = 0, ret;

	if (argc >= 2 && !strcmp(argv[1], "--exec-probe"))
		return exec_probe(argc, argv);

	while ((c = getopt_long(argc, argv, "c:nhv", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf = optarg;
			break;
		case 'n':
			check_only = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			printf("gala-gopher %s\n", GG_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!conf || optind != argc) {
		usage(stderr);
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);
	/* Nothing we create may follow the umask we were started with (000 made the sockets 0777):
	 * group may read, nobody else anything. Probes inherit it. */
	umask(027);
	sup->loop = uv_default_loop();
	sup->start_ms = gg_now_ms();
	ret = setup(sup, conf, check_only);
	if (ret) {
		int code = ret > 0 ? 0 : 1;

		if (sup->nprobes)
			gg_probes__close(sup);
		gg_ingest__close(sup);
		gg_export__close(sup);
		gg_rest__close(sup);
		uv_run(sup->loop, UV_RUN_DEFAULT);
		teardown(sup);
		return code;
	}

	uv_timer_init(sup->loop, &sup->tick);
	sup->tick.data = sup;
	uv_signal_init(sup->loop, &sup->sig_term);
	uv_signal_init(sup->loop, &sup->sig_int);
	uv_signal_init(sup->loop, &sup->sig_hup);
	sup->sig_term.data = sup->sig_int.data = sup->sig_hup.data = sup;
	uv_signal_start(&sup->sig_term, on_signal, SIGTERM);
	uv_signal_start(&sup->sig_int, on_signal, SIGINT);
	uv_signal_start(&sup->sig_hup, on_signal, SIGHUP);

	gg_probes__start_all(sup);
	uv_timer_start(&sup->tick, on_tick, 1000, 1000);
	(void)gg_status__write(sup);

	uv_run(sup->loop, UV_RUN_DEFAULT);

	gg_info("gala-gopher stopped: %llu records received, %llu accepted", (unsigned long long)sup->st.records,
		(unsigned long long)sup->st.accepted);
	teardown(sup);
	return sup->exit_code;
}
