/* probe_mgr.c - starts each probe as its own process group, restarts it with exponential backoff,
 * runs check_cmd start conditions, and stops probes with SIGTERM then SIGKILL. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "supervisor.h"
#include "uvutil.h"

extern char **environ;

static void probe_start(struct gg_probe *p);
static void check_start(struct gg_probe *p);
static void fresh_start(struct gg_probe *p);
static void batch_seen(struct gg_probe *p, uint64_t now);

static const char *const state_names[] = {"stopped", "checking", "check_wait", "running", "backoff", "stopping"};

const char *gg_probe_state__str(enum gg_probe_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

const char *gg_probe__state_name(const struct gg_probe *p)
{
	return p->state == GG_PS_RUNNING && p->hung_since_ms ? "hung" : gg_probe_state__str(p->state);
}

void gg_probe__json_process(cJSON *o, const struct gg_probe *p)
{
	cJSON_AddNumberToObject(o, "pid", p->pid);
	gg_json_add_u64(o, "starts", p->starts);
	gg_json_add_u64(o, "restarts", p->restarts);
	gg_json_add_u64(o, "uptime_ms", p->pid > 0 ? gg_now_ms() - p->started_ms : 0);
	cJSON_AddNumberToObject(o, "last_exit_status", (double)p->last_exit_status);
	cJSON_AddNumberToObject(o, "last_exit_signal", p->last_term_signal);
}

size_t gg_cmdline__format(char *buf, size_t len, char *const *argv)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (char *const *a = argv; a && *a && n + 1 < len; a++) {
		/* quoted as the configuration's param is split (gg_split_args): what is shown runs as shown */
		int quote = !**a || strpbrk(*a, " \t\n'\"") != NULL;

		if (n && n + 1 < len)
			buf[n++] = ' ';
		if (quote && !strchr(*a, '\''))
			n += (size_t)snprintf(buf + n, len - n, "'%s'", *a);
		else if (quote)
			n += (size_t)snprintf(buf + n, len - n, "\"%s\"", *a);
		else
			n += (size_t)snprintf(buf + n, len - n, "%s", *a);
		if (n >= len)
			n = len - 1;
	}
	return n;
}

void gg_probe__logf(struct gg_probe *p, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t n;

	if (!p->log_open)
		return;
	va_start(ap, fmt);
	n = gg_log_vformat(line, sizeof(line), "[gala-gopher]", fmt, ap);
	va_end(ap);
	(void)rot_file__write(&p->log, line, n);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	/* One static buffer is enough: reads are handled to completion before the next one. */
	static char slab[65536];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init(slab, sizeof(slab));
}

/* ---- children bookkeeping: <run_dir>/children lists "pid starttime" of live process groups ---- */

void gg_probes__write_children(struct gg_sup *sup)
{
	int dfd = gg_run_dir_fd(sup), fd;
	FILE *f;

	if (dfd < 0)
		return; /* run_dir lost: written again once it is repaired (ingest.c) */
	(void)unlinkat(dfd, "children.tmp", 0);
	/* 0600 whatever the umask: the next supervisor kills what this file lists. */
	fd = openat(dfd, "children.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		close(dfd);
		return;
	}
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		struct gg_probe *p = &sup->probes[i];
		unsigned long long st;

		if (p->pid > 0 && gg_proc_starttime(p->pid, &st) == 0)
			fprintf(f, "%d %llu\n", (int)p->pid, st);
	}
	if (fclose(f) == 0)
		(void)renameat(dfd, "children.tmp", dfd, "children");
	close(dfd);
}

/* state, process group, session and comm of pid (from /proc/<pid>/stat); 0 or negative errno */
static int proc_group_session(pid_t pid, char *ret_state, int *ret_pgid, int *ret_sid, char ret_comm[16])
{
	struct gg_proc_stat ps;
	size_t cl;
	int err = gg_proc_stat(pid, &ps);

	if (err)
		return err;
	if (sscanf(ps.rest, " %c %*d %d %d", ret_state, ret_pgid, ret_sid) != 3)
		return -EINVAL;
	cl = ps.comm_len > 15 ? 15 : ps.comm_len;
	memcpy(ret_comm, ps.comm, cl);
	ret_comm[cl] = 0;
	return 0;
}

/* A zombie leader (its parent died with the supervisor and nobody reaped it) has no exe left: its
 * name must then be that of our binary or a configured probe's (the kernel keeps 15 bytes). */
static int comm_is_ours(const struct gg_sup *sup, const char *comm)
{
	const char *b = strrchr(sup->self_exe, '/');

	if (!strncmp(b ? b + 1 : sup->self_exe, comm, 15))
		return 1;
	for (unsigned int i = 0; i < sup->cfg.nprobes; i++) {
		const char *cmd = sup->cfg.probes[i].command;

		b = strrchr(cmd, '/');
		if (cmd[0] && !strncmp(b ? b + 1 : cmd, comm, 15))
			return 1;
	}
	return 0;
}

/* Is pid running something we start: our own binary (the --exec-probe wrapper), a configured
 * probe's executable, or an interpreter running a configured probe's script (argv[1])? */
static int proc_is_ours(const struct gg_sup *sup, pid_t pid)
{
	char path[64], exe[PATH_MAX], real[PATH_MAX], cmdline[PATH_MAX + 256];
	const char *arg1 = NULL;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	if (!strcmp(exe, sup->self_exe))
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cmdline, sizeof(cmdline) - 1);
		close(fd);
		if (n > 0) {
			cmdline[n] = 0;
			if (strlen(cmdline) + 1 < (size_t)n)
				arg1 = cmdline + strlen(cmdline) + 1;
		}
	}
	for (unsigned int i = 0; i < sup->cfg.nprobes; i++) {
		const char *cmd = sup->cfg.probes[i].command;

		if (!cmd[0])
			continue;
		if (realpath(cmd, real) && !strcmp(real, exe))
			return 1;
		if (arg1 && !strcmp(arg1, cmd))
			return 1;
	}
	return 0;
}

void gg_probes__reap_leftovers(const struct gg_sup *sup)
{
	char path[4200];
	int pid, fd, pgid, sid;
	char state, comm[16];
	unsigned long long st, now_st;
	struct stat sb;
	FILE *f;

	snprintf(path, sizeof(path), "%s/children", sup->cfg.global.run_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno != ENOENT)
			gg_warn("not reaping left-behind probes: cannot open %s: %s", path, strerror(errno));
		return;
	}
	/* The next supervisor kills what this file lists: trust only a file we wrote ourselves. */
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 07777) != 0600) {
		gg_warn("not reaping left-behind probes: %s is not a regular file of uid %u with mode 0600 "
			"(uid %u, mode %04o): ignored",
			path, (unsigned)geteuid(), (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777));
		close(fd);
		unlink(path);
		return;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	while (fscanf(f, "%d %llu", &pid, &st) == 2) {
		/* Only when the start time matches: the pid may have been reused by an unrelated process. */
		if (pid <= 1 || gg_proc_starttime(pid, &now_st) || now_st != st)
			continue;
		/* Every probe was started in its own session as the leader of its own process group, running
		 * our wrapper, a configured probe's binary or a configured script. */
		if (proc_group_session(pid, &state, &pgid, &sid, comm) || pgid != pid || sid != pid ||
		    !(state == 'Z' ? comm_is_ours(sup, comm) : proc_is_ours(sup, pid))) {
			gg_warn("not killing process %d listed in %s: not a probe process group this supervisor "
				"starts",
				pid, path);
			continue;
		}
		gg_warn("killing process group %d left behind by a previous supervisor", pid);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	fclose(f);
	unlink(path);
}

/* ---- process exit, output pipes ------------------------------------------------------------------ */

static void on_pipe_closed(uv_handle_t *h)
{
	int *open_flag = h->data;

	*open_flag = 0;
}

static void close_pipe(uv_pipe_t *pipe, int *open_flag)
{
	if (*open_flag && !uv_is_closing((uv_handle_t *)pipe)) {
		pipe->data = open_flag;
		uv_close((uv_handle_t *)pipe, on_pipe_closed);
	}
}

static void on_proc_closed(uv_handle_t *h)
{
	struct gg_probe *p = h->data;

	p->proc_open = 0;
}

static void on_timer_restart(uv_timer_t *t)
{
	struct gg_probe *p = t->data;

	if (p->state != GG_PS_BACKOFF)
		return;
	/* The previous child's handles must be closed before they are initialised again. */
	if (p->proc_open || p->out_open || p->err_open) {
		uv_timer_start(&p->timer, on_timer_restart, 20, 0);
		return;
	}
	p->restarts++;
	if (p->conf->check_cmd[0])
		check_start(p);
	else
		probe_start(p);
}

static void on_probe_exit(uv_process_t *proc, int64_t status, int term_signal)
{
	struct gg_probe *p = proc->data;
	struct gg_sup *sup = p->sup;
	uint64_t now = gg_now_ms(), up = now - p->started_ms;

	p->last_exit_status = status;
	p->last_term_signal = term_signal;
	p->last_exit_ms = now;
	/* The group may hold children of the probe (extend scripts): take them down with it. */
	if (p->pid > 0)
		kill(-p->pid, SIGKILL);
	p->pid = 0;
	p->cmdline[0] = '\0';
	uv_close((uv_handle_t *)proc, on_proc_closed);
	uv_timer_stop(&p->timer);
	gg_probes__write_children(sup);

	if (p->state == GG_PS_STOPPING || sup->stopping) {
		gg_info("probe %s stopped (status %lld, signal %d)", p->conf->name, (long long)status, term_signal);
		gg_probe__logf(p, "stopped (status %lld, signal %d)", (long long)status, term_signal);
		p->state = GG_PS_STOPPED;
		if (p->start_after_stop && !sup->stopping) {
			p->start_after_stop = 0;
			fresh_start(p);
		}
		return;
	}

	/* The kernel killed it within its memory cgroup: its own limit, not the host's OOM killer. */
	if (p->limits_set && term_signal == SIGKILL && gg_cglimits__oom_kills(&sup->cg, p->conf->name) > p->oom_base) {
		p->oom_kills++;
		gg_warn("probe %s was killed by its memory limit (%d MB; global.probe_memory_mb or its entry's "
			"memory_mb)",
			p->conf->name, p->limits.memory_mb);
		gg_probe__logf(p, "killed by its memory limit (%d MB)", p->limits.memory_mb);
	}
	if (up >= GG_STABLE_UPTIME_MS)
		p->backoff_ms = GG_BACKOFF_MIN_MS;
	gg_warn("probe %s exited unexpectedly (status %lld, signal %d) after %llu ms; restarting in %llu ms",
		p->conf->name, (long long)status, term_signal, (unsigned long long)up,
		(unsigned long long)p->backoff_ms);
	gg_probe__logf(p, "exited (status %lld, signal %d) after %llu ms; restart in %llu ms", (long long)status,
		       term_signal, (unsigned long long)up, (unsigned long long)p->backoff_ms);
	p->state = GG_PS_BACKOFF;
	uv_timer_start(&p->timer, on_timer_restart, p->backoff_ms, 0);
	p->backoff_ms *= 2;
	if (p->backoff_ms > GG_BACKOFF_MAX_MS)
		p->backoff_ms = GG_BACKOFF_MAX_MS;
}

static void on_log_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct gg_probe *p = s->data;

	if (nread > 0) {
		if (p->log_open)
			(void)rot_file__write(&p->log, buf->base, (size_t)nread);
		return;
	}
	if (nread < 0)
		close_pipe((uv_pipe_t *)s, s == (uv_stream_t *)&p->out ? &p->out_open : &p->err_open);
}

/* Extend probes: every stdout line is a record candidate. */
static void on_records_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct gg_probe *p = s->data;
	const char *c, *end;

	if (nread < 0) {
		close_pipe(&p->out, &p->out_open);
		return;
	}
	c = buf->base;
	end = c + nread;
	while (c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		size_t n = (size_t)((nl ? nl : end) - c);

		if (!p->line_overflow) {
			if (p->line_len + n > IPC_RECORD_MAX_LEN) {
				p->line_overflow = 1;
			} else {
				memcpy(p->line + p->line_len, c, n);
				p->line_len += n;
			}
		}
		if (!nl)
			break;
		if (p->line_overflow) {
			p->st.records++;
			p->st.stdout_overlong++;
			p->st.rejected[META_REJ_MALFORMED]++;
			p->sup->st.records++;
		} else if (p->line_len) {
			size_t len = p->line_len;

			if (p->line[len - 1] == '\r')
				len--;
			gg_ingest__record(p->sup, p, p->line, len);
		}
		p->line_len = 0;
		p->line_overflow = 0;
		c = nl + 1;
	}
}

/* ---- spawning --------------------------------------------------------------------------------------- */

/* The identity section for probes that name containers themselves (stackprobe's [Pod]/[Con] frames):
 * where the runtimes keep their state, or GALA_GOPHER_IDENTITY=off. Returns the new count. */
static size_t identity_env(const struct gg_probe *p, char **env, size_t n)
{
	static char dirs[4][PATH_MAX + 32];
	static const char *const names[4] = {"CONTAINERD_DIR", "CRIO_DIR", "STORAGE_DIR", "DOCKER_DIR"};
	const char *vals[4] = {p->sup->cfg.identity.containerd_dir, p->sup->cfg.identity.crio_dir,
			       p->sup->cfg.identity.storage_dir, p->sup->cfg.identity.docker_dir};

	if (!p->sup->cfg.identity.enabled) {
		env[n++] = "GALA_GOPHER_IDENTITY=off";
		return n;
	}
	for (int i = 0; i < 4; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "GALA_GOPHER_%s=%s", names[i], vals[i]);
		env[n++] = dirs[i];
	}
	return n;
}

/* The probe's limits: its entry's, else global.probe_*; its cgroups made, what to join in procs. */
static void limits_prepare(struct gg_probe *p, char *procs, size_t len)
{
	const struct gg_limits *g = &p->sup->cfg.global.probe_limits, *c = &p->conf->limits;
	int err;

	procs[0] = '\0';
	p->limits = (struct gg_limits){c->memory_mb >= 0 ? c->memory_mb : g->memory_mb,
				       c->cpu_percent >= 0 ? c->cpu_percent : g->cpu_percent,
				       c->pids >= 0 ? c->pids : g->pids};
	p->limits_set = 0;
	if (!p->sup->cg.available)
		return;
	err = gg_cglimits__prepare(&p->sup->cg, p->conf->name, &p->limits, procs, len);
	if (err)
		gg_warn("probe %s: its cgroup limits are not all set: %s", p->conf->name, strerror(-err));
	p->limits_set = procs[0] != '\0';
	p->oom_base = gg_cglimits__oom_kills(&p->sup->cg, p->conf->name);
}

static char **build_env(struct gg_probe *p)
{
	static char cgroups[4 * PATH_MAX];
	size_t n = 0;
	char **env;

	while (environ[n])
		n++;
	/* ours: cgroups, data, ctrl, name, output bases, the identity section (4), NULL */
	env = calloc(n + 11, sizeof(*env));
	if (!env)
		return NULL;
	n = 0;
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, "GALA_GOPHER_", 12))
			env[n++] = *e;
	}
	/* the --exec-probe wrapper joins these before exec (every probe, extend ones too) */
	memcpy(cgroups, "GALA_GOPHER_CGROUP_PROCS=", 25);
	limits_prepare(p, cgroups + 25, sizeof(cgroups) - 25);
	if (cgroups[25])
		env[n++] = cgroups;
	if (p->conf->native) {
		static char data[4300], ctrl[4300], name[128], bases[PATH_MAX + 64];

		snprintf(data, sizeof(data), "GALA_GOPHER_DATA_URL=%s", p->sup->data_url);
		snprintf(ctrl, sizeof(ctrl), "GALA_GOPHER_CTRL_URL=%s", p->sup->ctrl_url);
		snprintf(name, sizeof(name), "GALA_GOPHER_PROBE_NAME=%s", p->conf->name);
		env[n++] = data;
		env[n++] = ctrl;
		env[n++] = name;
		/* where REST-named output directories lie: the probe confines its writes below it
		 * (probes/lib/probe_outdir.h) */
		if (p->sup->cfg.rest.output_base_dir[0]) {
			snprintf(bases, sizeof(bases), "GALA_GOPHER_OUTPUT_BASES=%s", p->sup->cfg.rest.output_base_dir);
			env[n++] = bases;
		}
		n = identity_env(p, env, n);
	}
	env[n] = NULL;
	return env;
}

static void probe_start(struct gg_probe *p)
{
	struct gg_sup *sup = p->sup;
	uv_process_options_t o;
	uv_stdio_container_t stdio[3];
	char **pargv = NULL, **argv = NULL, **env = NULL, ppid[96], extra[512] = "", why[1024];
	unsigned long long dev, ino;
	int nargs, nextra = 0, err;

	/* Checked again here: the file or a directory above it may have changed since it was accepted.
	 * The wrapper runs the binary only if it is still the file checked now (st_dev, st_ino). */
	err = gg_exec_trusted_id(p->conf->command, &dev, &ino, why, sizeof(why));
	if (err) {
		gg_error("probe %s: refusing to run it as root: %s", p->conf->name, why);
		goto fail;
	}
	nargs = gg_split_args(p->conf->param, &pargv);
	if (nargs < 0) {
		err = nargs;
		goto fail;
	}
	/* Our own binary in --exec-probe mode sets PR_SET_PDEATHSIG, then execs the probe with exactly
	 * the flags of the configuration: no probe outlives the supervisor, even on SIGKILL. */
	while (p->extra_argv && p->extra_argv[nextra])
		nextra++;
	argv = calloc((size_t)nargs + (size_t)nextra + 6, sizeof(*argv));
	env = build_env(p);
	if (!argv || !env) {
		err = -ENOMEM;
		goto fail;
	}
	snprintf(ppid, sizeof(ppid), "%d:%llu:%llu", (int)getpid(), dev, ino);
	argv[0] = sup->self_exe;
	argv[1] = (char *)"--exec-probe";
	argv[2] = ppid;
	argv[3] = (char *)p->conf->command;
	for (int i = 0; i < nargs; i++)
		argv[4 + i] = pargv[i];
	/* Flags from the REST API come last: they override the configuration file's. */
	for (int i = 0; i < nextra; i++) {
		size_t l = strlen(extra);

		argv[4 + nargs + i] = p->extra_argv[i];
		snprintf(extra + l, sizeof(extra) - l, " %s", p->extra_argv[i]);
	}

	uv_pipe_init(sup->loop, &p->out, 0);
	uv_pipe_init(sup->loop, &p->err, 0);
	p->out_open = p->err_open = 1;
	p->out.data = p->err.data = p;
	memset(stdio, 0, sizeof(stdio));
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&p->out;
	stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[2].data.stream = (uv_stream_t *)&p->err;

	memset(&o, 0, sizeof(o));
	o.file = sup->self_exe;
	o.args = argv;
	o.env = env;
	o.exit_cb = on_probe_exit;
	o.flags = UV_PROCESS_DETACHED; /* setsid: its own process group, signalled as a whole */
	o.stdio_count = 3;
	o.stdio = stdio;
	p->proc.data = p;
	err = uv_spawn(sup->loop, &p->proc, &o);
	p->proc_open = 1; /* uv_spawn initialises the handle even on failure: it must be closed */
	if (err) {
		uv_close((uv_handle_t *)&p->proc, on_proc_closed);
		close_pipe(&p->out, &p->out_open);
		close_pipe(&p->err, &p->err_open);
		goto fail;
	}
	p->pid = p->proc.pid;
	(void)gg_cmdline__format(p->cmdline, sizeof(p->cmdline), argv + 3); /* without the spawn wrapper */
	p->started_ms = gg_now_ms();
	p->starts++;
	p->state = GG_PS_RUNNING;
	p->hung_since_ms = 0;
	p->hung_kill_sent = 0;
	p->line_len = 0;
	p->line_overflow = 0;
	uv_read_start((uv_stream_t *)&p->out, alloc_cb, p->conf->native ? on_log_read : on_records_read);
	uv_read_start((uv_stream_t *)&p->err, alloc_cb, on_log_read);
	gg_probes__write_children(sup);
	if (p->cfg_json && p->cfg_version == 0)
		p->cfg_version = 1;
	p->cfg_applied = 0;
	p->cfg_last_send_ms = 0;
	gg_info("probe %s started, pid %d: %s %s%s", p->conf->name, (int)p->pid, p->conf->command, p->conf->param,
		extra);
	gg_probe__logf(p, "started, pid %d: %s %s%s", (int)p->pid, p->conf->command, p->conf->param, extra);
	gg_free_args(pargv);
	free(argv);
	free(env);
	return;

fail:
	gg_error("probe %s: cannot start %s: %s", p->conf->name, p->conf->command, strerror(-err));
	gg_probe__logf(p, "cannot start %s: %s", p->conf->command, strerror(-err));
	gg_free_args(pargv);
	free(argv);
	free(env);
	p->state = GG_PS_BACKOFF;
	uv_timer_start(&p->timer, on_timer_restart, p->backoff_ms, 0);
	p->backoff_ms = p->backoff_ms * 2 > GG_BACKOFF_MAX_MS ? GG_BACKOFF_MAX_MS : p->backoff_ms * 2;
}

/* ---- check_cmd: run by /bin/sh (it comes only from the root-owned configuration file) ------------- */

static void check_finish(struct gg_probe *p);

static void on_check_handle_closed(uv_handle_t *h)
{
	int *flag = h->data;

	*flag = 0;
}

static void on_check_retry(uv_timer_t *t)
{
	struct gg_probe *p = t->data;

	if (p->state == GG_PS_CHECK_WAIT)
		check_start(p);
}

static void check_maybe_done(struct gg_probe *p)
{
	/* Decide once the process has exited and its output is drained. */
	if (p->check_done || !p->check_exited || !p->check_eof)
		return;
	p->check_done = 1;
	check_finish(p);
}

static void on_check_exit(uv_process_t *proc, int64_t status, int sig)
{
	struct gg_probe *p = proc->data;

	p->check_status = sig ? -sig : status;
	uv_timer_stop(&p->check_timer);
	p->check_exited = 1;
	check_maybe_done(p);
}

static void on_check_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct gg_probe *p = s->data;

	if (nread > 0) {
		size_t room = sizeof(p->check_buf) - 1 - p->check_len;
		size_t n = (size_t)nread < room ? (size_t)nread : room;

		memcpy(p->check_buf + p->check_len, buf->base, n);
		p->check_len += n;
		p->check_buf[p->check_len] = 0;
		return;
	}
	if (nread < 0) {
		p->check_out.data = &p->check_out_open;
		uv_close((uv_handle_t *)&p->check_out, on_check_handle_closed);
		p->check_eof = 1;
		check_maybe_done(p);
	}
}

static void on_check_timeout(uv_timer_t *t)
{
	struct gg_probe *p = t->data;

	gg_warn("probe %s: check_cmd timed out after %d s, killing it", p->conf->name,
		p->sup->cfg.global.check_timeout);
	if (p->check_proc.pid > 0)
		kill(-p->check_proc.pid, SIGKILL);
}

static void check_finish(struct gg_probe *p)
{
	struct gg_sup *sup = p->sup;
	char *end;
	long long v;
	const char *s = p->check_buf;

	p->check_proc.data = &p->check_proc_open;
	uv_close((uv_handle_t *)&p->check_proc, on_check_handle_closed);

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno)
		v = -1;
	p->check_value = v;
	p->checks++;
	if (p->state != GG_PS_CHECKING || sup->stopping)
		return;
	if (p->check_status == 0 && v > 0) {
		gg_info("probe %s: check_cmd printed %lld, starting", p->conf->name, v);
		probe_start(p);
		return;
	}
	gg_info("probe %s: start condition not met (check_cmd printed \"%.40s\", exit %lld); re-check in %d s",
		p->conf->name, p->check_buf, (long long)p->check_status, sup->cfg.global.check_interval);
	gg_probe__logf(p, "start condition not met (check_cmd output \"%.40s\", exit %lld)", p->check_buf,
		       (long long)p->check_status);
	p->state = GG_PS_CHECK_WAIT;
	uv_timer_start(&p->timer, on_check_retry, (uint64_t)sup->cfg.global.check_interval * 1000, 0);
}

static void check_start(struct gg_probe *p)
{
	struct gg_sup *sup = p->sup;
	uv_process_options_t o;
	uv_stdio_container_t stdio[3];
	char *argv[4];
	int err;

	if (p->check_proc_open || p->check_out_open) {
		/* the previous check's handles are still closing */
		p->state = GG_PS_CHECK_WAIT;
		uv_timer_start(&p->timer, on_check_retry, 50, 0);
		return;
	}
	p->state = GG_PS_CHECKING;
	p->check_len = 0;
	p->check_buf[0] = 0;
	p->check_done = 0;
	p->check_exited = 0;
	p->check_eof = 0;
	p->check_status = -1;
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)p->conf->check_cmd;
	argv[3] = NULL;
	uv_pipe_init(sup->loop, &p->check_out, 0);
	p->check_out_open = 1;
	p->check_out.data = p;
	memset(stdio, 0, sizeof(stdio));
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&p->check_out;
	stdio[2].flags = UV_IGNORE;
	memset(&o, 0, sizeof(o));
	o.file = "/bin/sh";
	o.args = argv;
	o.exit_cb = on_check_exit;
	o.flags = UV_PROCESS_DETACHED;
	o.stdio_count = 3;
	o.stdio = stdio;
	p->check_proc.data = p;
	err = uv_spawn(sup->loop, &p->check_proc, &o);
	p->check_proc_open = 1;
	if (err) {
		gg_error("probe %s: cannot run check_cmd: %s", p->conf->name, uv_strerror(err));
		p->check_proc.data = &p->check_proc_open;
		uv_close((uv_handle_t *)&p->check_proc, on_check_handle_closed);
		p->check_out.data = &p->check_out_open;
		uv_close((uv_handle_t *)&p->check_out, on_check_handle_closed);
		p->state = GG_PS_CHECK_WAIT;
		uv_timer_start(&p->timer, on_check_retry, (uint64_t)sup->cfg.global.check_interval * 1000, 0);
		return;
	}
	uv_read_start((uv_stream_t *)&p->check_out, alloc_cb, on_check_read);
	uv_timer_start(&p->check_timer, on_check_timeout, (uint64_t)sup->cfg.global.check_timeout * 1000, 0);
}

/* ---- public ----------------------------------------------------------------------------------------- */

static int probe_init_one(struct gg_sup *sup, struct gg_probe *p, const struct gg_probe_conf *conf)
{
	char path[4400];

	p->sup = sup;
	p->conf = conf;
	p->state = GG_PS_STOPPED;
	p->backoff_ms = GG_BACKOFF_MIN_MS;
	p->check_value = -1;
	p->line = malloc(IPC_RECORD_MAX_LEN + 1);
	if (!p->line)
		return -ENOMEM;
	if (p->conf->params_json) {
		p->cfg_json = strdup(p->conf->params_json);
		if (!p->cfg_json)
			return -ENOMEM;
	}
	uv_timer_init(sup->loop, &p->timer);
	p->timer.data = p;
	uv_timer_init(sup->loop, &p->check_timer);
	p->check_timer.data = p;
	p->check_timer_open = 1;
	snprintf(path, sizeof(path), "%s/probes/%s.log", sup->cfg.logs.debug_dir, p->conf->name);
	if (rot_file__open(&p->log, path, (uint64_t)sup->cfg.logs.debug_file_size << 20, 2) == 0)
		p->log_open = 1;
	else
		gg_warn("probe %s: cannot open its log %s: %s", p->conf->name, path, strerror(errno));
	return 0;
}

int gg_probes__init(struct gg_sup *sup)
{
	char dir[4200];

	/* Room for every probe the configuration may hold: the REST API adds entries at run time, and
	 * entries cannot move (the loop holds pointers to their handles). */
	sup->probes = calloc(GG_PROBES_MAX, sizeof(*sup->probes));
	if (!sup->probes)
		return -ENOMEM;
	sup->nprobes = 0;
	sup->ingest_ops = (struct gg_ingest_ops){
		.find = gg_probes__find,
		.connected = batch_seen,
		.logf = gg_probe__logf,
		.write_children = gg_probes__write_children,
	};
	snprintf(dir, sizeof(dir), "%s/probes", sup->cfg.logs.debug_dir);
	if (gg_mkdir_p(dir, 0750))
		gg_warn("cannot create %s: %s", dir, strerror(errno));
	for (unsigned int i = 0; i < sup->cfg.nprobes; i++) {
		int err = probe_init_one(sup, &sup->probes[i], &sup->cfg.probes[i]);

		sup->nprobes = i + 1; /* a half-initialized entry is closed and freed like the others */
		if (err)
			return err;
	}
	return 0;
}

struct gg_probe *gg_probes__add(struct gg_sup *sup, const struct gg_probe_conf *conf)
{
	struct gg_probe *p;
	int err;

	if (!sup->probes || sup->nprobes >= GG_PROBES_MAX) {
		errno = ENOSPC;
		return NULL;
	}
	p = &sup->probes[sup->nprobes];
	memset(p, 0, sizeof(*p));
	err = probe_init_one(sup, p, conf);
	sup->nprobes++;
	if (err) {
		errno = -err;
		return NULL;
	}
	return p;
}

void gg_probes__start_all(struct gg_sup *sup)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		struct gg_probe *p = &sup->probes[i];

		if (p->desired == GG_DESIRED_STOPPED ||
		    (p->conf->sw == GG_SWITCH_OFF && p->desired != GG_DESIRED_RUNNING))
			continue;
		if (p->state != GG_PS_STOPPED)
			continue;
		if (p->conf->check_cmd[0])
			check_start(p);
		else
			probe_start(p);
	}
}

static void on_stop_grace(uv_timer_t *t)
{
	struct gg_probe *p = t->data;

	if (p->state == GG_PS_STOPPING && p->pid > 0) {
		gg_warn("probe %s did not stop within %d ms, sending SIGKILL", p->conf->name,
			p->sup->cfg.global.stop_grace_ms);
		kill(-p->pid, SIGKILL);
	}
}

void gg_probes__stop_all(struct gg_sup *sup)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		struct gg_probe *p = &sup->probes[i];

		uv_timer_stop(&p->timer);
		if (p->state == GG_PS_CHECKING && p->check_proc.pid > 0)
			kill(-p->check_proc.pid, SIGKILL);
		if (p->state == GG_PS_RUNNING && p->pid > 0) {
			p->state = GG_PS_STOPPING;
			kill(-p->pid, SIGTERM);
			uv_timer_start(&p->timer, on_stop_grace, (uint64_t)sup->cfg.global.stop_grace_ms, 0);
		} else if (p->state != GG_PS_STOPPING && p->state != GG_PS_CHECKING) {
			p->state = GG_PS_STOPPED;
		}
	}
}

int gg_probes__all_stopped(const struct gg_sup *sup)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		const struct gg_probe *p = &sup->probes[i];

		if (p->pid > 0 || p->proc_open || p->out_open || p->err_open || p->check_proc_open || p->check_out_open)
			return 0;
	}
	return 1;
}

void gg_probes__close(struct gg_sup *sup)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		struct gg_probe *p = &sup->probes[i];

		gg_uv_close_open((uv_handle_t *)&p->timer, 1);
		gg_uv_close_open((uv_handle_t *)&p->check_timer, p->check_timer_open);
		p->check_timer_open = 0;
	}
}

void gg_probes__free(struct gg_sup *sup)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		struct gg_probe *p = &sup->probes[i];

		if (p->log_open)
			rot_file__close(&p->log);
		free(p->line);
		free(p->cfg_json);
		gg_free_args(p->extra_argv);
	}
	free(sup->probes);
	sup->probes = NULL;
	sup->nprobes = 0;
}

struct gg_probe *gg_probes__find(struct gg_sup *sup, const char *name)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		if (!strcmp(sup->probes[i].conf->name, name))
			return &sup->probes[i];
	}
	return NULL;
}

unsigned int gg_probes__push_configs(struct gg_sup *sup)
{
	uint64_t now = gg_now_ms();
	unsigned int waiting = 0;

	for (unsigned int i = 0; i < sup->nprobes; i++) {
		struct gg_probe *p = &sup->probes[i];

		if (p->state != GG_PS_RUNNING || !p->conf->native || !p->cfg_json || p->cfg_applied >= p->cfg_version)
			continue;
		waiting++;
		gg_probe__offer_config(p, now);
	}
	return waiting;
}

void gg_probe__offer_config(struct gg_probe *p, uint64_t now)
{
	/* Control messages are lossy (pub/sub): re-send until the probe's batch headers confirm the
	 * version. Only once this instance has sent a batch: then its control socket is connected. */
	if (p->state != GG_PS_RUNNING || !p->conf->native || !p->cfg_json || p->cfg_applied >= p->cfg_version)
		return;
	if (!p->last_batch_ms || p->last_batch_ms < p->started_ms || now - p->cfg_last_send_ms < 200)
		return;
	if (ipc_ctrl_pub__send(p->sup->ctrl, p->conf->name, p->cfg_version, p->cfg_json, strlen(p->cfg_json)) == 0)
		p->cfg_last_send_ms = now;
}

/* ---- hung-probe watchdog --------------------------------------------------------------------------- */

#define WATCHDOG_STALL_MS 5000u /* a tick this late: the supervisor was not running, the probes may have been */

/* An event_v2 about the probe, through the same validation and channels as a probe's own events. */
static void hung_event(struct gg_probe *p, uint64_t silent_ms)
{
	struct gg_sup *sup = p->sup;
	struct meta_record rec;
	char line[512];
	int field = -1, n;

	n = snprintf(line, sizeof(line),
		     "|event_v2|probe|%s|probe_hung|ERROR|probe %s (pid %d) sent no batch or heartbeat for %llu s"
		     "|探针 %s (pid %d) %llu 秒无数据无心跳|probe=%s&pid=%d|sys|",
		     p->conf->name, p->conf->name, (int)p->pid, (unsigned long long)(silent_ms / 1000), p->conf->name,
		     (int)p->pid, (unsigned long long)(silent_ms / 1000), p->conf->name, (int)p->pid);
	if (n < 0 || (size_t)n >= sizeof(line) ||
	    meta_record__parse(sup->reg, line, (size_t)n, &rec, &field) != META_OK) {
		gg_warn("probe %s: the hung event does not validate (field %d)", p->conf->name, field + 1);
		return;
	}
	gg_export__record(sup, NULL, &rec);
}

static void watchdog_one(struct gg_probe *p, uint64_t now)
{
	const struct gg_sup *sup = p->sup;
	uint64_t limit = (uint64_t)sup->cfg.global.hung_timeout * 1000u;
	uint64_t grace = (uint64_t)sup->cfg.global.hung_grace * 1000u;
	uint64_t ref = p->started_ms;

	/* Extend probes print when they have something: silence is not a symptom there. */
	if (p->state != GG_PS_RUNNING || !p->conf->native || p->pid <= 0)
		return;
	if (p->last_batch_ms > ref)
		ref = p->last_batch_ms;
	if (sup->watch_from_ms > ref)
		ref = sup->watch_from_ms;
	if (now - ref < limit)
		return;
	if (!p->hung_since_ms) {
		p->hung_since_ms = now;
		p->hangs++;
		gg_warn("probe %s (pid %d) hung: no batch or heartbeat for %llu s; killed in %d s unless it recovers",
			p->conf->name, (int)p->pid, (unsigned long long)((now - ref) / 1000),
			sup->cfg.global.hung_grace);
		gg_probe__logf(p, "hung: no batch or heartbeat for %llu s", (unsigned long long)((now - ref) / 1000));
		hung_event(p, now - ref);
	} else if (now - p->hung_since_ms >= grace && !p->hung_kill_sent) {
		/* SIGKILL: a stopped or wedged process does not act on SIGTERM. Its exit is then an unexpected
		 * one, restarted with the usual backoff. */
		gg_warn("probe %s (pid %d) still hung after %d s: killing it", p->conf->name, (int)p->pid,
			sup->cfg.global.hung_grace);
		gg_probe__logf(p, "still hung after %d s: killed", sup->cfg.global.hung_grace);
		kill(-p->pid, SIGKILL);
		p->hung_kill_sent = 1;
	}
}

static void watchdog(struct gg_sup *sup, uint64_t now)
{
	/* After a stall of the supervisor itself (SIGSTOP, a starved host), batches wait unread in the
	 * sockets: the silence is ours, so every probe gets a fresh hung_timeout. */
	if (sup->tick_last_ms && now - sup->tick_last_ms > WATCHDOG_STALL_MS)
		sup->watch_from_ms = now;
	sup->tick_last_ms = now;
	if (!sup->cfg.global.hung_timeout)
		return;
	for (unsigned int i = 0; i < sup->nprobes; i++)
		watchdog_one(&sup->probes[i], now);
}

/* A batch from p (ingest.c): a hung probe that speaks again has recovered. */
static void batch_seen(struct gg_probe *p, uint64_t now)
{
	if (p->hung_since_ms && !p->hung_kill_sent) {
		gg_info("probe %s recovered after %llu ms hung", p->conf->name,
			(unsigned long long)(now - p->hung_since_ms));
		gg_probe__logf(p, "recovered after %llu ms hung", (unsigned long long)(now - p->hung_since_ms));
		p->hung_since_ms = 0;
	}
	gg_probe__offer_config(p, now);
}

void gg_probes__tick(struct gg_sup *sup)
{
	watchdog(sup, gg_now_ms());
	(void)gg_probes__push_configs(sup);
}

/* ---- run-time control (REST API) ------------------------------------------------------------------- */

static void on_timer_fresh(uv_timer_t *t)
{
	struct gg_probe *p = t->data;

	if (p->state == GG_PS_BACKOFF)
		fresh_start(p);
}

/* A start asked for (not a restart after a crash): once the previous process's handles are closed. */
static void fresh_start(struct gg_probe *p)
{
	uv_timer_stop(&p->timer);
	if (p->proc_open || p->out_open || p->err_open) {
		p->state = GG_PS_BACKOFF;
		uv_timer_start(&p->timer, on_timer_fresh, 20, 0);
		return;
	}
	if (p->conf->check_cmd[0])
		check_start(p);
	else
		probe_start(p);
}

int gg_probe__active(const struct gg_probe *p)
{
	return p->state == GG_PS_RUNNING || p->state == GG_PS_CHECKING || p->state == GG_PS_CHECK_WAIT ||
	       p->state == GG_PS_BACKOFF;
}

void gg_probe__start(struct gg_probe *p)
{
	if (p->sup->stopping)
		return;
	p->backoff_ms = GG_BACKOFF_MIN_MS;
	switch (p->state) {
	case GG_PS_STOPPING:
		p->start_after_stop = 1;
		break;
	case GG_PS_STOPPED:
	case GG_PS_BACKOFF:
	case GG_PS_CHECK_WAIT:
		gg_probe__logf(p, "start requested");
		fresh_start(p);
		break;
	default:
		break; /* running or checking already */
	}
}

void gg_probe__stop(struct gg_probe *p)
{
	p->start_after_stop = 0;
	switch (p->state) {
	case GG_PS_RUNNING:
		uv_timer_stop(&p->timer);
		gg_probe__logf(p, "stop requested");
		p->state = GG_PS_STOPPING;
		if (p->pid > 0)
			kill(-p->pid, SIGTERM);
		uv_timer_start(&p->timer, on_stop_grace, (uint64_t)p->sup->cfg.global.stop_grace_ms, 0);
		break;
	case GG_PS_CHECKING:
		if (p->check_proc.pid > 0)
			kill(-p->check_proc.pid, SIGKILL);
		/* fall through */
	case GG_PS_CHECK_WAIT:
	case GG_PS_BACKOFF:
		uv_timer_stop(&p->timer);
		p->state = GG_PS_STOPPED;
		break;
	default:
		break;
	}
}

void gg_probe__restart(struct gg_probe *p)
{
	if (p->state == GG_PS_RUNNING) {
		gg_probe__stop(p);
		p->start_after_stop = 1;
	} else if (p->state == GG_PS_STOPPING) {
		p->start_after_stop = 1;
	}
	/* otherwise the next start uses the new flags anyway */
}

void gg_probe__set_config(struct gg_probe *p, char *json)
{
	uint64_t now = gg_now_ms();

	free(p->cfg_json);
	p->cfg_json = json;
	p->cfg_version++;
	p->cfg_last_send_ms = 0;
	/* Connected (it has sent since it started): send now rather than at the next tick. */
	if (json && p->state == GG_PS_RUNNING && p->conf->native && p->last_batch_ms &&
	    p->last_batch_ms >= p->started_ms &&
	    ipc_ctrl_pub__send(p->sup->ctrl, p->conf->name, p->cfg_version, json, strlen(json)) == 0)
		p->cfg_last_send_ms = now;
}
