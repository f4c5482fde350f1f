#!/usr/bin/env python3
"""mkdashboards.py - writes gala-gopher's Grafana dashboards (agent, host, tcp, io, proc, l7, profiling) as JSON
next to this script. The JSON files are what gets installed and imported; edit this script and re-run
it (`python3 scripts/deploy/grafana/mkdashboards.py`), or edit a dashboard in Grafana and export it.

Every dashboard takes a Prometheus data source and a host (the `hostname` label every probe series
carries; the agent's own series are chosen by `instance`). Tables that share a field name share a
family only when their label sets are the same (the schema loader refuses anything else), so every
family here is one table's meaning.

Each dashboard is a table (AGENT, HOST, ...) that build() lays out: rows R, text T and panels P whose
PromQL says "@" where the row's (else the board's) label selector goes."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DS = {"type": "prometheus", "uid": "${datasource}"}
H = 'hostname=~"$hostname"'


def rate_sum(by, metric):
    """The per-second rate of a counter family over 5 minutes, summed by the labels `by`."""
    return "sum by (%s) (rate(%s{@}[5m]))" % (by, metric)


def ratio(by, num, den):
    """The rate of one counter family over another's, both summed by the labels `by`."""
    return "%s / %s" % (rate_sum(by, num), rate_sum(by, den))


def quantile(q, by, metric):
    """The q quantile (a string: "0.99") of a histogram family over 5 minutes, per the labels `by`."""
    return "histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket{@}[5m])))" % (q, by, metric)


def quantiles(by, metric, legend, qs=("0.5", "0.99")):
    """One target per quantile in qs, its legend ending " p50", " p99"..."""
    return [(quantile(q, by, metric), "%s p%d" % (legend, int(float(q) * 100))) for q in qs]


def each(expr, legend, names):
    """One target per name, put in place of the %s of both the PromQL and the legend."""
    return [(expr % n, legend % n) for n in names]


def var_datasource():
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
        "options": [],
    }


def var_query(name, label, query, multi=True):
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        "definition": query,
        "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "refresh": 2,
        "multi": multi,
        "includeAll": multi,
        "current": {},
        "sort": 1,
        "hide": 0,
        "options": [],
    }


class Board:
    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description = uid, title, description
        self.variables = [var_datasource()] + variables
        self.panels = []
        self.x = self.y = 0
        self.row_h = 0

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.x, self.row_h = 0, 0
        self.panels.append(
            {
                "type": "row",
                "title": title,
                "collapsed": False,
                "panels": [],
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "id": len(self.panels) + 1,
            }
        )
        self.y += 1

    def _place(self, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += self.row_h
            self.row_h = 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def panel(
        self, title, targets, unit="short", kind="timeseries", w=12, h=8, description="", stack=False, options=None
    ):
        p = {
            "type": kind,
            "title": title,
            "description": description,
            "datasource": DS,
            "gridPos": self._place(w, h),
            "id": len(self.panels) + 1,
            "targets": [
                {
                    "datasource": DS,
                    "expr": e,
                    "legendFormat": l,
                    "refId": chr(ord("A") + i),
                    **({"instant": True, "format": "table"} if kind in ("table", "bargauge") else {}),
                }
                for i, (e, l) in enumerate(targets)
            ],
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        }
        if kind == "timeseries":
            p["fieldConfig"]["defaults"]["custom"] = {
                "drawStyle": "line",
                "lineWidth": 1,
                "fillOpacity": 10,
                "showPoints": "never",
                "stacking": {"mode": "normal" if stack else "none"},
            }
            p["options"] = {
                "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]},
                "tooltip": {"mode": "multi", "sort": "desc"},
            }
        if options:
            p["options"] = options
        self.panels.append(p)
        return p

    def text(self, title, content, w=24, h=5):
        self.panels.append(
            {
                "type": "text",
                "title": title,
                "gridPos": self._place(w, h),
                "id": len(self.panels) + 1,
                "options": {"mode": "markdown", "content": content},
            }
        )

    def json(self):
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["gala-gopher"],
            "timezone": "browser",
            "editable": True,
            "graphTooltip": 1,
            "schemaVersion": 38,
            "version": 1,
            "refresh": "30s",
            "time": {"from": "now-1h", "to": "now"},
            "time_options": [],
            "templating": {"list": self.variables},
            "annotations": {"list": []},
            "links": [{"type": "dashboards", "tags": ["gala-gopher"], "title": "gala-gopher", "asDropdown": True}],
            "panels": self.panels,
        }


def host_var():
    return var_query("hostname", "Host", "label_values(gala_gopher_cpu_total_used_per, hostname)")


def label_var(name, label, metric, label_name=None):
    """A variable choosing among the values of one label of a metric on the chosen hosts."""
    return var_query(name, label, "label_values(%s{%s}, %s)" % (metric, H, label_name or name))


def R(title, sel=None):
    """A row of a board's table; its panels' "@" stand for sel (the board's selector when None)."""
    return ("row", title, sel)


def T(title, content, h):
    """A markdown text panel in a board's table."""
    return ("text", title, content, h)


def P(title, *targets, **options):
    """A panel in a board's table: its title, its (PromQL, legend) targets or lists of them, Board.panel's options."""
    flat = []
    for t in targets:
        flat.extend(t if isinstance(t, list) else [t])
    return ("panel", title, flat, options)


def build(spec):
    """The Board a spec (uid, title, description, selector, variables, table) describes: its rows, text and
    panels in order, every "@" of a target's PromQL replaced by the selector in force (the row's, else the
    board's)."""
    uid, title, description, board_sel, variables, table = spec
    b = Board(uid, title, description, variables)
    sel = board_sel
    for item in table:
        if item[0] == "row":
            b.row(item[1])
            sel = item[2] or board_sel
        elif item[0] == "text":
            b.text(item[1], item[2], h=item[3])
        else:
            b.panel(item[1], [(e.replace("@", sel), l) for e, l in item[2]], **item[3])
    return b


IP = "{{instance}} {{probe}}"
AGENT = ("gala-gopher-agent", "gala-gopher / Agent", "The agent's own health: probes, records, imdb, exporters.",
         'instance=~"$instance"', [var_query("instance", "Agent", "label_values(gala_gopher_build_info, instance)")], [
    R("Probes"),
    P("Probes running", ("gala_gopher_probe_up{@}", IP), kind="table", w=8,
      description="1 while the probe process runs"),
    P("Restarts (1h)", ("increase(gala_gopher_probe_restarts_total{@}[1h])", IP), w=8,
      description="restarts after an unexpected exit; the probe's log says why"),
    P("Live configuration not yet applied",
      ("gala_gopher_probe_config_version{@} - gala_gopher_probe_config_version_applied{@}", IP), w=8,
      description="versions sent but not confirmed by the probe"),
    P("Records accepted /s", (rate_sum("instance, probe", "gala_gopher_probe_records_accepted_total"), IP),
      unit="ops", stack=True),
    P("Records rejected /s by reason",
      (rate_sum("instance, probe, reason", "gala_gopher_probe_records_rejected_total"), IP + " {{reason}}"),
      unit="ops"),
    P("Records lost on IPC /s",
      each(rate_sum("instance, probe", "gala_gopher_ipc_lost_%s_total"), IP + " %s", ("records", "batches")),
      unit="ops"),
    P("BPF run time per probe", ("rate(gala_gopher_probe_bpf_run_time_seconds_total{@}[5m])", IP),
      unit="percentunit",
      description="share of one CPU spent in the probe's BPF programs (needs kernel.bpf_stats_enabled=1)"),
    R("Supervisor"),
    P("Supervisor CPU", (rate_sum("instance, mode", "gala_gopher_sup_cpu_seconds_total"), "{{instance}} {{mode}}"),
      unit="percentunit", w=8, stack=True),
    P("Supervisor resident memory", ("gala_gopher_sup_resident_memory_bytes{@}", "{{instance}}"), unit="bytes",
      w=8),
    P("/metrics render time", ("gala_gopher_sup_scrape_duration_seconds{@}", "{{instance}}"), unit="s", w=8),
    P("Series per scrape", ("gala_gopher_sup_scrape_series{@}", "{{instance}}"), w=8),
    P("Bad and unknown batches /s", ("rate(gala_gopher_sup_bad_batches_total{@}[5m])", "{{instance}} bad"),
      ("rate(gala_gopher_sup_unknown_probe_batches_total{@}[5m])", "{{instance}} unknown probe"),
      unit="ops", w=8),
    P("Exported /s by stream",
      (rate_sum("instance, stream", "gala_gopher_export_records_total"), "{{instance}} {{stream}}"),
      unit="ops", w=8),
    R("imdb"),
    P("imdb memory", ("gala_gopher_imdb_memory_bytes{@}", "{{instance}} used"),
      ("gala_gopher_imdb_memory_limit_bytes{@}", "{{instance}} limit"), unit="bytes", w=8),
    P("Series per table", ("topk(15, gala_gopher_imdb_series{@})", "{{instance}} {{table}}"), w=8),
    P("Rows dropped /s",
      (rate_sum("instance, table, reason", "gala_gopher_imdb_dropped_records_total"),
       "{{instance}} {{table}} {{reason}}"),
      (rate_sum("instance, table", "gala_gopher_imdb_expired_records_total"), "{{instance}} {{table}} expired"),
      unit="ops", w=8),
    R("Kafka, logs, events"),
    P("Kafka producer queue", ("gala_gopher_kafka_queue_messages{@}", "{{instance}}"), w=8),
    P("Kafka messages /s",
      each(rate_sum("instance, topic", "gala_gopher_kafka_messages_%s_total"), "{{instance}} {{topic}} %s",
           ("produced", "delivered")),
      (rate_sum("instance, topic, reason", "gala_gopher_kafka_messages_dropped_total"),
       "{{instance}} {{topic}} dropped {{reason}}"),
      (rate_sum("instance, topic", "gala_gopher_kafka_delivery_errors_total"), "{{instance}} {{topic}} failed"),
      unit="ops", w=8),
    P("Log lines and write errors /s",
      (rate_sum("instance, stream", "gala_gopher_logs_lines_total"), "{{instance}} {{stream}} lines"),
      (rate_sum("instance, stream", "gala_gopher_logs_write_errors_total"), "{{instance}} {{stream}} errors"),
      unit="ops", w=8),
    P("Events /s by result", (rate_sum("instance, result", "gala_gopher_events_total"), "{{instance}} {{result}}"),
      unit="ops"),
    P("Kafka client errors /s", ("rate(gala_gopher_kafka_client_errors_total{@}[5m])", "{{instance}}"),
      unit="ops"),
])

HOST = ("gala-gopher-host", "gala-gopher / Host", "CPU, memory, disks, file systems, network (system_infos).", H,
        [host_var()], [
    R("CPU and memory"),
    P("CPU busy", ("gala_gopher_cpu_total_used_per{@}", "{{hostname}}"), unit="percent", w=8),
    P("CPU time by mode",
      each(rate_sum("hostname", "gala_gopher_cpu_%s_total_second"), "{{hostname}} %s",
           ("user", "nice", "system", "iowait", "irq", "softirq", "steal")),
      w=8, stack=True, description="CPUs' worth of time per second"),
    P("Per-CPU busy", ("gala_gopher_cpu_util_per{@}", "{{hostname}} cpu{{cpu}}"), unit="percent", w=8),
    P("Memory in use", ("gala_gopher_mem_util{@}", "{{hostname}} memory"),
      ("gala_gopher_mem_swap_util{@}", "{{hostname}} swap"), unit="percent", w=8),
    P("Memory",
      each("gala_gopher_mem_%s_kB{@} * 1024", "{{hostname}} %s",
           ("total", "available", "cache", "buffers", "slab", "shmem")),
      unit="bytes", w=8),
    P("Softirqs /s",
      each(rate_sum("hostname", "gala_gopher_cpu_%s"), "{{hostname}} %s", ("net_rx", "timer", "sched", "rcu")),
      unit="ops", w=8),
    R("Disks and file systems"),
    P("Disk utilisation", ("gala_gopher_disk_util{@}", "{{hostname}} {{disk_name}}"), unit="percent", w=8),
    P("Disk await", ("gala_gopher_disk_r_await{@}", "{{hostname}} {{disk_name}} read"),
      ("gala_gopher_disk_w_await{@}", "{{hostname}} {{disk_name}} write"), unit="ms", w=8),
    P("Disk throughput", ("gala_gopher_disk_rspeed_kB{@} * 1024", "{{hostname}} {{disk_name}} read"),
      ("gala_gopher_disk_wspeed_kB{@} * 1024", "{{hostname}} {{disk_name}} write"), unit="Bps", w=8),
    P("Disk IOPS and queue", ("gala_gopher_disk_rspeed{@}", "{{hostname}} {{disk_name}} reads/s"),
      ("gala_gopher_disk_wspeed{@}", "{{hostname}} {{disk_name}} writes/s"),
      ("gala_gopher_disk_aqu{@}", "{{hostname}} {{disk_name}} queue"), w=8),
    P("File systems", ("gala_gopher_file_system_UsePer{@}", "space"),
      ("gala_gopher_file_system_IUsePer{@}", "inodes"), unit="percent", kind="table", w=16),
    R("Network"),
    P("NIC throughput", ("gala_gopher_nic_rxspeed_KB{@} * 1024", "{{hostname}} {{dev_name}} rx"),
      ("gala_gopher_nic_txspeed_KB{@} * 1024", "{{hostname}} {{dev_name}} tx"), unit="Bps", w=8),
    P("NIC drops and errors /s",
      each("rate(gala_gopher_nic_%s{@}[5m])", "{{hostname}} {{dev_name}} %s",
           ("rx_dropped", "tx_dropped", "rx_errs", "tx_errs")),
      (rate_sum("hostname", "gala_gopher_cpu_backlog_drops"), "{{hostname}} softnet backlog"), unit="pps", w=8),
    P("TCP", ("gala_gopher_system_tcp_curr_estab{@}", "{{hostname}} established"),
      ("rate(gala_gopher_system_tcp_active_opens{@}[5m])", "{{hostname}} connects/s"),
      ("rate(gala_gopher_system_tcp_passive_opens{@}[5m])", "{{hostname}} accepts/s"),
      ("rate(gala_gopher_system_tcp_attempt_fails{@}[5m])", "{{hostname}} failed connects/s"), w=8),
    P("TCP retransmitted segments", ("gala_gopher_system_tcp_retrans_per{@}", "{{hostname}}"), unit="percent",
      w=8),
    P("TCP resets and errors /s",
      each("rate(gala_gopher_system_tcp_%s{@}[5m])", "{{hostname}} %s", ("estab_resets", "out_rsts", "in_errs")),
      unit="ops", w=8),
    P("UDP /s",
      each("rate(gala_gopher_system_udp_%s{@}[5m])", "{{hostname}} %s",
           ("indata_grams", "outdata_grams", "no_ports", "in_errors", "rcvbuf_errors", "sndbuf_errors")),
      unit="ops", w=8),
])

HC = "hostname, comm"
EP = "{{hostname}} {{comm}} {{s_addr}}:{{s_port}}"
TCP = ("gala-gopher-tcp", "gala-gopher / TCP and sockets",
       "Per-process TCP links (tcpprobe) and listening, connecting and UDP sockets (endpoint).",
       '%s, comm=~"$comm"' % H, [host_var(), label_var("comm", "Process", "gala_gopher_tcp_link_links_active")], [
    R("Links"),
    P("Bytes /s by process",
      each(rate_sum(HC, "gala_gopher_tcp_link_%s_bytes"), "{{hostname}} {{comm}} %s", ("rx", "tx")), unit="Bps"),
    P("Open links and connections /s",
      ("sum by (hostname, comm, role) (gala_gopher_tcp_link_links_active{@})",
       "{{hostname}} {{comm}} role={{role}} open"),
      (rate_sum(HC, "gala_gopher_tcp_link_links_opened"), "{{hostname}} {{comm}} opened/s"),
      (rate_sum(HC, "gala_gopher_tcp_link_connect_failed"), "{{hostname}} {{comm}} failed connects/s")),
    P("Smoothed RTT p50 / p99", quantiles(HC, "gala_gopher_tcp_link_srtt_hist", "{{hostname}} {{comm}}"),
      unit="µs"),
    P("Handshake RTT and link lifetime p99",
      (quantile("0.99", HC, "gala_gopher_tcp_link_syn_srtt_hist"), "{{hostname}} {{comm}} handshake (µs)"),
      (quantile("0.99", HC, "gala_gopher_tcp_link_lifetime"), "{{hostname}} {{comm}} lifetime (ms)")),
    R("Loss and pressure"),
    P("Retransmits and drops /s",
      each(rate_sum(HC, "gala_gopher_tcp_link_%s"), "{{hostname}} {{comm}} %s",
           ("retran_packets", "syn_retrans", "sk_drops", "backlog_drops", "rmem_drops")),
      unit="pps"),
    P("Resets /s",
      each(rate_sum(HC, "gala_gopher_tcp_link_%s"), "{{hostname}} {{comm}} %s", ("send_rsts", "receive_rsts")),
      unit="ops"),
    P("Zero windows /s",
      each(rate_sum(HC, "gala_gopher_tcp_link_%s"), "{{hostname}} {{comm}} %s",
           ("zero_snd_wnd_count", "zero_rcv_wnd_count")),
      unit="ops"),
    P("Socket queues",
      each("sum by (hostname, comm) (gala_gopher_tcp_link_%s{@})", "{{hostname}} {{comm}} %s",
           ("sk_rcv_que_size", "sk_wri_que_size", "notsent_bytes")),
      unit="bytes"),
    R("Sockets (endpoint)", sel=H),
    P("Listen drops /s",
      each(rate_sum("hostname, comm, s_addr, s_port", "gala_gopher_endpoint_%s"), EP + " %s",
           ("listendrop", "accept_overflow", "syn_overflow")),
      unit="ops"),
    P("Accept queue", ("gala_gopher_endpoint_accept_queue{@}", EP),
      ("gala_gopher_endpoint_accept_queue_max{@}", EP + " max")),
    P("Connect latency p99",
      (quantile("0.99", "hostname, comm, s_addr, s_port", "gala_gopher_endpoint_connect_latency"),
       "{{hostname}} {{comm}} -> {{s_addr}}:{{s_port}}"),
      unit="µs"),
    P("Accepted handshake RTT p99",
      (quantile("0.99", "hostname, comm, s_port", "gala_gopher_endpoint_handshake_rtt"),
       "{{hostname}} {{comm}} :{{s_port}}"),
      unit="µs"),
    P("Failed connects /s",
      (rate_sum("hostname, comm, s_addr, s_port", "gala_gopher_endpoint_active_open_failed"),
       "{{hostname}} {{comm}} -> {{s_addr}}:{{s_port}}"),
      unit="ops"),
    P("Kernel packet drops /s by reason",
      (rate_sum("hostname, protocol, reason", "gala_gopher_endpoint_drops"), "{{hostname}} {{protocol}} {{reason}}"),
      unit="pps"),
    P("UDP sockets /s",
      each(rate_sum("hostname, comm, s_port", "gala_gopher_endpoint_%s"), "{{hostname}} {{comm}} :{{s_port}} %s",
           ("udp_rcv_drops", "sk_drops")),
      unit="pps", description="udp_socket sub-probe (off by default)"),
])

DRW = "{{hostname}} {{disk_name}} {{rw}}"
IO = ("gala-gopher-io", "gala-gopher / Block IO", "Per-disk latency, throughput and errors; who issues IO (ioprobe).",
      '%s, disk_name=~"$disk"' % H,
      [host_var(), label_var("disk", "Disk", "gala_gopher_block_count_latency_req", "disk_name")], [
    R("Latency"),
    P("Requests /s", (rate_sum("hostname, disk_name, rw", "gala_gopher_block_count_latency_req"), DRW),
      unit="iops", w=8),
    P("Mean latency",
      (ratio("hostname, disk_name, rw", "gala_gopher_block_latency_req_sum", "gala_gopher_block_count_latency_req"),
       DRW),
      unit="µs", w=8),
    P("Longest request of the period", ("gala_gopher_block_latency_req_max{@}", DRW), unit="µs", w=8),
    P("Device latency p50 / p99 (issue to completion)",
      quantiles("hostname, disk_name, rw", "gala_gopher_block_latency_device_us", DRW), unit="µs"),
    P("Queue latency p99 (allocation to issue)",
      (quantile("0.99", "hostname, disk_name, rw", "gala_gopher_block_latency_queue_us"), DRW), unit="µs"),
    R("Throughput and errors"),
    P("Bytes /s",
      each("rate(gala_gopher_block_%s_bytes{@}[5m])", "{{hostname}} {{disk_name}} %s",
           ("read", "write", "discard")),
      unit="Bps", w=8, description="io_count"),
    P("Errors", ("increase(gala_gopher_block_err_count{@}[5m])", DRW), w=8),
    P("Slow requests /s", ("rate(gala_gopher_block_slow_count{@}[5m])", DRW), unit="ops", w=8,
      description="requests at or past latency_thr"),
    P("Top processes by IO bytes /s",
      ("topk(10, sum by (hostname, comm, tgid) (rate(gala_gopher_block_issued_read_bytes{@}[5m]) + "
       "rate(gala_gopher_block_issued_write_bytes{@}[5m])))", "{{hostname}} {{comm}} ({{tgid}})"),
      unit="Bps"),
    P("Page cache /s",
      each(rate_sum("hostname, disk_name", "gala_gopher_block_%s"), "{{hostname}} {{disk_name}} %s",
           ("access_pagecache", "load_page_cache", "mark_page_dirty", "mark_buffer_dirty")),
      unit="ops", description="page_cache sub-probe (off by default)"),
])

CTG = "{{hostname}} {{comm}} ({{tgid}})"
PROC = ("gala-gopher-proc", "gala-gopher / Processes",
        "Top processes from /proc (system_infos proc) and per-process eBPF metrics (taskprobe).",
        '%s, comm=~"$comm"' % H, [host_var(), label_var("comm", "Process", "gala_gopher_proc_cpu_util_per")], [
    R("/proc (system_infos)"),
    P("CPU by process", ("topk(10, gala_gopher_proc_cpu_util_per{@})", CTG), unit="percent"),
    P("Resident memory by process", ("topk(10, gala_gopher_proc_pm_size{@})", CTG), unit="kbytes"),
    P("Disk bytes /s by process",
      ("topk(10, rate(gala_gopher_proc_read_bytes{@}[5m]) + rate(gala_gopher_proc_write_bytes{@}[5m]))", CTG),
      unit="Bps", w=8),
    P("Major page faults /s", ("topk(10, rate(gala_gopher_proc_major_pagefault_count{@}[5m]))", CTG), unit="ops",
      w=8),
    P("Descriptors left", ("bottomk(10, gala_gopher_proc_fd_free_per{@})", CTG), unit="percent", w=8),
    R("eBPF (taskprobe)"),
    P("Off-CPU and IO wait (share of time)",
      ("topk(10, rate(gala_gopher_proc_offcpu_ns{@}[5m]) / 1e9)", CTG + " off-cpu"),
      ("topk(10, rate(gala_gopher_proc_iowait_ns{@}[5m]) / 1e9)", CTG + " iowait"), unit="percentunit"),
    P("Block IO by process", ("topk(10, rate(gala_gopher_proc_bio_read_bytes{@}[5m]))", CTG + " read"),
      ("topk(10, rate(gala_gopher_proc_bio_write_bytes{@}[5m]))", CTG + " write"),
      ("gala_gopher_proc_bio_latency{@}", CTG + " latency (us)"), unit="Bps",
      description="proc_io: requests the process submitted"),
    P("DNS lookups (getaddrinfo)",
      ("rate(gala_gopher_proc_gethostname_count{@}[5m])", "{{hostname}} {{comm}} calls/s"),
      ("rate(gala_gopher_proc_gethostname_failed{@}[5m])", "{{hostname}} {{comm}} failed/s"),
      ("rate(gala_gopher_proc_gethostname_ns{@}[5m]) / rate(gala_gopher_proc_gethostname_count{@}[5m]) / 1e6",
       "{{hostname}} {{comm}} mean ms"),
      w=8),
    P("Syscalls /s", ("topk(10, rate(gala_gopher_proc_syscall_count{@}[5m]))", "{{hostname}} {{comm}} calls"),
      ("topk(10, rate(gala_gopher_proc_syscall_failed{@}[5m]))", "{{hostname}} {{comm}} failed"), unit="ops",
      w=8, description="proc_syscall sub-probe (off by default)"),
    P("File operations mean time",
      each("gala_gopher_proc_%s_avg_ns{@}", "{{hostname}} {{comm}} %s", ("read", "write", "open", "fsync")),
      unit="ns", w=8, description="proc_fs sub-probe (off by default)"),
    P("Forks /s", ("topk(10, rate(gala_gopher_proc_fork_count{@}[5m]))", CTG), unit="ops"),
    P("Direct reclaim time", ("topk(10, rate(gala_gopher_proc_reclaim_ns{@}[5m]) / 1e9)", CTG),
      unit="percentunit", description="proc_pagecache sub-probe (off by default)"),
])

PROFILING = ("gala-gopher-profiling", "gala-gopher / Profiling",
             "stackprobe: samples, stacks and its health. Flame graphs: the SVG files in svg_dir, the query API, or"
             " Pyroscope.", H, [host_var()], [
    T("Flame graphs",
      "Flame graphs are files and an API, not Prometheus series: `<svg_dir>/<event>/*.svg`, "
      "`GET http://<node>:9999/flamegraph/query?app=<comm>&event=on-cpu`, or Pyroscope with "
      "`pyroscope_server`. Start profiling with `curl -X PUT http://localhost:9999/flamegraph "
      '-d json=\'{"cmd":{"probe":["oncpu"]},"state":"running"}\'`.',
      h=4),
    P("Samples /s by event",
      (rate_sum("hostname, event", "gala_gopher_stackprobe_samples"), "{{hostname}} {{event}}"), unit="ops"),
    P("Stacks and frames /s",
      each(rate_sum("hostname, event", "gala_gopher_stackprobe_%s"), "{{hostname}} {{event}} %s",
           ("stacks", "frames", "unknown_frames", "dropped")),
      unit="ops"),
    P("Unsymbolized frames",
      (ratio("hostname, event", "gala_gopher_stackprobe_unknown_frames", "gala_gopher_stackprobe_frames"),
       "{{hostname}} {{event}}"),
      unit="percentunit", w=8),
    P("Lost in the kernel /s",
      each(rate_sum("hostname", "gala_gopher_stackprobe_%s"), "{{hostname}} %s",
           ("stack_lost", "count_lost", "ringbuf_lost", "storage_lost")),
      unit="ops", w=8),
    P("Symbolizer", ("gala_gopher_stackprobe_sym_mem_bytes{@}", "{{hostname}} memory"),
      ("gala_gopher_stackprobe_sym_procs{@}", "{{hostname}} processes"),
      ("gala_gopher_stackprobe_sym_modules{@}", "{{hostname}} modules"), w=8),
    P("Outputs /s",
      each(rate_sum("hostname", "gala_gopher_stackprobe_%s"), "{{hostname}} %s",
           ("files_written", "pyroscope_uploads", "pyroscope_errors")),
      unit="ops"),
    P("Allocation profiling",
      each("gala_gopher_stackprobe_%s{@}", "{{hostname}} %s", ("alloc_uprobes", "alloc_procs", "alloc_skipped")),
      description="mem_alloc: uprobes attached and processes covered"),
])

BY = "hostname, protocol, server_ip, server_port"
SRV = "{{hostname}} {{protocol}} {{server_ip}}:{{server_port}}"
L7 = ("gala-gopher-l7", "gala-gopher / L7 requests",
      "Application requests per server and protocol (l7probe: HTTP, PostgreSQL, MySQL, Redis, Kafka, MongoDB, "
      "RocketMQ, DNS; TLS through OpenSSL): rate, errors, latency quantiles, bytes, and the capture's own health.",
      '%s, protocol=~"$protocol", server_ip=~"$server"' % H,
      [host_var(), label_var("protocol", "Protocol", "gala_gopher_l7_req_count"),
       label_var("server", "Server", "gala_gopher_l7_req_count", "server_ip")], [
    R("Requests"),
    P("Requests /s per server", (rate_sum(BY + ", l7_role", "gala_gopher_l7_req_count"), SRV + " ({{l7_role}})"),
      unit="reqps", w=8,
      description="requests matched with their response; the server's side (l7_role server) and its clients' "
      "side (client) are both shown when the probe sees both processes"),
    P("Error ratio per server", (ratio(BY, "gala_gopher_l7_err_count", "gala_gopher_l7_req_count"), SRV),
      unit="percentunit", w=8,
      description="requests whose response says they failed (HTTP 4xx/5xx, SQL errors, Redis -ERR, DNS rcode) "
      "over requests"),
    P("Errors /s per server", (rate_sum(BY, "gala_gopher_l7_err_count"), SRV), unit="reqps", w=8),
    R("Latency"),
    P("Latency p50 / p90 / p99 per server", quantiles(BY, "gala_gopher_l7_latency", SRV, ("0.5", "0.9", "0.99")),
      unit="ns", w=12, description="request's first byte to the response's last, from the latency histogram"),
    P("Mean latency per server", (ratio(BY, "gala_gopher_l7_latency_sum", "gala_gopher_l7_latency_count"), SRV),
      unit="ns", w=12),
    P("Slowest servers (p99, last 5 min)", ("topk(10, %s)" % quantile("0.99", BY, "gala_gopher_l7_latency"), SRV),
      unit="ns", kind="table", w=12),
    P("Busiest client -> server pairs (requests /s)",
      ("topk(10, %s)" % rate_sum("hostname, protocol, client_ip, server_ip, server_port, tgid, l7_role",
                                 "gala_gopher_l7_req_count"),
       "{{client_ip}} -> {{server_ip}}:{{server_port}} (tgid {{tgid}}, {{l7_role}})"),
      unit="reqps", kind="table", w=12),
    R("Traffic"),
    P("Bytes /s per server (sent and received by the traced processes)",
      (rate_sum(BY, "gala_gopher_l7_bytes_sent"), SRV + " sent"),
      (rate_sum(BY, "gala_gopher_l7_bytes_recv"), SRV + " received"), unit="Bps", w=12),
    P("Requests /s in the last report period (throughput_req)",
      ("sum by (%s) (gala_gopher_l7_throughput_req{@})" % BY, SRV), unit="reqps", w=12),
    R("Capture health (l7_stats)", sel=H),
    P("Events captured and lost /s", (rate_sum("hostname", "gala_gopher_l7_stats_events"), "{{hostname}} events"),
      (rate_sum("hostname", "gala_gopher_l7_stats_ringbuf_full"), "{{hostname}} ring buffer full"),
      (rate_sum("hostname", "gala_gopher_l7_stats_truncated"), "{{hostname}} truncated"), unit="ops", w=8),
    P("Parser trouble /s",
      each(rate_sum("hostname", "gala_gopher_l7_stats_%s"), "{{hostname}} %s",
           ("unparsable", "resp_unmatched", "req_lost", "untracked")),
      unit="ops", w=8),
    P("Connections tracked", ("sum by (hostname) (gala_gopher_l7_stats_conns{@})", "{{hostname}}"), w=8),
])


def main():
    for spec in (AGENT, HOST, TCP, IO, PROC, L7, PROFILING):
        b = build(spec)
        path = os.path.join(HERE, b.uid + ".json")
        with open(path, "w") as f:
            json.dump(b.json(), f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(path)


if __name__ == "__main__":
    main()
