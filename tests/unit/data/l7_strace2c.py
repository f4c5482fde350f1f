#!/usr/bin/env python3
"""l7_strace2c.py - turns an strace -f -xx -s 65535 log of a client (kcat...) into the C steps of an
l7probe unit test: every chunk sent or received on the connections to PORT, in order.

  strace -f -qq -xx -s 65535 -e trace=connect,read,write,sendmsg,recvmsg,readv,writev,sendto,recvfrom \
      -o T kcat -b 127.0.0.1:PORT ...
  tests/unit/data/l7_strace2c.py T PORT NAME > part of a header"""
import re
import sys

CALL = re.compile(r'^(\d+)\s+(\w+)\((\d+),\s*(.*)\)\s+=\s+(-?\d+)')
RESUMED = re.compile(r'^\d+\s+<\.\.\. \w+ resumed>(.*)$')
STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
SEND = ('sendmsg', 'write', 'writev', 'sendto')
RECV = ('recvmsg', 'read', 'readv', 'recvfrom')


def chunks(path, port):
    conns, cur, unfinished = [], {}, {}
    for line in open(path):
        line = line.rstrip('\n')
        pid = line.split(' ', 1)[0]
        if line.endswith('<unfinished ...>'):
            unfinished[pid] = line[:-len('<unfinished ...>')]
            continue
        r = RESUMED.match(line)
        if r:
            line = unfinished.pop(pid, '') + r.group(1)
        m = CALL.match(line)
        if not m:
            continue
        _, call, fd, args, ret = m.groups()
        fd, ret = int(fd), int(ret)
        if call == 'connect':
            if 'htons(%s)' % port in args:
                conns.append([])
                cur[fd] = len(conns) - 1
            else:
                cur.pop(fd, None)
            continue
        if fd not in cur or ret <= 0 or call not in SEND + RECV:
            continue
        data = b''.join(bytes.fromhex(s.replace('\\x', '')) for s in STR.findall(args))[:ret]
        conns[cur[fd]].append(('REQ' if call in SEND else 'RESP', data))
    return conns


def main():
    path, port, name = sys.argv[1:4]
    for i, c in enumerate(chunks(path, port)):
        print('/* %s, connection %d: %d chunks */' % (name, i, len(c)))
        print('#define %s_%d \\' % (name.upper(), i))
        for f, d in c:
            s = ''.join('\\x%02x' % b for b in d)
            print('\t%s("%s"), \\' % (f, s))
        print()


if __name__ == '__main__':
    main()
