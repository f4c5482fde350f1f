"""seed_000.py - the curl examples of seed 000 (the gala-gopher manual), exactly as printed: run through bash
by test_seed_examples.py, their JSON bodies sent by test_rest.py."""
import json
import re


def seed_body(command):
    """The JSON text a command sends: what stands between json=' and the last '."""
    return command[command.index("json='") + len("json='"):command.rindex("'")]


def seed_json(command):
    """The body of a command as a dict, its // comments dropped (the manual's state example has one)."""
    return json.loads(re.sub(r"//[^\n]*", "", seed_body(command)))


# ---- seed 000's commands, exactly as printed (000_*.txt) ------------------------------------------------

SEED_SCOPE = """curl -X PUT http://localhost:9999/flamegraph --data-urlencode json='
{
"cmd": {
"bin": "/opt/gala-gopher/extend_probes/stackprobe",
"check_cmd": "",
"probe": [
"oncpu",
"offcpu"
]
},
"snoopers": {
"proc_id": [
101,
102
],
"proc_name": [
{
"comm": "app1",
"cmdline": "",
"debugging_dir": ""
},
{
"comm": "app2",
"cmdline": "",
"debugging_dir": ""
}
],
"pod_id": [
"pod1",
"pod2"
],
"container_id": [
"container1",
"container2"
]
}
}'"""

SEED_PARAMS = """curl -X PUT http://localhost:9999/flamegraph --data-urlencode json='
{
"params": {
"report_period": 180,
"sample_period": 180,
"metrics_type": [
"raw",
"telemetry"
]
}
}'"""

SEED_STATE = """curl -X PUT http://localhost:9999/flamegraph --data-urlencode json='
{
"state": "running" // optional: running, stopped
}'"""

SEED_GET = "curl -X GET http://localhost:9999/flamegraph"

# the reply the manual prints for SEED_GET after the three PUTs above: their three bodies in one object
# (the manual's text misses a comma after "check_cmd": "", so it is not JSON as printed)
SEED_GET_REPLY = {**seed_json(SEED_SCOPE), **seed_json(SEED_PARAMS), "state": "running"}

SEED_BASIC = ("""curl -X PUT http://localhost:9999/flamegraph -d json='{ "cmd": {"probe": ["oncpu"] }, "snoopers": """
              """{"proc_name": [{ "comm": "cadvisor"}] }, "state": "running"}'""")

SEED_ADVANCED = ("""curl -X PUT http://localhost:9999/flamegraph -d json='{ "cmd": { "check_cmd": "", "probe": """
                 """["oncpu", "offcpu", "mem"] }, "snoopers": { "proc_name": [{ "comm": "cadvisor", "cmdline": "", """
                 """"debugging_dir": "" }, { "comm": "java", "cmdline": "", "debugging_dir": "" }] }, "params": { """
                 """"perf_sample_period": 100, "svg_period": 300, "svg_dir": "/var/log/gala-gopher/stacktrace", """
                 """"flame_dir": "/var/log/gala-gopher/flamegraph", "pyroscope_server": "localhost:4040", """
                 """"multi_instance": 1, "native_stack": 0 }, "state": "running"}'""")

SEED_TPROF_START = ("""curl -X PUT http://<gopher-node-ip>:9999/tprofiling -d json='{"cmd": {"probe": ["oncpu", """
                    """"syscall_file", "syscall_net", "syscall_sched", "syscall_lock"]}, "snoopers": {"proc_name": """
                    """[{"comm": "java"}]}, "state": "running"}'""")

SEED_TPROF_STOP = """curl -X PUT http://<gopher-node-ip>:9999/tprofiling -d json='{"state": "stopped"}'"""

SEED_SLI = ("""curl -X PUT http://localhost:9999/sli -d json='{"params":{"report_period":15}, "snoopers":"""
            """{"container_id":[{"container_id": "abcd12345678","abcd87654321"}]}, "state":"running"}'""")
