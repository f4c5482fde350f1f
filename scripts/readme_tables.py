#!/usr/bin/env python3
"""readme_tables.py - puts the probe contract tables (build/tools/contract_doc's output) into README.md
between its markers: `readme_tables.py README.md TABLES` rewrites, `--check` only compares (exit 1 when
README.md is stale)."""
import sys

BEGIN = "<!-- contract-tables:begin -->\n"
END = "<!-- contract-tables:end -->\n"


def splice(readme, tables):
    a = readme.index(BEGIN) + len(BEGIN)
    b = readme.index(END)
    return readme[:a] + tables + readme[b:]


def update(path, old, new, check, stale):
    """With check: 1 (and the message stale) when new differs from old, else 0; without: new written to
    path when it differs, 0. For `make readme` and the tests that catch a stale README."""
    if check:
        if new != old:
            print(stale)
            return 1
        return 0
    if new != old:
        with open(path, "w") as f:
            f.write(new)
    return 0


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    readme_path, tables_path = args
    with open(readme_path) as f:
        readme = f.read()
    with open(tables_path) as f:
        tables = f.read()
    return update(readme_path, readme, splice(readme, tables), check, "%s is stale: run `make readme`" % readme_path)


if __name__ == "__main__":
    sys.exit(main())
