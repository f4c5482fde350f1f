#!/usr/bin/env python3
"""include_cycles.py - finds import cycles between the project's own files: a module is x.c with its
x.h; module A depends on module B when A's .c or .h includes B's header, directly or through headers
that have no .c of their own (types and inline helpers: they call nothing, so they are looked through,
not counted as modules). Prints every cycle (a strongly connected set of two or more modules) and exits
1 when there is one. Also checks the layers: ipc/ and schema/ include nothing of probes/ or supervisor/,
probes/ nothing of supervisor/ (and the supervisor nothing of a probe's own folder but its contract.c);
a crossing is printed and exits 1 too.
With --objects DIR (a build's obj/ folder) it also checks calls: a file depends on another when its object
uses a symbol the other defines (nm); a cycle there is two files calling each other even through a
header they share (supervisor.h). --allow PREFIX (repeatable) leaves out call cycles whose files all
start with PREFIX.
  scripts/include_cycles.py [--objects DIR [--allow PREFIX]...] [ROOT]   (ROOT: default the repository)"""
import os
import re
import sys

# The Makefile's -I directories, searched after the including file's own directory.
INCLUDE_DIRS = ["ipc", "schema", "probes/lib", "bpf", "supervisor", "supervisor/rest", "supervisor/export"]
SOURCE_DIRS = ["ipc", "schema", "probes", "supervisor", "tools", "bpf"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    for top in SOURCE_DIRS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h")) and not f.endswith("_test.c"):
                    yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, including, name):
    for d in [os.path.dirname(including)] + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None  # system or generated (build/gen) header


def module(path):
    m = path[:-2]
    return m[:-4] if m.endswith(".bpf") else m


# (files under this prefix, may not include a header under any of these prefixes)
LAYERS = [("ipc/", ("probes/", "supervisor/")), ("schema/", ("probes/", "supervisor/")), ("probes/", ("supervisor/",)),
          ("supervisor/", ("probes/",)), ("tools/", ("supervisor/",))]


# Crossings made on purpose: stackprobe's [Pod]/[Con] frames name containers with the supervisor's own
# identity resolver (supervisor/identity.c is linked into it), so that both name them alike.
LAYER_EXCEPTIONS = {("probes/stackprobe/profile.c", "supervisor/identity.h")}


def layer_violations(root):
    out = []
    for f in sorted(sources(root)):
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE_RE.findall(text):
            p = resolve(root, f, name)
            if not p:
                continue
            for prefix, banned in LAYERS:
                if (f.startswith(prefix) and p.startswith(banned) and not p.startswith(prefix)
                        and (f, p) not in LAYER_EXCEPTIONS):
                    out.append("layer: %s includes %s" % (f, p))
    return out


def graph(root):
    files = sorted(sources(root))
    has_c = {module(f) for f in files if f.endswith(".c")}
    direct = {}
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        a = module(f)
        direct.setdefault(a, set())
        for name in INCLUDE_RE.findall(text):
            p = resolve(root, f, name)
            if p and p.endswith(".h") and module(p) != a:
                direct[a].add(module(p))
    edges = {}
    for a in direct:
        if a not in has_c:
            continue
        seen, todo, out = set(), list(direct[a]), set()
        while todo:
            b = todo.pop()
            if b in seen or b == a:
                continue
            seen.add(b)
            if b in has_c:
                out.add(b)
            else:
                todo.extend(direct.get(b, ()))
        edges[a] = out
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of two or more modules, each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def symbol_graph(objdir, root):
    """object file (relative to objdir, without .o) -> the objects defining the symbols it uses."""
    import subprocess
    defs, uses = {}, {}
    for d, _, files in os.walk(objdir):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), objdir)
            if not f.endswith(".o") or f.endswith(".bpf.o") or not rel.startswith(tuple(SOURCE_DIRS)):
                continue
            if not os.path.isfile(os.path.join(root, rel[:-2] + ".c")):
                continue  # left from a source that is gone
            out = subprocess.run(["nm", "-g", os.path.join(d, f)], capture_output=True, text=True,
                                 check=True).stdout
            mod = rel[:-2]
            defs[mod], uses[mod] = set(), set()
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "U":
                    uses[mod].add(parts[1])
                elif len(parts) == 3 and parts[1] in "TDBRCV":
                    defs[mod].add(parts[2])
    owner = {}
    for mod in sorted(defs):
        for sym in defs[mod]:
            owner.setdefault(sym, mod)
    return {m: {owner[s] for s in uses[m] if s in owner and owner[s] != m} for m in uses}


def main(argv):
    args = argv[1:]
    objdir, allow = None, []
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--objects":
            objdir = args.pop(0)
        elif opt == "--allow":
            allow.append(args.pop(0))
        else:
            print("unknown option " + opt)
            return 2
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    calls = []
    if objdir:
        for comp in cycles(symbol_graph(objdir, root)):
            if not all(any(m.startswith(a) for a in allow) for m in comp):
                calls.append(comp)
                print("call cycle: " + " <-> ".join(comp))
    edges = graph(root)
    found = cycles(edges)
    for comp in found:
        print("include cycle: " + " <-> ".join(comp))
        for a in comp:
            print("  %s includes %s" % (a, ", ".join(sorted(b for b in edges[a] if b in comp))))
    crossings = layer_violations(root)
    for line in crossings:
        print(line)
    print("%d modules, %d include cycles, %d layer crossings%s" % (
        len(edges), len(found), len(crossings), ", %d call cycles" % len(calls) if objdir else ""))
    return 1 if found or crossings or calls else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
