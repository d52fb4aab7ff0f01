#!/usr/bin/env python3
"""Holds docs/cli.md to the binary's --help, both ways.

usage: check_cli_docs.py REDUCE_VERIFY DOCS_CLI_MD

For the top level and every subcommand the top-level --help lists, the options that
`reduce-verify [SUBCOMMAND] --help` prints (every name: `-o,--output` gives -o and --output)
must each appear in the first cell of a row of the option table in docs/cli.md's section for
that subcommand (`## \`golden\``, ...; the top level is `## \`reduce-verify\``), and every
option such a row names must exist in --help. -h,--help, which every subcommand has, is left
out. Exits 1 naming every missing or extra option, 0 when the two agree.
"""
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def help_text(tool, *args):
    done = subprocess.run([tool, *args, "--help"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        sys.exit(f"{' '.join([tool, *args])} --help exited {done.returncode}: {done.stderr}")
    return done.stdout


def help_options(text):
    """The option names of a CLI11 --help text: lines of the Options sections that start
    (after indentation) with a dash, as '-o,--output TEXT'."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"^\s+(-[^\s]+)", line)
        if m:
            names.update(n for n in m.group(1).split(",") if n.startswith("-"))
    return names - {"-h", "--help"}


def subcommands(text):
    names, inside = [], False
    for line in text.splitlines():
        if line.startswith("Subcommands:"):
            inside = True
        elif inside and re.match(r"^  \S", line):
            names.append(line.split()[0])
        elif inside and line and not line.startswith(" "):
            inside = False
    return names


def doc_sections(markdown):
    """{section name: set of options its table rows name in their first cell}."""
    sections, current = {}, None
    for line in markdown.splitlines():
        heading = re.match(r"^## `([\w-]+)`\s*$", line)
        if heading:
            current = heading.group(1)
            sections[current] = set()
        elif line.startswith("## "):
            current = None
        elif current and line.startswith("| `"):
            first_cell = re.split(r"(?<!\\)\|", line)[1]
            sections[current].update(OPTION.findall(first_cell))
    return sections


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tool, docs_path = sys.argv[1], sys.argv[2]
    with open(docs_path, encoding="utf-8") as f:
        documented = doc_sections(f.read())
    top = help_text(tool)
    commands = [("reduce-verify", [])] + [(name, [name]) for name in subcommands(top)]
    if len(commands) < 2:
        sys.exit(f"found no subcommands in `{tool} --help`")
    problems = []
    for section, args in commands:
        have = help_options(help_text(tool, *args))
        if section not in documented:
            problems.append(f"{docs_path} has no section '## `{section}`'")
            continue
        said = documented[section]
        for name in sorted(have - said):
            problems.append(f"{section}: {name} is in --help but not in {docs_path}")
        for name in sorted(said - have):
            problems.append(f"{section}: {name} is in {docs_path} but not in --help")
    for section in sorted(set(documented) - {s for s, _ in commands}):
        problems.append(f"{docs_path}: section '{section}' is no subcommand of --help")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{docs_path} names every option of {len(commands)} commands' --help, and no other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
