#!/usr/bin/env python3
"""l7_replay.py - records a client's socket traffic with strace and turns it into the input of
build/bench/l7_replay, to check l7probe's parsers against real servers with known request counts.

  bench/l7_replay.py OUT -- CMD ARGS...     run CMD under strace, write OUT (replay lines)

strace keeps at most 64 KiB of each call's bytes: a longer call becomes a captured prefix and a gap,
as the probe's capture would. Requests are what the client sends, responses what it receives."""
import os
import re
import subprocess
import sys
import tempfile

CALL = re.compile(r'^(\d+)\s+([\d.]+)\s+(\w+)\((\d+),\s*(.*)$')
SOCKET = re.compile(r'^(\d+)\s+([\d.]+)\s+socket\((.*)\)\s+=\s+(\d+)')
RESUMED = re.compile(r'^(\d+)\s+([\d.]+)\s+<\.\.\. (\w+) resumed>(.*)$')
STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
IOV = re.compile(r'iov_base="((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
VECTORED = {'readv', 'writev', 'sendmsg', 'recvmsg', 'sendmmsg'}
RET = re.compile(r'\)\s+=\s+(-?\d+)')
SEND = {'write', 'writev', 'sendto', 'sendmsg', 'sendmmsg'}
RECV = {'read', 'readv', 'recvfrom', 'recvmsg'}


def main():
    if len(sys.argv) < 4 or sys.argv[2] != '--':
        sys.exit(__doc__)
    out, cmd = sys.argv[1], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        tr = os.path.join(tmp, 'trace')
        subprocess.run(['strace', '-f', '-qq', '-ttt', '-xx', '-s', '65536', '-o', tr,
                        '-e', 'trace=socket,connect,close,read,write,readv,writev,sendto,recvfrom,sendmsg,'
                        'recvmsg,sendmmsg'] + cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        convert(tr, out)


def convert(tr, out):
    socks = {}       # (pid-group, fd) -> [conn id, 'tcp'|'udp']
    pending = {}     # pid -> start of an unfinished call
    next_id = 1
    lines = 0
    with open(tr) as f, open(out, 'w') as o:
        for raw in f:
            raw = raw.rstrip('\n')
            m = RESUMED.match(raw)
            if m:
                start = pending.pop(m.group(1), None)
                if start is None:
                    continue
                raw = start + m.group(4)
            elif raw.endswith('<unfinished ...>'):
                pending[raw.split()[0]] = raw[:-len('<unfinished ...>')]
                continue
            m = SOCKET.match(raw)
            if m:
                if 'AF_INET' in m.group(3):
                    socks[int(m.group(4))] = [0, 'udp' if 'SOCK_DGRAM' in m.group(3) else 'tcp']
                continue
            m = CALL.match(raw)
            if not m:
                continue
            _, ts, call, fd, rest = m.groups()
            fd = int(fd)
            ret = RET.search(rest)
            ret = int(ret.group(1)) if ret else -1
            if call == 'close':
                socks.pop(fd, None)
                continue
            if fd not in socks:
                continue
            if call == 'connect':
                socks[fd][0] = next_id
                next_id += 1
                continue
            if ret <= 0 or (call not in SEND and call not in RECV):
                continue
            if socks[fd][0] == 0:
                socks[fd][0] = next_id
                next_id += 1
            # the data only: iovecs' bases, or the first string (not an address after it)
            strs = IOV.findall(rest) if call in VECTORED else STR.findall(rest)[:1]
            data = b''.join(bytes.fromhex(s.replace('\\x', '')) for s, _ in strs)
            if call == 'sendmmsg':
                ret = len(data)  # the count of messages is returned; each is whole here
            data = data[:ret]
            o.write('%d %s %s %d %d %s\n' % (socks[fd][0], socks[fd][1], 'req' if call in SEND else 'resp',
                                               int(float(ts) * 1e9), ret, data.hex()))
            lines += 1
    print('%s: %d chunks on %d connections' % (out, lines, next_id - 1), file=sys.stderr)


if __name__ == '__main__':
    main()
