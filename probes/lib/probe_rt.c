/* probe_rt.c - a probe's runtime: records to stdout or to the supervisor, live config, stop requests. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define HEARTBEAT_MS	   900u /* "at least every second", with room for timer slack */
#define TICK_MIN_MS	   10
#define LOG_INVALID_MAX	   10u /* invalid records logged one by one; the rest are only counted */
#define LOG_TRANSPORT_MAX  10u
#define CTRL_MSGS_PER_WAKE 16u /* bound the work done per wake-up on a flood of updates */
#define STDOUT_BUF_SIZE	   (256u * 1024u)

/* One per process: the state a probe's main loop runs on. */
struct probe_rt {
	char name[IPC_PROBE_NAME_MAX];
	probe_config_cb on_config;
	void *cb_ctx;
	struct ipc_pub *pub;	   /* NULL when standalone (stdout) */
	struct ipc_ctrl_sub *ctrl; /* NULL without GALA_GOPHER_CTRL_URL */
	int wake_rd, wake_wr;	   /* self-pipe: signal handlers and probe_rt__wake */
	int watch_fd;		   /* probe_rt__watch_fd, or -1 */
	int watch_ready;	   /* watch_fd was readable: run_ticking ticks at once */
	int stop;
	uint64_t emitted;
	uint64_t invalid;
	uint64_t transport_errors;
	uint64_t last_hb_ms;
	uint64_t config_version;
	struct sigaction old_term, old_int;
};

/* Signal handlers can only reach globals. */
static volatile sig_atomic_t g_stop_requested;
static volatile int g_wake_fd = -1;

/* Records leave through stdio; a static buffer outlives the runtime, as stdout does. */
static char g_stdout_buf[STDOUT_BUF_SIZE];

static void on_stop_signal(int sig)
{
	int saved = errno;

	(void)sig;
	g_stop_requested = 1;
	if (g_wake_fd >= 0)
		(void)!write(g_wake_fd, "s", 1);
	errno = saved;
}

static int install_signals(struct probe_rt *rt)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGTERM, &sa, &rt->old_term) < 0 || sigaction(SIGINT, &sa, &rt->old_int) < 0)
		return -errno;
	return 0;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

struct probe_rt *probe_rt__new(const struct probe_rt_opts *opts)
{
	const char *data_url = env_nonempty("GALA_GOPHER_DATA_URL");
	const char *ctrl_url = env_nonempty("GALA_GOPHER_CTRL_URL");
	const char *name = env_nonempty("GALA_GOPHER_PROBE_NAME");
	struct probe_rt *rt;
	int fds[2], err;

	if (!opts || !opts->name || !opts->name[0]) {
		errno = EINVAL;
		return NULL;
	}
	if (!name)
		name = opts->name;
	if (strlen(name) >= IPC_PROBE_NAME_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	rt->wake_rd = rt->wake_wr = -1;
	rt->watch_fd = -1;
	snprintf(rt->name, sizeof(rt->name), "%s", name);
	rt->on_config = opts->on_config;
	rt->cb_ctx = opts->cb_ctx;
	probe_log_setup(rt->name, opts->log_level);

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		err = -errno;
		goto err_out;
	}
	rt->wake_rd = fds[0];
	rt->wake_wr = fds[1];

	if (data_url) {
		struct ipc_pub_opts po = {.url = data_url, .probe_name = rt->name};

		/* Second line of defence: the supervisor's spawn path asks for this too. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			probe_log(PLOG_WARN, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
		rt->pub = ipc_pub__new(&po);
		if (!rt->pub) {
			err = -errno;
			probe_log(PLOG_ERROR, "cannot publish to %s: %s", data_url, strerror(-err));
			goto err_out;
		}
	} else {
		setvbuf(stdout, g_stdout_buf, _IOFBF, sizeof(g_stdout_buf));
	}
	if (ctrl_url) {
		rt->ctrl = ipc_ctrl_sub__new(ctrl_url, rt->name);
		if (!rt->ctrl) {
			err = -errno;
			probe_log(PLOG_ERROR, "cannot subscribe to control %s: %s", ctrl_url, strerror(-err));
			goto err_out;
		}
	}

	g_stop_requested = 0;
	g_wake_fd = rt->wake_wr;
	err = install_signals(rt);
	if (err) {
		g_wake_fd = -1;
		goto err_out;
	}
	rt->last_hb_ms = probe_now_mono_ms();
	probe_log(PLOG_DEBUG, "runtime up: records %s%s, configuration updates %s%s", data_url ? "to " : "on stdout",
		  data_url ? data_url : "", ctrl_url ? "from " : "off", ctrl_url ? ctrl_url : "");
	return rt;

err_out:
	ipc_ctrl_sub__free(rt->ctrl);
	ipc_pub__free(rt->pub);
	if (rt->wake_rd >= 0)
		close(rt->wake_rd);
	if (rt->wake_wr >= 0)
		close(rt->wake_wr);
	free(rt);
	errno = -err;
	return NULL;
}

static int send_line(struct probe_rt *rt, const char *line, size_t len)
{
	int err = 0;

	if (rt->pub) {
		err = ipc_pub__append(rt->pub, line, len);
	} else if (fwrite_unlocked(line, 1, len, stdout) != len || putc_unlocked('\n', stdout) == EOF) {
		err = -EIO;
	}
	if (err) {
		if (rt->transport_errors++ < LOG_TRANSPORT_MAX)
			probe_log(PLOG_WARN, "cannot send record: %s", strerror(-err));
		return err;
	}
	rt->emitted++;
	return 0;
}

int probe_rt__emit(struct probe_rt *rt, struct probe_rec *r)
{
	int err = probe_rec__finish(r);

	if (err) {
		rt->invalid++;
		if (rt->invalid <= LOG_INVALID_MAX) {
			const char *table = r->table && r->table->name ? r->table->name : "?";

			probe_log(PLOG_WARN, "invalid record for table %s at field %u: %s%s", table, r->next,
				  strerror(-err),
				  rt->invalid == LOG_INVALID_MAX ? " (further invalid records are only counted)" : "");
		}
		return err;
	}
	return send_line(rt, r->buf, r->len);
}

int probe_rt__emit_line(struct probe_rt *rt, const char *line, size_t len)
{
	if (!line || !len || len > IPC_RECORD_MAX_LEN || memchr(line, '\n', len))
		return -EINVAL;
	return send_line(rt, line, len);
}

int probe_rt__flush(struct probe_rt *rt)
{
	int err = 0;

	if (rt->pub) {
		err = ipc_pub__flush(rt->pub, 0);
	} else if (fflush(stdout) == EOF) {
		err = -errno;
	}
	return err;
}

static void heartbeat(struct probe_rt *rt, uint64_t now)
{
	int err;

	rt->last_hb_ms = now;
	if (!rt->pub)
		return;
	err = ipc_pub__flush(rt->pub, 1);
	if (err && rt->transport_errors++ < LOG_TRANSPORT_MAX)
		probe_log(PLOG_WARN, "cannot send heartbeat: %s", strerror(-err));
}

/* One control message: JSON text -> struct gg_ctrl_msg (once, here) -> the probe's callback. */
static int decode_and_apply(struct probe_rt *rt, uint64_t version, const char *json)
{
	static struct gg_ctrl_msg msg; /* large (the scope sets): not on the stack; one caller at a time */
	char err[160];
	int ret;

	if (!rt->on_config)
		return -EOPNOTSUPP;
	ret = gg_ctrl_msg__decode(json, &msg, err, sizeof(err));
	if (ret)
		probe_log(PLOG_WARN, "configuration version %llu: %s", (unsigned long long)version, err);
	else
		ret = rt->on_config(rt->cb_ctx, version, &msg);
	gg_ctrl_msg__fini(&msg);
	return ret;
}

static void serve_ctrl(struct probe_rt *rt)
{
	for (unsigned int i = 0; i < CTRL_MSGS_PER_WAKE; i++) {
		uint64_t version = 0;
		char *json = NULL;
		int ret = ipc_ctrl_sub__recv(rt->ctrl, &version, &json);

		if (ret == 0)
			return;
		if (ret < 0) {
			probe_log(PLOG_WARN, "bad control message: %s", strerror(-ret));
			return;
		}
		ret = decode_and_apply(rt, version, json);
		if (ret == 0) {
			rt->config_version = version;
			probe_log(PLOG_INFO, "applied configuration version %llu", (unsigned long long)version);
			if (rt->pub) {
				ipc_pub__set_config_version(rt->pub, version);
				heartbeat(rt, probe_now_mono_ms());
			}
		} else {
			probe_log(PLOG_WARN, "configuration version %llu not applied: %s", (unsigned long long)version,
				  strerror(-ret));
		}
		free(json);
	}
}

static void drain_wake(struct probe_rt *rt)
{
	char buf[64];

	while (read(rt->wake_rd, buf, sizeof(buf)) > 0)
		;
}

int probe_rt__wait(struct probe_rt *rt, unsigned int ms)
{
	uint64_t now = probe_now_mono_ms();
	uint64_t deadline = now + ms;

	for (;;) {
		struct pollfd pfd[3];
		uint64_t next = deadline;
		nfds_t n = 1, ctrl_i = 0, watch_i = 0;
		int ret;

		if (probe_rt__stopping(rt))
			return 1;
		if (rt->pub) {
			int tick_ms;

			if (now - rt->last_hb_ms >= HEARTBEAT_MS)
				heartbeat(rt, now);
			(void)ipc_pub__tick(rt->pub);
			if (rt->last_hb_ms + HEARTBEAT_MS < next)
				next = rt->last_hb_ms + HEARTBEAT_MS;
			/* We just ticked: a 0 here means it cannot make progress (no subscriber yet); do not spin. */
			tick_ms = ipc_pub__timeout_ms(rt->pub);
			if (tick_ms >= 0 && tick_ms < TICK_MIN_MS)
				tick_ms = TICK_MIN_MS;
			if (tick_ms >= 0 && now + (uint64_t)tick_ms < next)
				next = now + (uint64_t)tick_ms;
		}
		if (now >= deadline)
			return 0;

		pfd[0] = (struct pollfd){.fd = rt->wake_rd, .events = POLLIN};
		if (rt->ctrl) {
			pfd[n] = (struct pollfd){.fd = ipc_ctrl_sub__fd(rt->ctrl), .events = POLLIN};
			ctrl_i = n++;
		}
		if (rt->watch_fd >= 0) {
			pfd[n] = (struct pollfd){.fd = rt->watch_fd, .events = POLLIN};
			watch_i = n++;
		}
		ret = poll(pfd, n, next > now ? (int)(next - now) : 0);
		if (ret < 0 && errno != EINTR) {
			probe_log(PLOG_ERROR, "poll: %s", strerror(errno));
			return probe_rt__stopping(rt);
		}
		if (ret > 0 && ctrl_i && (pfd[ctrl_i].revents & (POLLIN | POLLERR | POLLHUP)))
			serve_ctrl(rt);
		if (ret > 0 && (pfd[0].revents & POLLIN)) {
			drain_wake(rt);
			if (!probe_rt__stopping(rt))
				return 0; /* woken on purpose: let the caller look at its state again */
		}
		if (ret > 0 && watch_i && (pfd[watch_i].revents & (POLLIN | POLLERR | POLLHUP))) {
			rt->watch_ready = 1;
			return probe_rt__stopping(rt);
		}
		now = probe_now_mono_ms();
	}
}

void probe_rt__run_periodic(struct probe_rt *rt, const unsigned int *period_s, void (*report)(void *arg), void *arg)
{
	const struct probe_loop l = {.period_s = period_s, .report = report, .arg = arg};

	probe_rt__run(rt, &l);
}

void probe_rt__run_ticking(struct probe_rt *rt, const unsigned int *period_s, void (*report)(void *arg),
			   unsigned int (*tick)(void *arg), void *arg)
{
	const struct probe_loop l = {.period_s = period_s, .report = report, .tick = tick, .arg = arg};

	probe_rt__run(rt, &l);
}

void probe_rt__run(struct probe_rt *rt, const struct probe_loop *l)
{
	uint64_t start = probe_now_mono_ms(), last = start;
	uint64_t next_tick = l->tick ? last + l->tick(l->arg) : UINT64_MAX;
	uint64_t hold_until = l->configured && probe_rt__supervised(rt) ? start + l->first_wait_ms : 0;

	while (!probe_rt__stopping(rt)) {
		uint64_t now = probe_now_mono_ms();
		uint64_t period_ms = l->period_s ? (uint64_t)*l->period_s * 1000u : UINT64_MAX - last;
		uint64_t next = last + period_ms;

		if (l->apply)
			l->apply(l->arg);
		/* The first report waits for the scope the first live configuration brings. */
		if (hold_until && !*l->configured && now < hold_until && next < hold_until)
			next = hold_until;
		if (l->tick && (rt->watch_ready || now >= next_tick) && now < next) {
			rt->watch_ready = 0;
			next_tick = now + l->tick(l->arg);
			continue;
		}
		if (now < next) {
			uint64_t until = next_tick < next ? next_tick : next;

			if (probe_rt__wait(rt, (unsigned int)(until - now)))
				break;
			continue;
		}
		l->report(l->arg);
		last = now - next < period_ms ? next : now;
	}
}

void probe_rt__watch_fd(struct probe_rt *rt, int fd)
{
	if (!rt)
		return;
	rt->watch_fd = fd;
	rt->watch_ready = 0;
}

int probe_rt__wait_first_config(struct probe_rt *rt, const int *seen, unsigned int ms)
{
	uint64_t until = probe_now_mono_ms() + ms;

	if (!probe_rt__supervised(rt))
		return 0;
	for (uint64_t now = probe_now_mono_ms(); !*seen && now < until; now = probe_now_mono_ms())
		if (probe_rt__wait(rt, (unsigned int)(until - now)))
			return 1;
	return 0;
}

void probe_rt__wake(struct probe_rt *rt)
{
	int saved = errno;

	if (rt && rt->wake_wr >= 0)
		(void)!write(rt->wake_wr, "w", 1);
	errno = saved;
}

void probe_rt__stop(struct probe_rt *rt)
{
	if (!rt)
		return;
	rt->stop = 1;
	probe_rt__wake(rt);
}

int probe_rt__stopping(const struct probe_rt *rt)
{
	return g_stop_requested || (rt && rt->stop);
}

const char *probe_rt__name(const struct probe_rt *rt)
{
	return rt->name;
}

int probe_rt__supervised(const struct probe_rt *rt)
{
	return rt->pub != NULL;
}

uint64_t probe_rt__records_emitted(const struct probe_rt *rt)
{
	return rt->emitted;
}

uint64_t probe_rt__records_invalid(const struct probe_rt *rt)
{
	return rt->invalid;
}

struct probe_rt *probe_rt__start(struct probe_rt_opts *opts, enum probe_log_level level)
{
	struct probe_rt *rt;

	opts->log_level = level;
	rt = probe_rt__new(opts);
	if (!rt)
		probe_log(PLOG_ERROR, "cannot set up the probe runtime: %s", strerror(errno));
	return rt;
}

void probe_rt__free(struct probe_rt *rt)
{
	if (!rt)
		return;
	(void)probe_rt__flush(rt);
	sigaction(SIGTERM, &rt->old_term, NULL);
	sigaction(SIGINT, &rt->old_int, NULL);
	g_wake_fd = -1;
	probe_log(PLOG_DEBUG, "runtime down: %llu records emitted, %llu invalid", (unsigned long long)rt->emitted,
		  (unsigned long long)rt->invalid);
	ipc_ctrl_sub__free(rt->ctrl);
	if (rt->pub) {
		/* The tail batch is the one loss the supervisor cannot see (no later seq reveals it): wait
		 * for it to leave, bounded, and say so when it did not. */
		int err = ipc_pub__drain(rt->pub, 2000);

		if (err)
			probe_log(PLOG_WARN, "last batches may not have reached the supervisor: %s", strerror(-err));
	}
	ipc_pub__free(rt->pub);
	close(rt->wake_rd);
	close(rt->wake_wr);
	free(rt);
}
