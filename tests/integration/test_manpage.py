"""test_manpage.py - the manual pages gala-gopher(8) and gala-gopher.conf(5) (build/pkg/*.gz, installed by
make install and the package): groff and man report no warnings; gala-gopher(8) lists every
configuration key of README.md's table, every REST route and HTTP path the README names, and every
option of --help; gala-gopher.conf(5) lists every key too."""
import gzip
import os
import re
import subprocess

from harness import BUILD, GOPHER, ROOT, check

PAGE = os.path.join(BUILD, "pkg", "gala-gopher.8.gz")
PAGE5 = os.path.join(BUILD, "pkg", "gala-gopher.conf.5.gz")
ENV = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="200")


def build_page(page=PAGE):
    r = subprocess.run(["make", "-s", "--no-print-directory", "BUILD=" + BUILD, page], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, "make %s: %s" % (page, r.stderr[-2000:]))
    with gzip.open(page, "rt", encoding="utf-8") as f:
        return f.read()


def rendered(page=PAGE):
    r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True, env=ENV, timeout=60)
    check(r.returncode == 0 and not r.stderr.strip(), "man --warnings: %s" % r.stderr[-2000:])
    return re.sub(r".\x08", "", r.stdout)  # no overstrike bold/underline


def test_manpage_no_warnings():
    src = build_page()
    r = subprocess.run(["groff", "-ww", "-man", "-z"], input=src, capture_output=True, text=True, env=ENV, timeout=60)
    check(r.returncode == 0 and not r.stderr.strip(), "groff -ww: %s" % r.stderr[-2000:])
    text = rendered()
    for sect in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "CONFIGURATION", "REST API", "WEB PAGE", "FILES",
                 "SIGNALS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        check(re.search(r"^%s$" % sect, text, re.M), "section %s missing" % sect)
    with open(os.path.join(ROOT, "VERSION")) as f:
        check(f.read().strip() in text, "the version is on the page")
    src = build_page(PAGE5)
    r = subprocess.run(["groff", "-ww", "-man", "-z"], input=src, capture_output=True, text=True, env=ENV, timeout=60)
    check(r.returncode == 0 and not r.stderr.strip(), "groff -ww gala-gopher.conf.5: %s" % r.stderr[-2000:])
    text = rendered(PAGE5)
    for sect in ("NAME", "SYNOPSIS", "DESCRIPTION", "KEYS", "PROBES", "FILES", "SEE ALSO"):
        check(re.search(r"^%s$" % sect, text, re.M), "gala-gopher.conf(5): section %s missing" % sect)


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_manpage_lists_readme_keys_routes_and_options():
    build_page()
    build_page(PAGE5)
    text = re.sub(r"\s+", " ", rendered())
    text5 = re.sub(r"\s+", " ", rendered(PAGE5))
    # every key of the configuration table, with its section
    sect = readme().split("\n## Configuration", 1)[1].split("\n### ", 1)[0]
    keys = []
    for line in sect.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        names = re.findall(r"`([^`]+)`", cell)
        section = names[0].split(".")[0]
        for n in names:
            n = n.rstrip(".*")
            keys.append(n if "." in n or n.endswith(".*") else section + "." + n)
            check(n in text, "configuration key %s (README) is not in the manual page" % n)
            check(n in text5, "configuration key %s (README) is not in gala-gopher.conf(5)" % n)
    check(len(keys) > 50, "the README's configuration table was not found (%d keys)" % len(keys))
    # every HTTP route the README names
    routes = set()
    text_readme = readme()
    for m in re.finditer(r"\b(GET|PUT|POST) (/[A-Za-z0-9_/<>.-]*)", text_readme):
        # requests l7probe reports (api names, span names: "GET /users/{id}", "POST /pkg.Service/Method")
        # are examples of other programs' routes, not the agent's
        after = text_readme[m.end():m.end() + 1]
        before = text_readme[max(m.start() - 1, 0):m.start()]
        if after == "{" or before == '"' or "." in m.group(2).strip("/").split("/")[0]:
            continue
        routes.add((m.group(1), re.sub(r"<[^>]*>", "", m.group(2)).rstrip("/.") or "/"))
    check(("GET", "/metrics") in routes and ("PUT", "/") in routes and ("GET", "/ui/api/status") in routes,
          "routes found in the README: %r" % sorted(routes))
    rest_names = set(re.findall(r"\b([a-z0-9_]+) \([a-z0-9_]+\)", text.split("REST names and binaries:", 1)[1][:1200]))
    check({"baseinfo", "flamegraph", "l7", "tcp"} <= rest_names, "REST names on the page: %r" % rest_names)
    for method, path in sorted(routes):
        first = path.strip("/").split("/")[0]
        if first in rest_names and path.strip("/") == first:
            path = "/"  # an example of PUT|GET /<probe>: the page has the form and the name
        check(re.search(re.escape(method) + r" " + re.escape(path), text),
              "route %s %s (README) is not in the manual page" % (method, path))
    # every option of --help
    out = subprocess.run([GOPHER, "--help"], capture_output=True, text=True, timeout=10).stdout
    opts = re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", out)
    check(len(opts) >= 8, "options in --help: %r" % opts)
    for o in opts:
        check(o in text, "option %s (--help) is not in the manual page" % o)
