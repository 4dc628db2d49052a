#!/usr/bin/env python3
"""What the docs name exists, and nothing they point at lies outside the repository.

    check_docs.py WIREWISE_BINARY SOURCE_DIR

Over README.md, docs/, examples/ and the benchmarks' READMEs:
- every WIREWISE_* name is a setting (`wirewise settings --format names`) or a CMake option of this project;
- every relative Markdown link resolves to a file or folder inside the repository;
- every command `wirewise SUBCOMMAND` (inline code, a shell code block, a script) names a subcommand of the built
  tool (`wirewise --help`);
- no text points into the workspace around it (`shared/research`, `shared/scenarios`, `design.md`): a reader of
  the repository cannot open those.
"""
import os
import re
import subprocess
import sys

OUTSIDE = re.compile(r"shared/research|shared/scenarios|\.\./shared|\bdesign\.md")
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAME = re.compile(r"\bWIREWISE_[A-Z0-9_]*[A-Z0-9]\b")
INLINE_CODE = re.compile(r"`([^`]+)`")
# `wirewise` as the command word of a command (a path before it allowed), not the word in prose.
COMMAND = re.compile(r"^(?:[\w.-]*/)*wirewise ([a-z][a-z-]*)")
SEPARATORS = re.compile(r"&&|\|\||[;|]")
TEXT_ENDINGS = (".md", ".env", ".conf", ".py", ".json", ".sh")


def doc_files(root):
    yield "README.md"
    for top in ("docs", "examples", "bench"):
        for dirpath, _, filenames in os.walk(os.path.join(root, top)):
            for f in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if top == "bench" and f != "README.md":
                    continue
                if f.endswith(TEXT_ENDINGS):
                    yield rel


def cmake_options(root):
    names = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.split(os.sep)[0].startswith(("build", ".git")):
            dirnames[:] = []
            continue
        for f in filenames:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    text = fh.read()
                names.update(re.findall(r"option\((WIREWISE_[A-Z0-9_]+)", text))
                names.update(re.findall(r"set\((WIREWISE_[A-Z0-9_]+)[^)]*CACHE", text))
    return names


def main():
    binary, root = sys.argv[1], sys.argv[2]
    settings = set(subprocess.run([binary, "settings", "--format", "names"], check=True, capture_output=True,
                                  text=True).stdout.split())
    known = settings | cmake_options(root)
    help_text = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True).stdout
    subcommands = set(re.findall(r"^  ([a-z][a-z-]*) ", help_text.split("Subcommands:")[-1], re.M))
    problems = []
    files = list(doc_files(root))
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        # Commands: a shell script or env file whole, a Markdown block fenced as sh/bash/shell/console (an
        # untagged block is output, which may start with "wirewise net: ..."), and inline code.
        shell = rel.endswith((".sh", ".env"))
        in_block = False
        for n, line in enumerate(lines, 1):
            if rel.endswith(".md") and line.lstrip().startswith("```"):
                in_block = not in_block
                shell = in_block and line.strip()[3:] in ("sh", "bash", "shell", "console")
                continue
            code = [line.split("#")[0]] if shell else [] if in_block else INLINE_CODE.findall(line)
            for span in code:
                for sub in (m.group(1) for part in SEPARATORS.split(span) if (m := COMMAND.match(part.strip()))):
                    if sub not in subcommands:
                        problems.append(f"{rel}:{n}: `wirewise {sub}`: no such subcommand ({', '.join(sorted(subcommands))})")
            for name in NAME.findall(line):
                if name not in known:
                    problems.append(f"{rel}:{n}: {name} is neither a setting nor a CMake option")
            if OUTSIDE.search(line):
                problems.append(f"{rel}:{n}: points outside the repository: {OUTSIDE.search(line).group(0)}")
            if not rel.endswith(".md"):
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                path = target.split("#")[0]
                if not path:
                    continue
                full = os.path.normpath(os.path.join(root, os.path.dirname(rel), path))
                if os.path.relpath(full, root).startswith("..") or not os.path.exists(full):
                    problems.append(f"{rel}:{n}: link to {target}: no such file in the repository")
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(known)} known names, {len(subcommands)} subcommands: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
