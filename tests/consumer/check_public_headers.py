#!/usr/bin/env python3
"""Holds cmake/public_headers.cmake to the source tree (CTest public_headers_closure).

  check_public_headers.py SOURCE_DIR --entry H... [--included H...] [--generated H...]

The public include tree is the include closure of the entry headers: every header they include
with `#include "core/…"`, transitively. The listed headers (entries and included) must be
exactly that closure. Fails, naming each header, on:
  - a header the closure needs that is not listed (and the header that includes it);
  - a listed header that no entry reaches, or one listed twice, or one that does not exist;
  - a listed *_detail.h;
  - a listed header that includes a CUDA header (cuda_runtime*.h, cuda.h, cuda_fp16.h,
    cuda_bf16.h, or nccl.h, which includes cuda_runtime.h), or whose code, as a host compiler
    sees it (comments and `#if defined(__CUDACC__)` branches left out), names a CUDA type or
    qualifier (cudaStream_t and the other cuda*_t, __global__, __device__, __host__,
    __shared__);
  - a listed header that includes a repository header by any path other than "core/…" (it
    would not resolve in the installed tree).
Generated headers (--generated) are part of the tree without being in the source folder.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
CUDA_HEADERS = re.compile(r'^(cuda_runtime(_api)?\.h|cuda\.h|cuda_fp16\.h|cuda_bf16\.h|nccl\.h)$')
CUDA_NAMES = re.compile(r'\b(cuda[A-Z]\w*_t|__global__|__device__|__host__|__shared__)\b')
CUDACC = re.compile(r'^\s*#\s*(if\s+defined\s*\(?\s*__CUDACC__\s*\)?|ifdef\s+__CUDACC__)\s*$')
NOT_CUDACC = re.compile(r'^\s*#\s*(if\s+!\s*defined\s*\(?\s*__CUDACC__\s*\)?|ifndef\s+__CUDACC__)\s*$')


def strip_comments(text):
    """The text with // and /* */ comments blanked (line breaks kept) and string literals
    emptied, so that only code is searched."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                i += 1
        elif text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append('\n' * text.count('\n', i, end))
            i = end
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return ''.join(out)


def host_lines(text):
    """The lines a host compiler sees: those inside a __CUDACC__-only branch are dropped."""
    stack = []  # per open conditional: True while in a branch only nvcc compiles
    for line in text.split('\n'):
        stripped = line.strip()
        if CUDACC.match(line):
            stack.append(True)
            continue
        if NOT_CUDACC.match(line):
            stack.append(False)
            continue
        if re.match(r'#\s*if', stripped):
            stack.append(False)
        elif re.match(r'#\s*else', stripped) and stack:
            stack[-1] = not stack[-1]
            continue
        elif re.match(r'#\s*elif', stripped) and stack:
            stack[-1] = False  # scanned, whatever its condition: the stricter reading
        elif re.match(r'#\s*endif', stripped) and stack:
            stack.pop()
            continue
        if not any(stack):
            yield line


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('source_dir')
    parser.add_argument('--entry', nargs='+', required=True)
    parser.add_argument('--included', nargs='*', default=[])
    parser.add_argument('--generated', nargs='*', default=[])
    args = parser.parse_args()

    errors = []
    listed = args.entry + args.included
    for h in sorted({h for h in listed if listed.count(h) > 1}):
        errors.append(f'{h}: listed twice')
    listed_set = set(listed)
    generated = set(args.generated)

    texts = {}

    def read(header):
        if header not in texts:
            path = os.path.join(args.source_dir, header)
            texts[header] = open(path, encoding='utf-8').read() if os.path.isfile(path) else None
        return texts[header]

    def includes(header):
        text = read(header)
        if text is None:
            return []
        found = []
        for line in text.split('\n'):
            m = INCLUDE.match(line)
            if m:
                found.append((m.group(1), m.group(2)))
        return found

    # The closure, with who first pulled each header in.
    needed_by = {h: None for h in args.entry}
    queue = list(args.entry)
    while queue:
        header = queue.pop(0)
        if header in generated:
            continue
        if read(header) is None:
            errors.append(f'{header}: no such header in {args.source_dir}')
            continue
        for kind, name in includes(header):
            if name.startswith('core/') and name not in needed_by:
                needed_by[name] = header
                queue.append(name)
    closure = set(needed_by)

    for h in sorted(closure - listed_set - generated):
        errors.append(f'{h}: included by {needed_by[h]} but not in cmake/public_headers.cmake')
    for h in sorted(listed_set - closure):
        errors.append(f'{h}: listed but no entry header includes it')
    for h in sorted(closure | listed_set):
        if h.endswith('_detail.h'):
            via = f' (included by {needed_by[h]})' if needed_by.get(h) else ''
            errors.append(f'{h}: a detail header in the public tree{via}')
        if h in generated or read(h) is None:
            continue
        for kind, name in includes(h):
            if CUDA_HEADERS.match(name):
                errors.append(f'{h}: includes the CUDA header <{name}>')
            if kind == '"' and not name.startswith('core/'):
                errors.append(f'{h}: includes "{name}", not a "core/…" path of the installed tree')
        code = strip_comments(read(h))
        used = {}
        for line in host_lines(code):
            for m in CUDA_NAMES.finditer(line):
                used[m.group(1)] = used.get(m.group(1), 0) + 1
        for name, count in sorted(used.items()):
            errors.append(f'{h}: uses {name} ({count}×) where a host compiler sees it')

    if errors:
        for e in errors:
            print(f'public headers: {e}', file=sys.stderr)
        print(f'public headers: {len(errors)} problem(s)', file=sys.stderr)
        return 1
    print(f'public headers: {len(args.entry)} entry headers, {len(closure)} in their closure, '
          f'the list is exactly it: no detail header, no CUDA header or type')
    return 0


if __name__ == '__main__':
    sys.exit(main())
