#!/usr/bin/env python3
"""Every shared name is defined once: a check over the source tree.

    check_shared_names.py WIREWISE_BINARY SOURCE_DIR

Settings: each variable name (from `wirewise settings --format names`, i.e. the table itself) may appear in
the code of at most two C/C++ source files: its table row (common/settings.cc) and at most one other use.
Everything else asks settingName(&Settings::member). Comments are not code and do not count; tests, which
set variables as a user would, and scripts outside the C++ sources are not checked.
"""
import os
import re
import subprocess
import sys

SOURCE_ENDINGS = (".cc", ".h", ".c", ".cu", ".hpp", ".cpp")
SKIP_DIRS = {"tests", ".git", "docs", "examples", "scenarios"}


def strip_comments(text: str) -> str:
    # Keeps string literals (a name inside one is a use), drops // and /* */ comments.
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(root: str):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        if top in SKIP_DIRS or top.startswith("build"):
            dirnames[:] = []
            continue
        for f in filenames:
            if f.endswith(SOURCE_ENDINGS):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    yield os.path.relpath(path, root), strip_comments(fh.read())


def main() -> int:
    binary, root = sys.argv[1], sys.argv[2]
    names = subprocess.run([binary, "settings", "--format", "names"], check=True, capture_output=True,
                           text=True).stdout.split()
    if len(names) < 10:
        print(f"only {len(names)} setting names from {binary}: the check would prove nothing", file=sys.stderr)
        return 1
    code = list(sources(root))
    failures = 0
    for name in names:
        pattern = re.compile(r"\b" + re.escape(name) + r"\b")
        files = sorted(path for path, text in code if pattern.search(text))
        ok = "common/settings.cc" in files and len(files) <= 2
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {', '.join(files) or '(nowhere)'}")
        failures += not ok
    print(f"shared names: {len(names) - failures} of {len(names)} settings spelled once")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
