#!/usr/bin/env python3
"""The house drawn from the includes (issue 40): every `#include "..."` of the C++ folders named
in CONTRIBUTING.md's map stays within what that folder's row says it may include, and the
folders' include graph has no cycle.

    python3 tests/docs/check_layers.py [REPOSITORY]      exit 0, or 1 naming each violation

A row's "may include" cell is read for its backquoted folders: `core` is core/ itself, `core/*`
every folder under core/, "everything above" every folder of an earlier row, "anything" any.
Includes of a folder's own files, of generated headers (core/build_info) and of system or
third-party headers (<...>) are not edges. Prints the folder graph it checked."""

import pathlib
import re
import sys

SOURCES = (".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_map(contributing):
    """[(folder, target, allowed set or "any", shares_target)] in the map's order."""
    text = contributing.read_text(encoding="utf-8")
    start = text.index("## Map of the house")
    table = text[start:text.index("\n## ", start + 1)]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 5 or not cells[1].startswith("`"):
            continue
        first = re.findall(r"`([^`]+)`", cells[1])
        folder = first[0].rstrip("/")
        if not re.fullmatch(r"(core|verify|capi)(/[a-z_]+)*", folder):
            continue  # python/, tests/, bench/, cmake/ and the data folders
        target = next((t for t in first[1:] if t.startswith("rv_") or t == "reduce_verify_c"
                       or t == "reduce-verify"), folder)
        may = cells[3]
        if "anything" in may:
            allowed = "any"
        elif "everything above" in may:
            allowed = {f for f, *_ in rows}
        else:
            allowed = set()
            for name in re.findall(r"`([^`]+)`", may):
                name = name.rstrip("/")
                if name.endswith("/*"):
                    allowed.add(name)  # a prefix rule
                elif re.fullmatch(r"(core|verify|capi)(/[a-z_]+)*", name):
                    allowed.add(name)
        rows.append((folder, target, allowed))
    return rows


def owner(path, folders):
    """The map's folder that holds `path` (the longest that is a prefix)."""
    best = None
    for folder in folders:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def permits(allowed, folder):
    if allowed == "any":
        return True
    for rule in allowed:
        if rule.endswith("/*"):
            base = rule[:-2]
            if folder == base or folder.startswith(base + "/"):
                return True
        elif rule == folder:
            return True
    return False


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan's)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2])
    rows = read_map(root / "CONTRIBUTING.md")
    folders = [f for f, *_ in rows]
    allowed = {f: a for f, _, a in rows}
    problems, graph, edges = [], {}, {}
    for folder in folders:
        for path in sorted((root / folder).glob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            relative = path.relative_to(root).as_posix()
            for included in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
                target = owner(included, folders)
                if target is None or target == folder or target == "core/build_info":
                    continue
                edges.setdefault((folder, target), relative)
                if not permits(allowed[folder], target):
                    problems.append(f"{relative} includes {included}: {folder}/ may not include "
                                    f"{target}/ (CONTRIBUTING.md's map)")
                graph.setdefault(folder, set()).add(target)
    for component in cycles(graph):
        problems.append("the folders' include graph has a cycle through " + ", ".join(component))
    for (a, b), where in sorted(edges.items()):
        print(f"{a} -> {b}   (first: {where})")
    for problem in problems:
        print("LAYER: " + problem, file=sys.stderr)
    print(f"{len(folders)} folders, {len(edges)} edges, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
