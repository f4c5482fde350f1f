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


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    readme_path, tables_path = args
    with open(readme_path) as f:
        readme = f.read()
    with open(tables_path) as f:
        tables = f.read()
    new = splice(readme, tables)
    if check:
        if new != readme:
            print("%s is stale: run `make readme`" % readme_path)
            return 1
        return 0
    if new != readme:
        with open(readme_path, "w") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
