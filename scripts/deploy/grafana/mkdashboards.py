#!/usr/bin/env python3
"""mkdashboards.py - writes gala-gopher's Grafana dashboards (agent, host, tcp, io, proc, l7, profiling) as JSON
next to this script. The JSON files are what gets installed and imported; edit this script and re-run
it (`python3 scripts/deploy/grafana/mkdashboards.py`), or edit a dashboard in Grafana and export it.

Every dashboard takes a Prometheus data source and a host (the `hostname` label every probe series
carries; the agent's own series are chosen by `instance`). Tables that share a field name share a
family only when their label sets are the same (the schema loader refuses anything else), so every
family here is one table's meaning."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DS = {"type": "prometheus", "uid": "${datasource}"}
H = 'hostname=~"$hostname"'


def rate_sum(by, metric, sel):
    """The per-second rate of a counter family over 5 minutes, summed by the labels `by`."""
    return "sum by (%s) (rate(%s{%s}[5m]))" % (by, metric, sel)


def quantile(q, by, metric, sel):
    """The q quantile (a string: "0.99") of a histogram family over 5 minutes, per the labels `by`."""
    return "histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket{%s}[5m])))" % (q, by, metric, sel)


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


def agent():
    b = Board(
        "gala-gopher-agent",
        "gala-gopher / Agent",
        "The agent's own health: probes, records, imdb, exporters.",
        [var_query("instance", "Agent", "label_values(gala_gopher_build_info, instance)")],
    )
    i = 'instance=~"$instance"'
    b.row("Probes")
    b.panel(
        "Probes running",
        [("gala_gopher_probe_up{%s}" % i, "{{instance}} {{probe}}")],
        kind="table",
        w=8,
        description="1 while the probe process runs",
    )
    b.panel(
        "Restarts (1h)",
        [("increase(gala_gopher_probe_restarts_total{%s}[1h])" % i, "{{instance}} {{probe}}")],
        w=8,
        description="restarts after an unexpected exit; the probe's log says why",
    )
    b.panel(
        "Live configuration not yet applied",
        [
            (
                "gala_gopher_probe_config_version{%s} - gala_gopher_probe_config_version_applied{%s}" % (i, i),
                "{{instance}} {{probe}}",
            )
        ],
        w=8,
        description="versions sent but not confirmed by the probe",
    )
    b.panel(
        "Records accepted /s",
        [
            (
                rate_sum("instance, probe", "gala_gopher_probe_records_accepted_total", i),
                "{{instance}} {{probe}}",
            )
        ],
        unit="ops",
        stack=True,
    )
    b.panel(
        "Records rejected /s by reason",
        [
            (
                rate_sum("instance, probe, reason", "gala_gopher_probe_records_rejected_total", i),
                "{{instance}} {{probe}} {{reason}}",
            )
        ],
        unit="ops",
    )
    b.panel(
        "Records lost on IPC /s",
        [
            (
                rate_sum("instance, probe", "gala_gopher_ipc_lost_records_total", i),
                "{{instance}} {{probe}} records",
            ),
            (
                rate_sum("instance, probe", "gala_gopher_ipc_lost_batches_total", i),
                "{{instance}} {{probe}} batches",
            ),
        ],
        unit="ops",
    )
    b.panel(
        "BPF run time per probe",
        [("rate(gala_gopher_probe_bpf_run_time_seconds_total{%s}[5m])" % i, "{{instance}} {{probe}}")],
        unit="percentunit",
        description="share of one CPU spent in the probe's BPF programs (needs kernel.bpf_stats_enabled=1)",
    )
    b.row("Supervisor")
    b.panel(
        "Supervisor CPU",
        [(rate_sum("instance, mode", "gala_gopher_sup_cpu_seconds_total", i), "{{instance}} {{mode}}")],
        unit="percentunit",
        w=8,
        stack=True,
    )
    b.panel(
        "Supervisor resident memory",
        [("gala_gopher_sup_resident_memory_bytes{%s}" % i, "{{instance}}")],
        unit="bytes",
        w=8,
    )
    b.panel(
        "/metrics render time", [("gala_gopher_sup_scrape_duration_seconds{%s}" % i, "{{instance}}")], unit="s", w=8
    )
    b.panel("Series per scrape", [("gala_gopher_sup_scrape_series{%s}" % i, "{{instance}}")], w=8)
    b.panel(
        "Bad and unknown batches /s",
        [
            ("rate(gala_gopher_sup_bad_batches_total{%s}[5m])" % i, "{{instance}} bad"),
            ("rate(gala_gopher_sup_unknown_probe_batches_total{%s}[5m])" % i, "{{instance}} unknown probe"),
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "Exported /s by stream",
        [(rate_sum("instance, stream", "gala_gopher_export_records_total", i), "{{instance}} {{stream}}")],
        unit="ops",
        w=8,
    )
    b.row("imdb")
    b.panel(
        "imdb memory",
        [
            ("gala_gopher_imdb_memory_bytes{%s}" % i, "{{instance}} used"),
            ("gala_gopher_imdb_memory_limit_bytes{%s}" % i, "{{instance}} limit"),
        ],
        unit="bytes",
        w=8,
    )
    b.panel("Series per table", [("topk(15, gala_gopher_imdb_series{%s})" % i, "{{instance}} {{table}}")], w=8)
    b.panel(
        "Rows dropped /s",
        [
            (
                rate_sum("instance, table, reason", "gala_gopher_imdb_dropped_records_total", i),
                "{{instance}} {{table}} {{reason}}",
            ),
            (
                rate_sum("instance, table", "gala_gopher_imdb_expired_records_total", i),
                "{{instance}} {{table}} expired",
            ),
        ],
        unit="ops",
        w=8,
    )
    b.row("Kafka, logs, events")
    b.panel("Kafka producer queue", [("gala_gopher_kafka_queue_messages{%s}" % i, "{{instance}}")], w=8)
    b.panel(
        "Kafka messages /s",
        [
            (
                rate_sum("instance, topic", "gala_gopher_kafka_messages_produced_total", i),
                "{{instance}} {{topic}} produced",
            ),
            (
                rate_sum("instance, topic", "gala_gopher_kafka_messages_delivered_total", i),
                "{{instance}} {{topic}} delivered",
            ),
            (
                rate_sum("instance, topic, reason", "gala_gopher_kafka_messages_dropped_total", i),
                "{{instance}} {{topic}} dropped {{reason}}",
            ),
            (
                rate_sum("instance, topic", "gala_gopher_kafka_delivery_errors_total", i),
                "{{instance}} {{topic}} failed",
            ),
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "Log lines and write errors /s",
        [
            (
                rate_sum("instance, stream", "gala_gopher_logs_lines_total", i),
                "{{instance}} {{stream}} lines",
            ),
            (
                rate_sum("instance, stream", "gala_gopher_logs_write_errors_total", i),
                "{{instance}} {{stream}} errors",
            ),
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "Events /s by result",
        [(rate_sum("instance, result", "gala_gopher_events_total", i), "{{instance}} {{result}}")],
        unit="ops",
    )
    b.panel(
        "Kafka client errors /s",
        [("rate(gala_gopher_kafka_client_errors_total{%s}[5m])" % i, "{{instance}}")],
        unit="ops",
    )
    return b


def host():
    b = Board(
        "gala-gopher-host",
        "gala-gopher / Host",
        "CPU, memory, disks, file systems, network (system_infos).",
        [host_var()],
    )
    b.row("CPU and memory")
    b.panel("CPU busy", [("gala_gopher_cpu_total_used_per{%s}" % H, "{{hostname}}")], unit="percent", w=8)
    b.panel(
        "CPU time by mode",
        [
            ("sum by (hostname) (rate(gala_gopher_cpu_%s_total_second{%s}[5m]))" % (m, H), "{{hostname}} %s" % m)
            for m in ("user", "nice", "system", "iowait", "irq", "softirq", "steal")
        ],
        unit="short",
        w=8,
        stack=True,
        description="CPUs' worth of time per second",
    )
    b.panel("Per-CPU busy", [("gala_gopher_cpu_util_per{%s}" % H, "{{hostname}} cpu{{cpu}}")], unit="percent", w=8)
    b.panel(
        "Memory in use",
        [
            ("gala_gopher_mem_util{%s}" % H, "{{hostname}} memory"),
            ("gala_gopher_mem_swap_util{%s}" % H, "{{hostname}} swap"),
        ],
        unit="percent",
        w=8,
    )
    b.panel(
        "Memory",
        [
            ("gala_gopher_mem_%s{%s} * 1024" % (f, H), "{{hostname}} %s" % f.replace("_kB", ""))
            for f in ("total_kB", "available_kB", "cache_kB", "buffers_kB", "slab_kB", "shmem_kB")
        ],
        unit="bytes",
        w=8,
    )
    b.panel(
        "Softirqs /s",
        [
            (rate_sum("hostname", "gala_gopher_cpu_" + f, H), "{{hostname}} %s" % f)
            for f in ("net_rx", "timer", "sched", "rcu")
        ],
        unit="ops",
        w=8,
    )
    b.row("Disks and file systems")
    b.panel("Disk utilisation", [("gala_gopher_disk_util{%s}" % H, "{{hostname}} {{disk_name}}")], unit="percent", w=8)
    b.panel(
        "Disk await",
        [
            ("gala_gopher_disk_r_await{%s}" % H, "{{hostname}} {{disk_name}} read"),
            ("gala_gopher_disk_w_await{%s}" % H, "{{hostname}} {{disk_name}} write"),
        ],
        unit="ms",
        w=8,
    )
    b.panel(
        "Disk throughput",
        [
            ("gala_gopher_disk_rspeed_kB{%s} * 1024" % H, "{{hostname}} {{disk_name}} read"),
            ("gala_gopher_disk_wspeed_kB{%s} * 1024" % H, "{{hostname}} {{disk_name}} write"),
        ],
        unit="Bps",
        w=8,
    )
    b.panel(
        "Disk IOPS and queue",
        [
            ("gala_gopher_disk_rspeed{%s}" % H, "{{hostname}} {{disk_name}} reads/s"),
            ("gala_gopher_disk_wspeed{%s}" % H, "{{hostname}} {{disk_name}} writes/s"),
            ("gala_gopher_disk_aqu{%s}" % H, "{{hostname}} {{disk_name}} queue"),
        ],
        w=8,
    )
    b.panel(
        "File systems",
        [("gala_gopher_file_system_UsePer{%s}" % H, "space"), ("gala_gopher_file_system_IUsePer{%s}" % H, "inodes")],
        unit="percent",
        kind="table",
        w=16,
    )
    b.row("Network")
    b.panel(
        "NIC throughput",
        [
            ("gala_gopher_nic_rxspeed_KB{%s} * 1024" % H, "{{hostname}} {{dev_name}} rx"),
            ("gala_gopher_nic_txspeed_KB{%s} * 1024" % H, "{{hostname}} {{dev_name}} tx"),
        ],
        unit="Bps",
        w=8,
    )
    b.panel(
        "NIC drops and errors /s",
        [
            ("rate(gala_gopher_nic_%s{%s}[5m])" % (f, H), "{{hostname}} {{dev_name}} %s" % f)
            for f in ("rx_dropped", "tx_dropped", "rx_errs", "tx_errs")
        ]
        + [(rate_sum("hostname", "gala_gopher_cpu_backlog_drops", H), "{{hostname}} softnet backlog")],
        unit="pps",
        w=8,
    )
    b.panel(
        "TCP",
        [
            ("gala_gopher_system_tcp_curr_estab{%s}" % H, "{{hostname}} established"),
            ("rate(gala_gopher_system_tcp_active_opens{%s}[5m])" % H, "{{hostname}} connects/s"),
            ("rate(gala_gopher_system_tcp_passive_opens{%s}[5m])" % H, "{{hostname}} accepts/s"),
            ("rate(gala_gopher_system_tcp_attempt_fails{%s}[5m])" % H, "{{hostname}} failed connects/s"),
        ],
        w=8,
    )
    b.panel(
        "TCP retransmitted segments",
        [("gala_gopher_system_tcp_retrans_per{%s}" % H, "{{hostname}}")],
        unit="percent",
        w=8,
    )
    b.panel(
        "TCP resets and errors /s",
        [
            ("rate(gala_gopher_system_tcp_%s{%s}[5m])" % (f, H), "{{hostname}} %s" % f)
            for f in ("estab_resets", "out_rsts", "in_errs")
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "UDP /s",
        [
            ("rate(gala_gopher_system_udp_%s{%s}[5m])" % (f, H), "{{hostname}} %s" % f)
            for f in ("indata_grams", "outdata_grams", "no_ports", "in_errors", "rcvbuf_errors", "sndbuf_errors")
        ],
        unit="ops",
        w=8,
    )
    return b


def tcp():
    b = Board(
        "gala-gopher-tcp",
        "gala-gopher / TCP and sockets",
        "Per-process TCP links (tcpprobe) and listening, connecting and UDP sockets (endpoint).",
        [host_var(), var_query("comm", "Process", "label_values(gala_gopher_tcp_link_links_active{%s}, comm)" % H)],
    )
    s = '%s, comm=~"$comm"' % H
    b.row("Links")
    b.panel(
        "Bytes /s by process",
        [
            (rate_sum("hostname, comm", "gala_gopher_tcp_link_rx_bytes", s), "{{hostname}} {{comm}} rx"),
            (rate_sum("hostname, comm", "gala_gopher_tcp_link_tx_bytes", s), "{{hostname}} {{comm}} tx"),
        ],
        unit="Bps",
    )
    b.panel(
        "Open links and connections /s",
        [
            (
                "sum by (hostname, comm, role) (gala_gopher_tcp_link_links_active{%s})" % s,
                "{{hostname}} {{comm}} role={{role}} open",
            ),
            (
                rate_sum("hostname, comm", "gala_gopher_tcp_link_links_opened", s),
                "{{hostname}} {{comm}} opened/s",
            ),
            (
                rate_sum("hostname, comm", "gala_gopher_tcp_link_connect_failed", s),
                "{{hostname}} {{comm}} failed connects/s",
            ),
        ],
    )
    b.panel(
        "Smoothed RTT p50 / p99",
        [
            (
                quantile(q, "hostname, comm", "gala_gopher_tcp_link_srtt_hist", s),
                "{{hostname}} {{comm}} p%s" % int(float(q) * 100),
            )
            for q in ("0.5", "0.99")
        ],
        unit="µs",
    )
    b.panel(
        "Handshake RTT and link lifetime p99",
        [
            (
                quantile("0.99", "hostname, comm", "gala_gopher_tcp_link_syn_srtt_hist", s),
                "{{hostname}} {{comm}} handshake (µs)",
            ),
            (
                quantile("0.99", "hostname, comm", "gala_gopher_tcp_link_lifetime", s),
                "{{hostname}} {{comm}} lifetime (ms)",
            ),
        ],
    )
    b.row("Loss and pressure")
    b.panel(
        "Retransmits and drops /s",
        [
            (rate_sum("hostname, comm", "gala_gopher_tcp_link_" + f, s), "{{hostname}} {{comm}} %s" % f)
            for f in ("retran_packets", "syn_retrans", "sk_drops", "backlog_drops", "rmem_drops")
        ],
        unit="pps",
    )
    b.panel(
        "Resets /s",
        [
            (rate_sum("hostname, comm", "gala_gopher_tcp_link_" + f, s), "{{hostname}} {{comm}} %s" % f)
            for f in ("send_rsts", "receive_rsts")
        ],
        unit="ops",
    )
    b.panel(
        "Zero windows /s",
        [
            (rate_sum("hostname, comm", "gala_gopher_tcp_link_" + f, s), "{{hostname}} {{comm}} %s" % f)
            for f in ("zero_snd_wnd_count", "zero_rcv_wnd_count")
        ],
        unit="ops",
    )
    b.panel(
        "Socket queues",
        [
            ("sum by (hostname, comm) (gala_gopher_tcp_link_%s{%s})" % (f, s), "{{hostname}} {{comm}} %s" % f)
            for f in ("sk_rcv_que_size", "sk_wri_que_size", "notsent_bytes")
        ],
        unit="bytes",
    )
    b.row("Sockets (endpoint)")
    b.panel(
        "Listen drops /s",
        [
            (
                rate_sum("hostname, comm, s_addr, s_port", "gala_gopher_endpoint_" + f, H),
                "{{hostname}} {{comm}} {{s_addr}}:{{s_port}} %s" % f,
            )
            for f in ("listendrop", "accept_overflow", "syn_overflow")
        ],
        unit="ops",
    )
    b.panel(
        "Accept queue",
        [
            ("gala_gopher_endpoint_accept_queue{%s}" % H, "{{hostname}} {{comm}} {{s_addr}}:{{s_port}}"),
            ("gala_gopher_endpoint_accept_queue_max{%s}" % H, "{{hostname}} {{comm}} {{s_addr}}:{{s_port}} max"),
        ],
    )
    b.panel(
        "Connect latency p99",
        [
            (
                quantile("0.99", "hostname, comm, s_addr, s_port", "gala_gopher_endpoint_connect_latency", H),
                "{{hostname}} {{comm}} -> {{s_addr}}:{{s_port}}",
            )
        ],
        unit="µs",
    )
    b.panel(
        "Accepted handshake RTT p99",
        [
            (
                quantile("0.99", "hostname, comm, s_port", "gala_gopher_endpoint_handshake_rtt", H),
                "{{hostname}} {{comm}} :{{s_port}}",
            )
        ],
        unit="µs",
    )
    b.panel(
        "Failed connects /s",
        [
            (
                rate_sum("hostname, comm, s_addr, s_port", "gala_gopher_endpoint_active_open_failed", H),
                "{{hostname}} {{comm}} -> {{s_addr}}:{{s_port}}",
            )
        ],
        unit="ops",
    )
    b.panel(
        "Kernel packet drops /s by reason",
        [
            (
                rate_sum("hostname, protocol, reason", "gala_gopher_endpoint_drops", H),
                "{{hostname}} {{protocol}} {{reason}}",
            )
        ],
        unit="pps",
    )
    b.panel(
        "UDP sockets /s",
        [
            (
                rate_sum("hostname, comm, s_port", "gala_gopher_endpoint_" + f, H),
                "{{hostname}} {{comm}} :{{s_port}} %s" % f,
            )
            for f in ("udp_rcv_drops", "sk_drops")
        ],
        unit="pps",
        description="udp_socket sub-probe (off by default)",
    )
    return b


def io():
    b = Board(
        "gala-gopher-io",
        "gala-gopher / Block IO",
        "Per-disk latency, throughput and errors; who issues IO (ioprobe).",
        [host_var(), var_query("disk", "Disk", "label_values(gala_gopher_block_count_latency_req{%s}, disk_name)" % H)],
    )
    d = '%s, disk_name=~"$disk"' % H
    b.row("Latency")
    b.panel(
        "Requests /s",
        [
            (
                rate_sum("hostname, disk_name, rw", "gala_gopher_block_count_latency_req", d),
                "{{hostname}} {{disk_name}} {{rw}}",
            )
        ],
        unit="iops",
        w=8,
    )
    b.panel(
        "Mean latency",
        [
            (
                "sum by (hostname, disk_name, rw) (rate(gala_gopher_block_latency_req_sum{%s}[5m])) / "
                "sum by (hostname, disk_name, rw) (rate(gala_gopher_block_count_latency_req{%s}[5m]))" % (d, d),
                "{{hostname}} {{disk_name}} {{rw}}",
            )
        ],
        unit="µs",
        w=8,
    )
    b.panel(
        "Longest request of the period",
        [("gala_gopher_block_latency_req_max{%s}" % d, "{{hostname}} {{disk_name}} {{rw}}")],
        unit="µs",
        w=8,
    )
    b.panel(
        "Device latency p50 / p99 (issue to completion)",
        [
            (
                quantile(q, "hostname, disk_name, rw", "gala_gopher_block_latency_device_us", d),
                "{{hostname}} {{disk_name}} {{rw}} p%s" % int(float(q) * 100),
            )
            for q in ("0.5", "0.99")
        ],
        unit="µs",
    )
    b.panel(
        "Queue latency p99 (allocation to issue)",
        [
            (
                quantile("0.99", "hostname, disk_name, rw", "gala_gopher_block_latency_queue_us", d),
                "{{hostname}} {{disk_name}} {{rw}}",
            )
        ],
        unit="µs",
    )
    b.row("Throughput and errors")
    b.panel(
        "Bytes /s",
        [
            (
                "rate(gala_gopher_block_%s_bytes{%s}[5m])" % (rw, d),
                "{{hostname}} {{disk_name}} %s" % rw,
            )
            for rw in ("read", "write", "discard")
        ],
        unit="Bps",
        w=8,
        description="io_count",
    )
    b.panel("Errors", [("increase(gala_gopher_block_err_count{%s}[5m])" % d, "{{hostname}} {{disk_name}} {{rw}}")], w=8)
    b.panel(
        "Slow requests /s",
        [("rate(gala_gopher_block_slow_count{%s}[5m])" % d, "{{hostname}} {{disk_name}} {{rw}}")],
        unit="ops",
        w=8,
        description="requests at or past latency_thr",
    )
    b.panel(
        "Top processes by IO bytes /s",
        [
            (
                "topk(10, sum by (hostname, comm, tgid) (rate(gala_gopher_block_issued_read_bytes{%s}[5m]) + "
                "rate(gala_gopher_block_issued_write_bytes{%s}[5m])))" % (d, d),
                "{{hostname}} {{comm}} ({{tgid}})",
            )
        ],
        unit="Bps",
    )
    b.panel(
        "Page cache /s",
        [
            (
                rate_sum("hostname, disk_name", "gala_gopher_block_" + f, d),
                "{{hostname}} {{disk_name}} %s" % f,
            )
            for f in ("access_pagecache", "load_page_cache", "mark_page_dirty", "mark_buffer_dirty")
        ],
        unit="ops",
        description="page_cache sub-probe (off by default)",
    )
    return b


def proc():
    b = Board(
        "gala-gopher-proc",
        "gala-gopher / Processes",
        "Top processes from /proc (system_infos proc) and per-process eBPF metrics (taskprobe).",
        [host_var(), var_query("comm", "Process", "label_values(gala_gopher_proc_cpu_util_per{%s}, comm)" % H)],
    )
    s = '%s, comm=~"$comm"' % H
    b.row("/proc (system_infos)")
    b.panel(
        "CPU by process",
        [("topk(10, gala_gopher_proc_cpu_util_per{%s})" % s, "{{hostname}} {{comm}} ({{tgid}})")],
        unit="percent",
    )
    b.panel(
        "Resident memory by process",
        [("topk(10, gala_gopher_proc_pm_size{%s})" % s, "{{hostname}} {{comm}} ({{tgid}})")],
        unit="kbytes",
    )
    b.panel(
        "Disk bytes /s by process",
        [
            (
                "topk(10, rate(gala_gopher_proc_read_bytes{%s}[5m]) +"
                " rate(gala_gopher_proc_write_bytes{%s}[5m]))" % (s, s),
                "{{hostname}} {{comm}} ({{tgid}})",
            )
        ],
        unit="Bps",
        w=8,
    )
    b.panel(
        "Major page faults /s",
        [("topk(10, rate(gala_gopher_proc_major_pagefault_count{%s}[5m]))" % s, "{{hostname}} {{comm}} ({{tgid}})")],
        unit="ops",
        w=8,
    )
    b.panel(
        "Descriptors left",
        [("bottomk(10, gala_gopher_proc_fd_free_per{%s})" % s, "{{hostname}} {{comm}} ({{tgid}})")],
        unit="percent",
        w=8,
    )
    b.row("eBPF (taskprobe)")
    b.panel(
        "Off-CPU and IO wait (share of time)",
        [
            (
                "topk(10, rate(gala_gopher_proc_offcpu_ns{%s}[5m]) / 1e9)" % s,
                "{{hostname}} {{comm}} ({{tgid}}) off-cpu",
            ),
            ("topk(10, rate(gala_gopher_proc_iowait_ns{%s}[5m]) / 1e9)" % s, "{{hostname}} {{comm}} ({{tgid}}) iowait"),
        ],
        unit="percentunit",
    )
    b.panel(
        "Block IO by process",
        [
            (
                "topk(10, rate(gala_gopher_proc_bio_read_bytes{%s}[5m]))" % s,
                "{{hostname}} {{comm}} ({{tgid}}) read",
            ),
            (
                "topk(10, rate(gala_gopher_proc_bio_write_bytes{%s}[5m]))" % s,
                "{{hostname}} {{comm}} ({{tgid}}) write",
            ),
            ("gala_gopher_proc_bio_latency{%s}" % s, "{{hostname}} {{comm}} ({{tgid}}) latency (us)"),
        ],
        unit="Bps",
        description="proc_io: requests the process submitted",
    )
    b.panel(
        "DNS lookups (getaddrinfo)",
        [
            ("rate(gala_gopher_proc_gethostname_count{%s}[5m])" % s, "{{hostname}} {{comm}} calls/s"),
            ("rate(gala_gopher_proc_gethostname_failed{%s}[5m])" % s, "{{hostname}} {{comm}} failed/s"),
            (
                "rate(gala_gopher_proc_gethostname_ns{%s}[5m]) / rate(gala_gopher_proc_gethostname_count{%s}[5m]) / 1e6"
                % (s, s),
                "{{hostname}} {{comm}} mean ms",
            ),
        ],
        w=8,
    )
    b.panel(
        "Syscalls /s",
        [
            ("topk(10, rate(gala_gopher_proc_syscall_count{%s}[5m]))" % s, "{{hostname}} {{comm}} calls"),
            ("topk(10, rate(gala_gopher_proc_syscall_failed{%s}[5m]))" % s, "{{hostname}} {{comm}} failed"),
        ],
        unit="ops",
        w=8,
        description="proc_syscall sub-probe (off by default)",
    )
    b.panel(
        "File operations mean time",
        [
            ("gala_gopher_proc_%s_avg_ns{%s}" % (f, s), "{{hostname}} {{comm}} %s" % f)
            for f in ("read", "write", "open", "fsync")
        ],
        unit="ns",
        w=8,
        description="proc_fs sub-probe (off by default)",
    )
    b.panel(
        "Forks /s",
        [("topk(10, rate(gala_gopher_proc_fork_count{%s}[5m]))" % s, "{{hostname}} {{comm}} ({{tgid}})")],
        unit="ops",
    )
    b.panel(
        "Direct reclaim time",
        [("topk(10, rate(gala_gopher_proc_reclaim_ns{%s}[5m]) / 1e9)" % s, "{{hostname}} {{comm}} ({{tgid}})")],
        unit="percentunit",
        description="proc_pagecache sub-probe (off by default)",
    )
    return b


def profiling():
    b = Board(
        "gala-gopher-profiling",
        "gala-gopher / Profiling",
        (
            "stackprobe: samples, stacks and its health. Flame graphs: the SVG files in svg_dir, the query API, or"
            " Pyroscope."
        ),
        [host_var()],
    )
    b.text(
        "Flame graphs",
        (
            "Flame graphs are files and an API, not Prometheus series: `<svg_dir>/<event>/*.svg`, "
            "`GET http://<node>:9999/flamegraph/query?app=<comm>&event=on-cpu`, or Pyroscope with "
            "`pyroscope_server`. Start profiling with `curl -X PUT http://localhost:9999/flamegraph "
            '-d json=\'{"cmd":{"probe":["oncpu"]},"state":"running"}\'`.'
        ),
        h=4,
    )
    b.panel(
        "Samples /s by event",
        [(rate_sum("hostname, event", "gala_gopher_stackprobe_samples", H), "{{hostname}} {{event}}")],
        unit="ops",
    )
    b.panel(
        "Stacks and frames /s",
        [
            (
                rate_sum("hostname, event", "gala_gopher_stackprobe_" + f, H),
                "{{hostname}} {{event}} %s" % f,
            )
            for f in ("stacks", "frames", "unknown_frames", "dropped")
        ],
        unit="ops",
    )
    b.panel(
        "Unsymbolized frames",
        [
            (
                "sum by (hostname, event) (rate(gala_gopher_stackprobe_unknown_frames{%s}[5m])) / "
                "sum by (hostname, event) (rate(gala_gopher_stackprobe_frames{%s}[5m]))" % (H, H),
                "{{hostname}} {{event}}",
            )
        ],
        unit="percentunit",
        w=8,
    )
    b.panel(
        "Lost in the kernel /s",
        [
            (rate_sum("hostname", "gala_gopher_stackprobe_" + f, H), "{{hostname}} %s" % f)
            for f in ("stack_lost", "count_lost", "ringbuf_lost", "storage_lost")
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "Symbolizer",
        [
            ("gala_gopher_stackprobe_sym_mem_bytes{%s}" % H, "{{hostname}} memory"),
            ("gala_gopher_stackprobe_sym_procs{%s}" % H, "{{hostname}} processes"),
            ("gala_gopher_stackprobe_sym_modules{%s}" % H, "{{hostname}} modules"),
        ],
        w=8,
    )
    b.panel(
        "Outputs /s",
        [
            (rate_sum("hostname", "gala_gopher_stackprobe_" + f, H), "{{hostname}} %s" % f)
            for f in ("files_written", "pyroscope_uploads", "pyroscope_errors")
        ],
        unit="ops",
    )
    b.panel(
        "Allocation profiling",
        [
            ("gala_gopher_stackprobe_%s{%s}" % (f, H), "{{hostname}} %s" % f)
            for f in ("alloc_uprobes", "alloc_procs", "alloc_skipped")
        ],
        description="mem_alloc: uprobes attached and processes covered",
    )
    return b


def l7():
    b = Board(
        "gala-gopher-l7",
        "gala-gopher / L7 requests",
        "Application requests per server and protocol (l7probe: HTTP, PostgreSQL, MySQL, Redis, Kafka, MongoDB, RocketMQ, "
        "DNS; TLS through OpenSSL): rate, errors, latency quantiles, bytes, and the capture's own health.",
        [
            host_var(),
            var_query("protocol", "Protocol", "label_values(gala_gopher_l7_req_count{%s}, protocol)" % H),
            var_query("server", "Server", "label_values(gala_gopher_l7_req_count{%s}, server_ip)" % H),
        ],
    )
    s = '%s, protocol=~"$protocol", server_ip=~"$server"' % H
    by = "hostname, protocol, server_ip, server_port"
    srv = "{{hostname}} {{protocol}} {{server_ip}}:{{server_port}}"
    b.row("Requests")
    b.panel(
        "Requests /s per server",
        [("sum by (%s, l7_role) (rate(gala_gopher_l7_req_count{%s}[5m]))" % (by, s), srv + " ({{l7_role}})")],
        unit="reqps",
        w=8,
        description="requests matched with their response; the server's side (l7_role server) and its clients' "
        "side (client) are both shown when the probe sees both processes",
    )
    b.panel(
        "Error ratio per server",
        [
            (
                "sum by (%s) (rate(gala_gopher_l7_err_count{%s}[5m])) / "
                "sum by (%s) (rate(gala_gopher_l7_req_count{%s}[5m]))" % (by, s, by, s),
                srv,
            )
        ],
        unit="percentunit",
        w=8,
        description="requests whose response says they failed (HTTP 4xx/5xx, SQL errors, Redis -ERR, DNS rcode) "
        "over requests",
    )
    b.panel(
        "Errors /s per server",
        [("sum by (%s) (rate(gala_gopher_l7_err_count{%s}[5m]))" % (by, s), srv)],
        unit="reqps",
        w=8,
    )
    b.row("Latency")
    b.panel(
        "Latency p50 / p90 / p99 per server",
        [
            (
                "histogram_quantile(%s, sum by (le, %s) (rate(gala_gopher_l7_latency_bucket{%s}[5m])))" % (q, by, s),
                srv + " p%s" % int(float(q) * 100),
            )
            for q in ("0.5", "0.9", "0.99")
        ],
        unit="ns",
        w=12,
        description="request's first byte to the response's last, from the latency histogram",
    )
    b.panel(
        "Mean latency per server",
        [
            (
                "sum by (%s) (rate(gala_gopher_l7_latency_sum{%s}[5m])) / "
                "sum by (%s) (rate(gala_gopher_l7_latency_count{%s}[5m]))" % (by, s, by, s),
                srv,
            )
        ],
        unit="ns",
        w=12,
    )
    b.panel(
        "Slowest servers (p99, last 5 min)",
        [
            (
                "topk(10, histogram_quantile(0.99, sum by (le, %s) (rate(gala_gopher_l7_latency_bucket{%s}[5m]))))"
                % (by, s),
                srv,
            )
        ],
        unit="ns",
        kind="table",
        w=12,
    )
    b.panel(
        "Busiest client -> server pairs (requests /s)",
        [
            (
                "topk(10, sum by (hostname, protocol, client_ip, server_ip, server_port, tgid, l7_role)"
                " (rate(gala_gopher_l7_req_count{%s}[5m])))" % s,
                "{{client_ip}} -> {{server_ip}}:{{server_port}} (tgid {{tgid}}, {{l7_role}})",
            )
        ],
        unit="reqps",
        kind="table",
        w=12,
    )
    b.row("Traffic")
    b.panel(
        "Bytes /s per server (sent and received by the traced processes)",
        [
            ("sum by (%s) (rate(gala_gopher_l7_bytes_sent{%s}[5m]))" % (by, s), srv + " sent"),
            ("sum by (%s) (rate(gala_gopher_l7_bytes_recv{%s}[5m]))" % (by, s), srv + " received"),
        ],
        unit="Bps",
        w=12,
    )
    b.panel(
        "Requests /s in the last report period (throughput_req)",
        [("sum by (%s) (gala_gopher_l7_throughput_req{%s})" % (by, s), srv)],
        unit="reqps",
        w=12,
    )
    b.row("Capture health (l7_stats)")
    b.panel(
        "Events captured and lost /s",
        [
            ("sum by (hostname) (rate(gala_gopher_l7_stats_events{%s}[5m]))" % H, "{{hostname}} events"),
            ("sum by (hostname) (rate(gala_gopher_l7_stats_ringbuf_full{%s}[5m]))" % H, "{{hostname}} ring buffer full"),
            ("sum by (hostname) (rate(gala_gopher_l7_stats_truncated{%s}[5m]))" % H, "{{hostname}} truncated"),
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "Parser trouble /s",
        [
            ("sum by (hostname) (rate(gala_gopher_l7_stats_%s{%s}[5m]))" % (f, H), "{{hostname}} %s" % f)
            for f in ("unparsable", "resp_unmatched", "req_lost", "untracked")
        ],
        unit="ops",
        w=8,
    )
    b.panel(
        "Connections tracked",
        [("sum by (hostname) (gala_gopher_l7_stats_conns{%s})" % H, "{{hostname}}")],
        w=8,
    )
    return b


def main():
    for make in (agent, host, tcp, io, proc, l7, profiling):
        b = make()
        path = os.path.join(HERE, b.uid + ".json")
        with open(path, "w") as f:
            json.dump(b.json(), f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(path)


if __name__ == "__main__":
    main()
