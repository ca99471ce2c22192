#!/usr/bin/env python3
"""Lint the Swift sources against ../shared/DESIGN.md's size and dependency rules.

Checks (each finding is one line, `path:line: message`):
  1. file size      every hand-written .swift file under Sources/ has at most 600 lines
                    (generated files -- "DO NOT EDIT" in their first lines, or *.generated.swift --
                    are exempt; Tests/ and Fuzz/ files over the limit are counted in a note only)
  2. function size  no function in a hand-written Sources/ file is longer than 120 lines, from the
                    line of its declaration to the line of its closing brace: func, init, deinit,
                    subscript, computed properties, closures assigned to a name (`static let lstm:
                    Reader = { ... }`, `t["X"] = { ... }`), dictionary-literal entries (`"Swish": {
                    n, names in ... }`) and argument closures with parameters on their first line
                    (`foo(x, { a, b in ... })`). Immediately invoked closures (`= { ... }()`) build
                    tables: a note lists those over the limit, they do not fail.
  3. dependencies   for every target and test target in Package.swift, the declared dependencies
                    are exactly the modules its files import (system modules aside)

  python3 Scripts/lint.py               exit 1 when there is a finding
  python3 Scripts/lint.py --warn-only   print the findings, exit 0
  python3 Scripts/lint.py --top 10      also list the 10 longest files and functions
  python3 Scripts/lint.py --self-test   check the Swift lexer and the function finder on snippets

Standard library only.
"""
import argparse
import bisect
import os
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120

# Modules of the OS and the toolchain: imports of these need no declared dependency.
SYSTEM_MODULES = {
    "Swift", "_Concurrency", "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationXML",
    "CoreFoundation", "Dispatch", "XCTest", "Testing", "Glibc", "Musl", "Darwin", "WinSDK", "os",
    "PackageDescription", "ImageIO", "CoreGraphics", "UniformTypeIdentifiers", "Accelerate", "CoreML",
    "Synchronization",
}
# `.product(name: P, ...)` dependencies whose module is not called P (none yet).
PRODUCT_MODULES = {}

GENERATED_MARK = "DO NOT EDIT"
GENERATED_SUFFIX = ".generated.swift"
SOURCE_DIRS = ("Sources",)
NOTE_DIRS = ("Tests", "Fuzz")


# --------------------------------------------------------------------------------------------
# Lexer: tokens of Swift code, with string literals (incl. multi-line, raw and interpolated
# ones) as single tokens and comments dropped.
# --------------------------------------------------------------------------------------------

class Tok:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line

    def __repr__(self):
        return f"{self.kind}:{self.text!r}@{self.line}"


OP_CHARS = set("/=-+!*%<>&|^~?.")
PUNCT = set("{}()[],;:\\")


class LexError(Exception):
    pass


class Lexer:
    def __init__(self, src):
        self.src = src
        self.n = len(src)
        self.line_starts = [0] + [i + 1 for i, c in enumerate(src) if c == "\n"]
        self.toks = []

    def line(self, i):
        return bisect.bisect_right(self.line_starts, i)

    def run(self):
        self.code(0, interpolation=False, emit=True)
        return self.toks

    def skip_comment(self, i):
        """i is at `//` or `/*`; returns the index after the comment (block comments nest)."""
        src = self.src
        if src.startswith("//", i):
            j = src.find("\n", i)
            return self.n if j < 0 else j
        depth, i = 1, i + 2
        while i < self.n:
            if src.startswith("/*", i):
                depth, i = depth + 1, i + 2
            elif src.startswith("*/", i):
                depth, i = depth - 1, i + 2
                if depth == 0:
                    return i
            else:
                i += 1
        raise LexError(f"line {self.line(i)}: unterminated block comment")

    def code(self, i, interpolation, emit):
        """Lexes code from i. In an interpolation `\\( ... )`, returns at its closing parenthesis."""
        src, n = self.src, self.n
        depth = 0

        def add(kind, start, end):
            if emit:
                self.toks.append(Tok(kind, src[start:end], self.line(start)))

        while i < n:
            c = src[i]
            if c in " \t\r\n":
                i += 1
            elif src.startswith("//", i) or src.startswith("/*", i):
                i = self.skip_comment(i)
            elif c == '"' or (c == "#" and self.raw_string_at(i)):
                start = i
                i = self.string(i)
                add("str", start, i)
            elif c == "#":
                j = i + 1
                while j < n and (src[j].isalnum() or src[j] == "_"):
                    j += 1
                add("dir", i, j)
                i = j
            elif c == "@" or c == "$" or c == "_" or c.isalpha():
                j = i + 1
                while j < n and (src[j].isalnum() or src[j] in "_$"):
                    j += 1
                add("id", i, j)
                i = j
            elif c == "`":
                j = src.find("`", i + 1)
                if j < 0:
                    raise LexError(f"line {self.line(i)}: unterminated backtick")
                if emit:
                    self.toks.append(Tok("id", src[i + 1:j], self.line(i)))
                i = j + 1
            elif c.isdigit():
                j = i + 1
                while j < n:
                    d = src[j]
                    if d.isalnum() or d == "_":
                        j += 1
                    elif d == "." and j + 1 < n and src[j + 1].isdigit():
                        j += 1
                    elif d in "+-" and src[j - 1] in "eEpP" and not src[i:j].startswith(("0b", "0o")):
                        j += 1
                    else:
                        break
                add("num", i, j)
                i = j
            elif c in OP_CHARS:
                j = i + 1
                while j < n and src[j] in OP_CHARS and not src.startswith("//", j) and not src.startswith("/*", j):
                    j += 1
                add("op", i, j)
                i = j
            elif c in PUNCT:
                if interpolation:
                    if c == "(":
                        depth += 1
                    elif c == ")":
                        if depth == 0:
                            return i + 1
                        depth -= 1
                add("punct", i, i + 1)
                i += 1
            else:
                add("other", i, i + 1)
                i += 1
        if interpolation:
            raise LexError("unterminated string interpolation")
        return i

    def raw_string_at(self, i):
        j = i
        while j < self.n and self.src[j] == "#":
            j += 1
        return j < self.n and self.src[j] == '"'

    def string(self, i):
        """i is at a string literal's opening delimiter; returns the index after its closing one."""
        src, n = self.src, self.n
        start = i
        hashes = 0
        while src[i] == "#":
            hashes, i = hashes + 1, i + 1
        multiline = src.startswith('"""', i)
        i += 3 if multiline else 1
        close = ('"""' if multiline else '"') + "#" * hashes
        escape = "\\" + "#" * hashes
        while i < n:
            if src.startswith(close, i):
                return i + len(close)
            if src.startswith(escape, i):
                i += len(escape)
                if i < n and src[i] == "(":
                    i = self.code(i + 1, interpolation=True, emit=False)
                else:
                    i += 1  # the escaped character (a quote, a backslash, a newline in """ strings, u{...} is harmless)
                continue
            if src[i] == "\n" and not multiline:
                raise LexError(f"line {self.line(start)}: unterminated string literal")
            i += 1
        raise LexError(f"line {self.line(start)}: unterminated string literal")


def lex(src):
    return Lexer(src).run()


def pair_groups(toks):
    """Matches ( ) [ ] { }. Returns (match, parent, errors): match[i] is the index of the partner
    of the delimiter at i; parent[i] is the index of the innermost group opener enclosing token i
    (None at top level)."""
    match, parent, errors = {}, [None] * len(toks), []
    stack = []
    closers = {")": "(", "]": "[", "}": "{"}
    for i, t in enumerate(toks):
        parent[i] = stack[-1] if stack else None
        if t.kind != "punct":
            continue
        if t.text in "([{":
            stack.append(i)
        elif t.text in closers:
            if stack and toks[stack[-1]].text == closers[t.text]:
                o = stack.pop()
                match[o], match[i] = i, o
                parent[i] = stack[-1] if stack else None
            else:
                errors.append(f"line {t.line}: unmatched '{t.text}'")
    for o in stack:
        errors.append(f"line {toks[o].line}: unclosed '{toks[o].text}'")
    return match, parent, errors


# --------------------------------------------------------------------------------------------
# Functions: what each `{` opens.
# --------------------------------------------------------------------------------------------

MODIFIERS = {
    "public", "private", "fileprivate", "internal", "open", "package", "static", "final", "override",
    "mutating", "nonmutating", "convenience", "required", "lazy", "weak", "unowned", "nonisolated",
    "dynamic", "indirect", "optional", "prefix", "postfix", "infix", "distributed", "isolated",
    "consuming", "borrowing", "__consuming",
}
TYPE_KEYWORDS = {"struct", "class", "enum", "extension", "protocol", "actor", "precedencegroup"}
DECL_KEYWORDS = {"func", "init", "deinit", "subscript", "var", "let", "typealias", "case"} | TYPE_KEYWORDS
CONTROL_KEYWORDS = {"if", "guard", "for", "while", "repeat", "switch", "do", "catch", "else", "defer", "case",
                    "default", "return", "throw", "try", "await"}
ACCESSORS = {"get", "set", "willSet", "didSet", "_read", "_modify", "unsafeAddress", "unsafeMutableAddress", "init"}
# A line break is not a statement boundary when the next line starts with one of these...
CONTINUES_NEXT = {"where", "throws", "rethrows", "async", "as", "is", "else", "in"}
# ...or the previous one ends with one of these (besides binary operators).
PREFIX_OPS = {"!", "-", "&", "~", "?", "!."}
# A line starting with one of these starts a statement, whatever the previous line ends with.
STARTS_DECLARATION = {"func", "init", "deinit", "subscript", "typealias", "import", "struct", "class", "enum",
                      "extension", "protocol", "actor"} | MODIFIERS


class Body:
    """A brace-delimited body worth measuring."""
    __slots__ = ("kind", "name", "start", "end")

    def __init__(self, kind, name, start, end):
        self.kind, self.name, self.start, self.end = kind, name, start, end

    @property
    def lines(self):
        return self.end - self.start + 1


def is_boundary(prev, first):
    """Whether the line break between token prev and token first (on a later line) ends a statement."""
    if prev.kind == "dir" or first.kind == "dir":
        return True
    if prev.text in DECL_KEYWORDS or prev.text in MODIFIERS:
        return False  # `public static func` / `name(...)` split over two lines
    if first.text in STARTS_DECLARATION or first.text.startswith("@") or \
            (first.text in ("let", "var") and prev.text != ","):
        return True  # after `let x: Set<Int>` (a trailing `>` is no binary operator)
    if first.kind == "op" and first.text not in PREFIX_OPS:
        return False  # `.map`, `-> T`, `&& b`, `= x`
    if first.text in CONTINUES_NEXT or first.text in (",", ":"):
        return False
    if prev.kind == "op" and prev.text not in ("!", "?"):
        return False  # `a =`, `a &&`, `-> `
    if prev.text in (",", "(", "[") or prev.text.startswith("@"):
        return False
    return True


def statement_start(toks, match, parent, k):
    """Index of the first token of the statement (or list element) a `{` at k ends."""
    enclosing = parent[k]
    in_list = enclosing is not None and toks[enclosing].text in "(["
    start, j = k, k - 1
    while j >= 0:
        p = toks[j]
        if p.kind == "punct" and p.text in "{};([" or (in_list and p.text == ","):
            break
        if p.kind == "dir":
            break
        if start < k and p.line < toks[start].line and not in_list and is_boundary(p, toks[start]):
            break
        if p.kind == "punct" and p.text in ")]" and j in match:
            start, j = match[j], match[j] - 1
        else:
            start, j = j, j - 1
    return start


def top_level(toks, match, lo, hi):
    """Indices in [lo, hi) outside any group that starts inside the range."""
    out, i = [], lo
    while i < hi:
        out.append(i)
        if toks[i].kind == "punct" and toks[i].text in "([{" and i in match and match[i] < hi:
            i = match[i] + 1
        else:
            i += 1
    return out


def closure_has_params_on_first_line(toks, match, k):
    """`{ a, b in` / `{ (a: Int) -> Int in`: an `in` on the opening line, outside nested groups."""
    end = match.get(k, len(toks))
    for i in top_level(toks, match, k + 1, end):
        if toks[i].line != toks[k].line:
            return False
        if toks[i].kind == "id" and toks[i].text == "in":
            return True
    return False


def text_of(toks, lo, hi, limit=60):
    s = ""
    for t in toks[lo:hi]:
        glue = "" if not s or t.text in ".([])?!:," or s[-1] in ".([" else " "
        s += glue + t.text
    return s if len(s) <= limit else s[:limit - 1] + "…"


def classify(toks, match, parent, k):
    """(kind, name) for the body opened at k. kind: func / init / subscript / property / closure /
    initializer (an immediately invoked closure) / type / other. Returns also the line the
    declaration starts on."""
    s = statement_start(toks, match, parent, k)
    i = s
    while i < k and toks[i].kind == "id" and toks[i].text.startswith("@"):  # attributes
        i += 1
        if i < k and toks[i].text == "(" and toks[i - 1].line == toks[i].line:
            i = match.get(i, i) + 1
    while i < k and toks[i].kind == "id" and (
            toks[i].text in MODIFIERS or
            (toks[i].text == "class" and i + 1 < k and (toks[i + 1].text in DECL_KEYWORDS | MODIFIERS))):
        i += 1
        if i < k and toks[i].text == "(" and toks[i - 1].text in ("private", "fileprivate", "internal", "public", "package"):
            i = match.get(i, i) + 1  # private(set)
    decl_line = toks[i].line if i < k else toks[k].line
    kw = toks[i].text if i < k else ""
    last = toks[k - 1].text if k > s else ""
    invoked = (match.get(k, -1) + 1 < len(toks) and toks[match[k] + 1].text == "("
               and toks[match[k] + 1].line == toks[match[k]].line)
    if kw == "func":
        return "func", toks[i + 1].text, decl_line
    if kw in ("init", "deinit", "subscript") and (toks[i].kind == "id"):
        if kw == "init" and i + 1 < k and toks[i + 1].text in ("?", "!"):
            return "init", "init" + toks[i + 1].text, decl_line
        if kw == "init" and i + 1 == k:
            return "other", "init", decl_line  # an accessor-like `init {` (init accessors)
        return ("init" if kw != "subscript" else "subscript"), kw, decl_line
    if kw in TYPE_KEYWORDS:
        return "type", toks[i + 1].text if i + 1 < k else kw, decl_line
    if kw in ("var", "let"):
        name = text_of(toks, i + 1, min(i + 2, k)) if i + 1 < k and toks[i + 1].text != "(" \
            else text_of(toks, i + 1, match.get(i + 1, i) + 1)
        eq = [j for j in top_level(toks, match, i, k) if toks[j].text == "="]
        if last == "=":
            return ("initializer" if invoked else "closure"), name, decl_line
        if not eq or (k + 1 < len(toks) and toks[k + 1].text in ("willSet", "didSet")):
            return "property", name, decl_line
        return "other", "", decl_line
    if kw in CONTROL_KEYWORDS or kw in ACCESSORS:
        return "other", kw, decl_line
    # Expressions.
    enclosing = parent[k]
    if last == "=" and k - 1 > s:
        colon = next((j for j in top_level(toks, match, s, k - 1) if toks[j].text == ":"), k - 1)
        return ("initializer" if invoked else "closure"), text_of(toks, s, colon), decl_line  # `x: T = {`
    if enclosing is not None and toks[enclosing].text == "[" and last == ":" and k - 1 > s:
        return "closure", text_of(toks, s, k - 1), decl_line
    if enclosing is not None and toks[enclosing].text == "(" and (k == s or (last == ":" and k - 2 == s)):
        if closure_has_params_on_first_line(toks, match, k):
            callee = text_of(toks, max(0, enclosing - 1), enclosing)
            label = (toks[s].text + ":") if k > s else ""
            return "closure", f"{callee}({label}{{…}})", toks[k].line
    return "other", "", decl_line


MEASURED = {"func", "init", "subscript", "property", "closure", "initializer"}


def find_bodies(src):
    """Every measured body of a Swift file: [Body], with qualified names (Type.func, func.inner)."""
    toks = lex(src)
    match, parent, errors = pair_groups(toks)
    if errors:
        raise LexError("; ".join(errors[:3]))
    info = {}
    bodies = []
    for k, t in enumerate(toks):
        if t.kind == "punct" and t.text == "{":
            kind, name, line = classify(toks, match, parent, k)
            info[k] = (kind, name)
            if kind in MEASURED:
                prefix, p = [], parent[k]
                while p is not None:
                    if toks[p].text == "{" and info.get(p, ("other",))[0] in MEASURED | {"type"}:
                        prefix.append(info[p][1])
                    p = parent[p]
                qual = ".".join(reversed(prefix)) + ("." if prefix else "") + name
                bodies.append(Body(kind, qual, line, toks[match[k]].line))
    return bodies


# --------------------------------------------------------------------------------------------
# Package.swift and imports
# --------------------------------------------------------------------------------------------

TARGET_KINDS = {"target": "Sources", "executableTarget": "Sources", "testTarget": "Tests",
                "systemLibrary": "Sources", "binaryTarget": None, "plugin": "Plugins", "macro": "Sources"}


def string_value(tok):
    t = tok.text.strip("#")
    return t[3:-3] if t.startswith('"""') else t[1:-1]


def parse_package(src):
    """[{name, kind, path, line, deps: [(module, line, display)], exclude: [str]}] of Package.swift."""
    toks = lex(src)
    match, _, errors = pair_groups(toks)
    if errors:
        raise LexError("Package.swift: " + "; ".join(errors))
    call = next((i + 1 for i in range(len(toks) - 1) if toks[i].text == "Package" and toks[i + 1].text == "("), None)
    arr = None
    if call is not None:  # the `targets:` argument of `Package(...)` (products have `targets:` too)
        arr = next((a + 2 for a in top_level(toks, match, call + 1, match[call]) if toks[a].text == "targets"
                    and toks[a + 1].text == ":" and toks[a + 2].text == "["), None)
    if arr is None:
        raise LexError("Package.swift: no `Package(..., targets: [...])` found")
    targets = []
    elems = top_level(toks, match, arr + 1, match[arr])
    for e in elems:
        if not (toks[e].text == "." and e + 2 < len(toks) and toks[e + 1].text in TARGET_KINDS
                and toks[e + 2].text == "("):
            continue
        kind, lo, hi = toks[e + 1].text, e + 2, match[e + 2]
        t = {"kind": kind, "name": None, "path": None, "line": toks[e].line, "deps": [], "exclude": []}
        args = top_level(toks, match, lo + 1, hi)
        for a in args:
            if not (toks[a].kind == "id" and a + 2 < hi and toks[a + 1].text == ":"):
                continue
            label, v = toks[a].text, a + 2
            if label == "name" and toks[v].kind == "str":
                t["name"], t["line"] = string_value(toks[v]), toks[v].line
            elif label == "path" and toks[v].kind == "str":
                t["path"] = string_value(toks[v])
            elif label == "exclude" and toks[v].text == "[":
                t["exclude"] = [string_value(toks[x]) for x in top_level(toks, match, v + 1, match[v])
                                if toks[x].kind == "str"]
            elif label == "dependencies" and toks[v].text == "[":
                t["deps"] = parse_dependencies(toks, match, v)
        if t["name"]:
            if t["path"] is None and TARGET_KINDS[kind]:
                t["path"] = f"{TARGET_KINDS[kind]}/{t['name']}"
            targets.append(t)
    return targets


def parse_dependencies(toks, match, v):
    deps = []
    for x in top_level(toks, match, v + 1, match[v]):
        tok = toks[x]
        if tok.kind == "str":
            deps.append((string_value(tok), tok.line, f'"{string_value(tok)}"'))
        elif (tok.text == "." and x + 2 < len(toks) and toks[x + 1].kind == "id" and toks[x + 2].text == "("):
            how, lo = toks[x + 1].text, x + 2
            inner = top_level(toks, match, lo + 1, match[lo])
            name = next((string_value(toks[a + 2]) for a in inner if toks[a].text == "name"
                         and toks[a + 1].text == ":" and toks[a + 2].kind == "str"), None)
            if name is None:
                continue
            module = PRODUCT_MODULES.get(name, name) if how == "product" else name
            deps.append((module, tok.line, f'.{how}(name: "{name}")'))
    return deps


def imports_of(src):
    """[(module, line, guarded_by_canImport_of_it)] of a Swift file's import declarations."""
    toks = lex(src)
    out, conditions = [], []  # conditions: the canImport modules of each enclosing #if branch
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "dir" and t.text in ("#if", "#elseif", "#else", "#endif"):
            j = i + 1
            while j < len(toks) and toks[j].line == t.line and toks[j].kind != "dir":
                j += 1
            cond = {toks[x + 2].text for x in range(i + 1, j - 2)
                    if toks[x].text == "canImport" and toks[x + 1].text == "("}
            if t.text == "#if":
                conditions.append(cond)
            elif t.text == "#elseif" and conditions:
                conditions[-1] = cond
            elif t.text == "#else" and conditions:
                conditions[-1] = set()
            elif t.text == "#endif" and conditions:
                conditions.pop()
            i = j
            continue
        if t.kind == "id" and t.text == "import" and i + 1 < len(toks):
            j = i + 1
            if toks[j].text in ("struct", "class", "enum", "protocol", "typealias", "func", "let", "var") and j + 1 < len(toks):
                j += 1
            module = toks[j].text
            guarded = any(module in c for c in conditions)
            out.append((module, t.line, guarded))
        i += 1
    return out


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------

def swift_files(root, top):
    base = os.path.join(root, top)
    out = []
    for d, dirs, files in os.walk(base):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".swift"):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def is_generated(rel, text):
    return rel.endswith(GENERATED_SUFFIX) or GENERATED_MARK in "\n".join(text.splitlines()[:10])


def check_sizes_and_functions(root, findings, notes, stats):
    sources = [f for top in SOURCE_DIRS for f in swift_files(root, top)]
    others = [f for top in NOTE_DIRS for f in swift_files(root, top)]
    stats["files"] = len(sources) + len(others)
    stats["file_lengths"], stats["bodies"] = [], []
    initializers = []
    for rel in sources:
        text = read(root, rel)
        if is_generated(rel, text):
            stats.setdefault("generated", 0)
            stats["generated"] += 1
            continue
        n = len(text.splitlines())
        stats["file_lengths"].append((n, rel))
        if n > MAX_FILE_LINES:
            findings.append((rel, 1, f"{n} lines, more than {MAX_FILE_LINES}: split it along its MARK: sections"))
        try:
            bodies = find_bodies(text)
        except LexError as e:
            findings.append((rel, 1, f"could not read the file's structure ({e}); function sizes not checked"))
            continue
        for b in bodies:
            stats["bodies"].append((b.lines, rel, b))
            if b.lines > MAX_FUNCTION_LINES:
                if b.kind == "initializer":
                    initializers.append(f"{rel}:{b.start} {b.name} ({b.lines})")
                else:
                    findings.append((rel, b.start, f"{b.kind} {b.name} is {b.lines} lines, more than "
                                                   f"{MAX_FUNCTION_LINES}: name its steps"))
    long_others = []
    for rel in others:
        n = len(read(root, rel).splitlines())
        if n > MAX_FILE_LINES:
            long_others.append(f"{rel} ({n})")
    if long_others:
        notes.append(f"note: {len(long_others)} Tests/Fuzz files over {MAX_FILE_LINES} lines (not failing): "
                     + ", ".join(long_others))
    if initializers:
        notes.append(f"note: {len(initializers)} table initializers (`= {{ ... }}()`) over {MAX_FUNCTION_LINES} "
                     "lines (not failing): " + ", ".join(initializers))


def check_dependencies(root, findings, notes):
    pkg = "Package.swift"
    targets = parse_package(read(root, pkg))
    known = {t["name"] for t in targets}
    for t in targets:
        for m, _, shown in t["deps"]:
            known.add(m)
    for t in targets:
        if not t["path"]:
            continue
        files = [f for f in swift_files(root, t["path"])
                 if not any(f.startswith(os.path.join(t["path"], x) + os.sep) or f == os.path.join(t["path"], x)
                            for x in t["exclude"])]
        if not files:
            continue  # a C target (or an empty one): nothing to compare
        imported = {}  # module -> (file, line) of its first import
        for rel in files:
            for module, line, guarded in imports_of(read(root, rel)):
                if module in SYSTEM_MODULES or (guarded and module not in known):
                    continue
                imported.setdefault(module, (rel, line))
        declared = {}
        for module, line, shown in t["deps"]:
            declared.setdefault(module, (line, shown))
        for module, (line, shown) in sorted(declared.items()):
            if module not in imported:
                findings.append((pkg, line, f"{t['name']} declares {shown}, which none of its files imports"))
        for module, (rel, line) in sorted(imported.items()):
            if module not in declared and module != t["name"]:
                findings.append((rel, line, f"imports {module}, which Package.swift does not declare "
                                            f"as a dependency of {t['name']}"))
    return len(targets)


def run(root, warn_only, top):
    findings, notes, stats = [], [], {}
    check_sizes_and_functions(root, findings, notes, stats)
    try:
        ntargets = check_dependencies(root, findings, notes)
    except (LexError, OSError) as e:
        findings.append(("Package.swift", 1, f"could not check dependencies: {e}"))
        ntargets = 0
    for rel, line, msg in findings:
        print(f"{rel}:{line}: {msg}")
    for n in notes:
        print(n)
    if top:
        print(f"longest hand-written files in Sources/ (limit {MAX_FILE_LINES}):")
        for n, rel in sorted(stats["file_lengths"], reverse=True)[:top]:
            print(f"  {n:5d}  {rel}")
        print(f"longest functions in Sources/ (limit {MAX_FUNCTION_LINES}):")
        for n, rel, b in sorted(stats["bodies"], key=lambda x: (-x[0], x[1], x[2].start))[:top]:
            print(f"  {n:5d}  {rel}:{b.start}  {b.kind} {b.name}")
    print(f"lint: {stats['files']} files, {ntargets} targets, {len(findings)} findings"
          + (" (--warn-only)" if warn_only and findings else ""))
    return 0 if warn_only or not findings else 1


# --------------------------------------------------------------------------------------------
# Self-test
# --------------------------------------------------------------------------------------------

SELF_TESTS = [
    # (description, Swift snippet, {qualified name: expected lines})
    ("braces in strings and comments", '''
struct S {
    func a() -> String {
        let s = "}}}{"   // a } in a comment
        /* { nested /* } */ { */
        return s + "\\"}"
    }
    var b: Int {
        1
    }
}
''', {"S.a": 5, "S.b": 3}),
    ("multi-line and raw strings", '''
func c() {
    let text = """
        }
        func fake() {
        \\"""  }
        """
    let raw = #"a "}" \\( { "#
    let raw2 = ##"""
        "# }"""#
        """##
}
func d() { }
''', {"c": 11, "d": 1}),
    ("interpolations with closures and strings", '''
func e(xs: [Int]) -> String {
    let s = "\\(xs.map { "\\($0 + 1) }" }.joined(separator: "{")) and \\(xs.count)"
    return "\\(s)"
}
''', {"e": 4}),
    ("nested functions, types, inits and subscripts", '''
enum Outer {
    struct Inner {
        init?(x: Int) {
            guard x > 0 else { return nil }
            func helper() {
                if true {
                }
            }
        }
        subscript(i: Int) -> Int {
            get { i }
            set { }
        }
        static func ==(a: Inner, b: Inner) -> Bool { true }
    }
    @discardableResult
    public static func
        generic<T: Equatable, U>(a: T, b: U)
        -> [T] where T: Hashable {
        return [a]
    }
}
''', {"Outer.Inner.init?": 7, "Outer.Inner.init?.helper": 4, "Outer.Inner.subscript": 4,
      "Outer.Inner.==": 1, "Outer.generic": 5}),
    ("closures assigned, table entries, argument closures", '''
extension Ops {
    static let lstm: Reader = { b, l, p in
        let x = b.map { y in
            y
        }
        return x
    }
    static let table: [String: Reader] = {
        var t: [String: Reader] = [:]
        for op in ops {
            t[op] = { b, n, _ in
                b.emit(n)
            }
        }
        t["X"] = { b, n, _ in
            b.emit(n) }
        return t
    }()
    static let names: [String: Build] = [
        "Swish": { n, names in
            n
        },
        "Relu": { _, _ in nil },
    ]
    func run() {
        items.forEach({ item in
            print(item)
        })
        register(kernel: { a in
            a })
        let handler: (Int) -> Void = { _ in }
    }
}
''', {"Ops.lstm": 6, "Ops.table": 11, "Ops.table.t[op]": 3, 'Ops.table.t["X"]': 2, 'Ops."Swish"': 3,
      'Ops."Relu"': 1, "Ops.run": 8, "Ops.run.forEach({…})": 3, "Ops.run.register(kernel:{…})": 2,
      "Ops.run.handler": 1}),
    ("control flow, observers and protocols are not functions", '''
protocol P {
    func f()
    var v: Int { get }
}
class C {
    var x = 0 {
        didSet { print(x) }
    }
    class func g() {
        switch x {
        case 1:
            let f = { (a: Int) -> Int in
                a }
            _ = f
        default: break
        }
        do { } catch { }
        let y = xs.map { $0 }
    }
    deinit {
    }
}
''', {"P.v": 1, "C.x": 3, "C.g": 11, "C.g.f": 2, "C.deinit": 2}),
]


def self_test():
    failures = 0
    for desc, snippet, expected in SELF_TESTS:
        got = {b.name: b.lines for b in find_bodies(snippet)}
        if got != expected:
            failures += 1
            print(f"self-test FAILED: {desc}")
            for name in sorted(set(got) | set(expected)):
                if got.get(name) != expected.get(name):
                    print(f"  {name}: expected {expected.get(name)}, got {got.get(name)}")
    pkg = '''
let package = Package(name: "P", dependencies: [.package(url: "u", exact: "1")], targets: [
    .target(name: "A", dependencies: ["B", .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                      .target(name: "C", condition: .when(platforms: [.linux]))]),
    .testTarget(name: "ATests", dependencies: ["A"], path: "T/x", exclude: ["Fixtures"]),
])
'''
    got_pkg = [(t["name"], t["path"], [d[0] for d in t["deps"]], t["exclude"]) for t in parse_package(pkg)]
    want_pkg = [("A", "Sources/A", ["B", "SwiftProtobuf", "C"], []), ("ATests", "T/x", ["A"], ["Fixtures"])]
    if got_pkg != want_pkg:
        failures += 1
        print(f"self-test FAILED: Package.swift parsing\n  expected {want_pkg}\n  got      {got_pkg}")
    imports = '''
import Foundation
@testable import B
import struct C.Thing
#if canImport(Glibc)
import Glibc
#elseif canImport(D)
import D
#else
import E
#endif
let s = """
import NotAModule
"""
'''
    got_imp = imports_of(imports)
    want_imp = [("Foundation", 2, False), ("B", 3, False), ("C", 4, False), ("Glibc", 6, True),
                ("D", 8, True), ("E", 10, False)]
    if got_imp != want_imp:
        failures += 1
        print(f"self-test FAILED: imports\n  expected {want_imp}\n  got      {got_imp}")
    total = len(SELF_TESTS) + 2
    print(f"lint self-test: {total - failures} of {total} passed")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warn-only", action="store_true", help="print the findings but exit 0")
    ap.add_argument("--top", type=int, default=0, metavar="N", help="list the N longest files and functions")
    ap.add_argument("--self-test", action="store_true", help="check the lexer and the function finder")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the package folder (default: this script's parent's parent)")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    return run(args.root, args.warn_only, args.top)


if __name__ == "__main__":
    sys.exit(main())
