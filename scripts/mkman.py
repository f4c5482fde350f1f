#!/usr/bin/env python3
"""mkman.py - builds the manual page gala-gopher(8) from scripts/packaging/gala-gopher.8.in: the
CONFIGURATION keys come from README.md's configuration table (one source for both), so the page lists
every key the README does. usage: mkman.py TEMPLATE README VERSION OUT"""
import os
import re
import sys
import time


def roff_text(md):
    """One markdown table cell as roff text: `code` bold, backslashes escaped, no line starting with a dot."""
    out = []
    for i, part in enumerate(re.split(r"`([^`]*)`", md)):
        part = part.replace("\\", "\\e")
        if i % 2:
            out.append("\\fB" + part.replace("-", "\\-") + "\\fR")
        else:
            out.append(part)
    text = "".join(out).strip()
    return "\\&" + text if text.startswith((".", "'")) else text


def config_rows(readme):
    """The rows (key, default, meaning) of the table under '## Configuration'."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    sect = text.split("\n## Configuration", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    rows = []
    for line in sect.splitlines():
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| section.key"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) == 3:
            rows.append(cells)
    if not rows:
        raise SystemExit("mkman: no configuration table in %s" % readme)
    return rows


def main():
    tmpl, readme, version, out = sys.argv[1:5]
    lines = []
    for key, default, meaning in config_rows(readme):
        lines.append(".TP")
        lines.append(roff_text(key))
        desc = roff_text(meaning)
        if default:
            desc = (desc + " " if desc else "") + "(default: " + roff_text(default) + ")"
        lines.append(desc or "(see the README)")
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", os.path.getmtime(readme)))
    with open(tmpl, encoding="utf-8") as f:
        page = f.read()
    page = (page.replace("@CONFIG_KEYS@", "\n".join(lines)).replace("@VERSION@", version)
            .replace("@DATE@", time.strftime("%Y-%m-%d", time.gmtime(epoch))))
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
