#!/usr/bin/env python3
"""Every citation in the repository's comments and docs names something that exists.

usage: check_citations.py REPOSITORY_ROOT [--pending PATH]...

`--pending PATH` names a file another branch is adding: citations of it are listed, not
failed. Remove the flag once the file is in the tree.

Checked, over the files git tracks (or, outside a git checkout, every file under the root):
- in the comments of core/, verify/, capi/, tests/, bench/, python/, ci/, .ci/ and the
  CMake files (`//` and `/* */` in C++ and CUDA, `#` in Python, shell and CMake, Python
  docstrings), and in every Markdown file:
  - `DESIGN.md §N` (also `DESIGN §N`, and `§M` chained after it: `§2.3, §5.6`) names a
    section docs/DESIGN.md has (its headings `## N.` and `### N.M`);
  - a repository path (`core/...`, `docs/...`, `golden/...`, `README.md`, ...) names a
    tracked file or folder; `path.{a,b}` and `path{,-x}` are expanded, a path with `*`,
    `<...>` or an upper-case placeholder (`cpu-HOST.json`) is a pattern and left alone, as is
    one a command writes (after `-o`, `--report`, `=`), and a path without an extension may
    name the files of a pair (`core/rendezvous/job_directory` for its .h and .cc);
  - in comments, `see NAME` names a file (`see child_process.h`) or a symbol that appears
    outside a comment somewhere in the tree (`see agree_across_ranks`); plain lower-case
    words (`see the`) are prose;
- in Markdown, every link `[text](target)` that is not a URL resolves to a tracked file or
  folder, relative to the Markdown file, and a `#anchor` to a heading of the target.
Exits 1 listing every broken citation as FILE:LINE, 0 when there is none.
"""
import os
import re
import subprocess
import sys

SOURCE_DIRS = ("core/", "verify/", "capi/", "tests/", "bench/", "python/", "ci/", ".ci/")
TOP_FILES = ("README.md", "CONTRIBUTING.md", "LICENSE", "CMakeLists.txt", ".clang-format")
PATH = re.compile(
    r"(?<![\w./+-])((?:core|verify|capi|tests|bench|python|ci|golden|docs|\.ci)/[\w./{},*<>+-]*"
    r"|(?:README|CONTRIBUTING)\.md|CMakeLists\.txt)")
DESIGN_CITE = re.compile(r"DESIGN(?:\.md)?\s*((?:§\d+(?:\.\d+)*)(?:(?:,\s*|\s+and\s+|\s*/\s*)§\d+(?:\.\d+)*)*)")
SEE = re.compile(r"\b[Ss]ee\s+`?([A-Za-z_][\w:]*(?:\.\w+)?)(\(\))?`?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout
        # A symlink (python/README.md, the wheel's readme) is checked where it points.
        files = [f for f in out.splitlines() if os.path.isfile(os.path.join(root, f))
                 and not os.path.islink(os.path.join(root, f))]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
        files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return files


def design_sections(text):
    sections = set()
    for line in text.splitlines():
        m = re.match(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if m:
            sections.add(m.group(1))
    return sections


def slug(heading):
    """GitHub's anchor for a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def comment_lines(path, text):
    """(line number, comment text) of a source file."""
    lines = text.splitlines()
    out = []
    if path.endswith((".h", ".cc", ".cu", ".cuh", ".cpp", ".c")):
        in_block = False
        for i, line in enumerate(lines, 1):
            if in_block:
                end = line.find("*/")
                out.append((i, line if end < 0 else line[:end]))
                in_block = end < 0
                continue
            at = line.find("//")
            block = line.find("/*")
            if block >= 0 and (at < 0 or block < at):
                end = line.find("*/", block + 2)
                out.append((i, line[block + 2:] if end < 0 else line[block + 2:end]))
                in_block = end < 0
            elif at >= 0:
                out.append((i, line[at + 2:]))
    elif path.endswith((".py", ".sh", ".txt", ".cmake", ".toml", ".cfg")) or "/" not in path \
            or path.startswith(".ci/") or os.path.basename(path) in ("run",):
        in_doc = False
        for i, line in enumerate(lines, 1):
            quotes = line.count('"""') + line.count("'''")
            if in_doc or quotes:
                out.append((i, line))
                if quotes % 2 == 1:
                    in_doc = not in_doc
                continue
            at = line.find("#")
            if at >= 0:
                out.append((i, line[at + 1:]))
    return out


def expand(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(","):
        out += expand(path[:m.start()] + alt + path[m.end():])
    return out


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = set(tracked_files(root))
        self.dirs = set()
        for f in self.files:
            parts = f.split("/")[:-1]
            for k in range(1, len(parts) + 1):
                self.dirs.add("/".join(parts[:k]))
        self.basenames = {os.path.basename(f) for f in self.files}
        self._code_words = None

    def has_path(self, path):
        path = path.rstrip("/")
        if path in self.files or path in self.dirs:
            return True
        return any(f.startswith(path + ".") and "/" not in f[len(path):] for f in self.files)

    def code_words(self):
        """Every identifier that appears outside a comment in a source file."""
        if self._code_words is None:
            words = set()
            for f in self.files:
                if not f.endswith((".h", ".cc", ".cu", ".py", ".sh", ".txt", ".cmake")):
                    continue
                text = read(os.path.join(self.root, f))
                for line in text.splitlines():
                    code = line.split("//")[0] if f.endswith((".h", ".cc", ".cu")) else \
                        line.split("#")[0]
                    words.update(re.findall(r"[A-Za-z_]\w*", code))
            self._code_words = words
        return self._code_words


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def check_paths(tree, where, text, problems):
    for m in PATH.finditer(text):
        raw = m.group(1).rstrip(".,;:)`'\"")
        if "*" in raw or "<" in raw or ">" in raw or raw.endswith("/..."):
            continue  # a pattern: `exact_*_kernel.cu`, `rank-<r>`
        for path in expand(raw):
            path = path.rstrip(".")
            if not path or tree.has_path(path):
                continue
            if re.search(r"(^|[/-])[A-Z]+([.-]|$)", path):
                continue  # a placeholder: `cpu-HOST.json`
            if re.search(r"(-o|--output|--dump|--report|--junit|=)\s*$", text[:m.start()]):
                continue  # a file a command writes
            problems.append(f"{where}: no file or folder '{path}' in the repository")


def check_design(sections, where, text, problems):
    for chain in DESIGN_CITE.findall(text):
        for number in re.findall(r"§(\d+(?:\.\d+)*)", chain):
            if number not in sections:
                problems.append(f"{where}: docs/DESIGN.md has no §{number}")


def check_see(tree, where, text, problems):
    for name, _ in SEE.findall(text):
        if "." in name:  # a file name
            if name.split(".")[-1].isalpha() and name not in tree.basenames \
                    and not tree.has_path(name):
                problems.append(f"{where}: 'see {name}': no such file in the repository")
            continue
        if name.islower() and "_" not in name:
            continue  # prose: "see the", "see how"
        last = name.split("::")[-1]
        if last not in tree.code_words():
            problems.append(f"{where}: 'see {name}': no symbol '{last}' outside comments")


def check_links(tree, md_path, text, anchor_cache, problems):
    folder = os.path.dirname(md_path)
    for i, line in enumerate(text.splitlines(), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL (https:, mailto:)
            path, _, anchor = target.partition("#")
            resolved = md_path if not path else os.path.normpath(os.path.join(folder, path))
            where = f"{md_path}:{i}"
            if not tree.has_path(resolved) or resolved.startswith(".."):
                problems.append(f"{where}: link '{target}' names no file of the repository")
                continue
            if anchor and resolved.endswith(".md") and resolved in tree.files:
                if resolved not in anchor_cache:
                    anchor_cache[resolved] = anchors(read(os.path.join(tree.root, resolved)))
                if anchor not in anchor_cache[resolved]:
                    problems.append(f"{where}: link '{target}': {resolved} has no heading "
                                    f"'#{anchor}'")


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    root, pending = args[0], []
    rest = args[1:]
    while rest:
        if rest[0] != "--pending" or len(rest) < 2:
            sys.exit(__doc__)
        pending.append(rest[1])
        rest = rest[2:]
    tree = Tree(root)
    for path in pending:
        if path in tree.files:
            sys.exit(f"--pending {path}: it is in the tree now; remove the flag")
    design = os.path.join(tree.root, "docs/DESIGN.md")
    if "docs/DESIGN.md" not in tree.files:
        sys.exit("no docs/DESIGN.md")
    sections = design_sections(read(design))
    problems, anchor_cache, checked = [], {}, 0
    for f in sorted(tree.files):
        text = read(os.path.join(tree.root, f))
        if f.endswith(".md"):
            checked += 1
            for i, line in enumerate(text.splitlines(), 1):
                prose = re.sub(r"\]\([^)\s]*\)", "]", line)  # link targets: check_links
                check_paths(tree, f"{f}:{i}", prose, problems)
                check_design(sections, f"{f}:{i}", line, problems)
            check_links(tree, f, text, anchor_cache, problems)
        elif f.startswith(SOURCE_DIRS) or f == "CMakeLists.txt":
            checked += 1
            for i, comment in comment_lines(f, text):
                check_paths(tree, f"{f}:{i}", comment, problems)
                check_design(sections, f"{f}:{i}", comment, problems)
                check_see(tree, f"{f}:{i}", comment, problems)
    problems = list(dict.fromkeys(problems))
    waiting = [p for p in problems if any(f"'{path}'" in p or f"'{os.path.basename(path)}'" in p
                                          for path in pending)]
    problems = [p for p in problems if p not in waiting]
    for p in waiting:
        print("pending:", p)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} broken citations in {checked} files")
        return 1
    print(f"every citation of {checked} files names something that exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
