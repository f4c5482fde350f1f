#!/usr/bin/env bash
# bench/run.sh - every benchmark, one after the other. Figures go to bench/RESULTS.md by hand, with
# the command that produced them; run on a quiet machine and compare ratios within one run.
set -euo pipefail
cd "$(dirname "$0")/.."
export GG_BUILD=${GG_BUILD:-build}
echo "== IPC: 8 publishers -> 1 sink (raw transport)"
BUILD=$GG_BUILD bench/ipc_bench.sh 8 2000000
echo "== IPC through the supervisor: 8 flood probes, every record validated"
python3 bench/supervisor_ipc.py 8 2000000
echo "== supervisor idle cost, system_infos every 5 s"
BUILD=$GG_BUILD bench/idle_cost.sh 60
echo "== /metrics render, 100,000 series; and against node_exporter"
"$GG_BUILD/bench/metrics_render" -s 100000 -r 20
python3 bench/metrics_render.py 100000 20
echo "== Kafka: producer alone, and end to end"
bench/kafka_produce.sh 2000000
python3 bench/kafka_e2e.py 2 1000000
echo "== web page: weight, supervisor CPU while it refreshes"
python3 bench/webui_bench.py 8 20
python3 bench/webui_bench.py 6 20 tables
echo "== REST: PUT -> confirmed, GET/s"
python3 bench/rest_bench.py 200 3
echo "== taskprobe overhead; system_infos vs node_exporter"
python3 bench/task_overhead.py 5 "$GG_BUILD" 15
python3 bench/sysinfo_vs_node_exporter.py 20 "$GG_BUILD"
echo "== stackprobe: overhead at 100 Hz, symbolization, unknown frames"
python3 bench/stack_overhead.py 15 2
python3 bench/stack_alloc.py 7 200000
"$GG_BUILD/bench/stack_symbolize" 3
python3 bench/stack_unknown.py 8
echo "== tcpprobe + endpoint + ioprobe: issue 17's cost table (keep-alive and connection-per-request A/B with"
echo "   95 % intervals, agent idle, round trip, BPF per event), then the --all sub-probes, loopback round trip"
python3 bench/net_cost_table.py 20 3 "$GG_BUILD"
python3 bench/net_overhead.py --all 12 3 "$GG_BUILD"
taskset -c 0 "$GG_BUILD/bench/net_pingpong" tcp 30000 10
echo "== l7probe HTTP/2 and gRPC: HPACK decoder and session on one core; h2load against nginx, l7 off/on"
"$GG_BUILD/bench/l7_hpack" -n 200000 -r 11
python3 bench/l7_h2_overhead.py 7 6
echo "== tprofiling: cost per watched syscall in and out of scope"
python3 bench/tprof_overhead.py 7 "$GG_BUILD" 1000000
