#!/usr/bin/env bash
# bench/run.sh - every benchmark, one after the other (figures go to bench/RESULTS.md by hand, with
# the command that produced them).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== IPC: 8 publishers -> 1 sink (raw transport)"
BUILD=build bench/ipc_bench.sh 8 2000000
echo "== IPC through the supervisor: 8 flood probes, every record validated"
python3 bench/supervisor_ipc.py 8 2000000
echo "== supervisor idle cost, system_infos every 5 s"
bench/idle_cost.sh 60
