#!/usr/bin/env python3
"""l7_resolver.py - glibc's stub resolver against dnsmasq on 127.0.0.1:53, in a network and mount
namespace of its own (run under `unshare -m -n`): its own loopback, its own /etc/resolv.conf (bind
mounted), nothing of the host touched. getaddrinfo(AF_UNSPEC) sends the A and AAAA queries with one
sendmmsg and reads the answers with recvfrom.

Usage: l7_resolver.py TMPDIR N_OK N_BAD. Prints {"ready": pid, "dnsmasq": pid}, waits for "go" on
stdin, makes N_OK lookups of ok.example.test (an A and an AAAA record) and N_BAD of names that do not exist, prints
{"lookups": .., "queries": .., "nxdomain": ..}, then waits for "bye"."""
import json
import os
import socket
import subprocess
import sys
import time


def main():
    tmp, n_ok, n_bad = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    conf = os.path.join(tmp, "resolv.conf")
    with open(conf, "w") as f:
        f.write("nameserver 127.0.0.1\noptions attempts:1 timeout:3\n")
    # unshare -m makes the mounts private: the host's /etc/resolv.conf stays as it is
    subprocess.run(["mount", "--bind", conf, "/etc/resolv.conf"], check=True)
    os.chmod(tmp, 0o755)  # dnsmasq runs as nobody
    dns = subprocess.Popen(["dnsmasq", "--keep-in-foreground", "--port=53", "--listen-address=127.0.0.1",
                            "--bind-interfaces", "--no-resolv", "--no-hosts", "--address=/ok.example.test/192.0.2.7",
                            "--address=/ok.example.test/2001:db8::7",
                            "--local=/example.test/", "--pid-file=%s/dnsmasq.pid" % tmp,
                            "--log-facility=%s/dnsmasq.log" % tmp], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.getaddrinfo("ok.example.test.", 80, socket.AF_INET, socket.SOCK_STREAM)
                break
            except socket.gaierror:
                time.sleep(0.05)
        print(json.dumps({"ready": os.getpid(), "dnsmasq": dns.pid}), flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        nx = 0
        for i in range(n_ok + n_bad):
            name = "ok.example.test." if i < n_ok else "no%d.example.test." % i
            try:
                socket.getaddrinfo(name, 80, socket.AF_UNSPEC, socket.SOCK_STREAM)
            except socket.gaierror:
                nx += 1
        print(json.dumps({"lookups": n_ok + n_bad, "queries": 2 * (n_ok + n_bad), "nxdomain": 2 * nx}), flush=True)
        sys.stdin.readline()
    finally:
        dns.terminate()
        dns.wait()


if __name__ == "__main__":
    main()
