#!/usr/bin/env python3
"""Lists the import cycles between the modules of one crate, at a git revision or in the work tree.

A module is one file (`a/mod.rs` is module `a`); an edge A -> B is any `crate::`, `super::` or `self::` path
in A (in a `use` or inline) that names an item of B or of B's children, resolved to the longest module prefix;
an item the crate root re-exports (`pub use b::X`) resolves to where it comes from. With `--methods`, a call in
A of a method that B's `impl Inner` block defines (the service's shared state, whose methods are spread over
modules) is an edge too: `svc.m(`, `inner.m(`, `self.svc.m(`, `cx.svc.m(`, or `self.m(` inside an
`impl Inner` block. The crate root is left out (every module names it through `crate::{...}`), and so are
edges between a module and its own descendants (a parent declaring and re-exporting its children). Prints each strongly connected
component of two or more modules, with the edges inside it and the file:line that makes each edge.

    scripts/module-cycles.py host/palaver-service [REV] [--methods]
"""
import os, re, subprocess, sys
from collections import defaultdict

def files_at(crate, rev):
    src = f"{crate}/src/"
    if rev:
        out = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, src], capture_output=True, text=True, check=True).stdout
        for path in out.split():
            if path.endswith(".rs"):
                yield path[len(src):], subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout
    else:
        for root, _, names in os.walk(src):
            for n in names:
                if n.endswith(".rs"):
                    p = os.path.join(root, n)
                    yield os.path.relpath(p, src), open(p).read()

def module_of(rel):
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)

def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", line) for line in text.split("\n"))

def expand_use(body):
    """Expands `a::{b, c::{d, e}}` into full paths."""
    body = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", body)
    body = re.sub(r"\s+", "", body)
    def rec(prefix, s):
        out, depth, cur = [], 0, ""
        items = []
        for ch in s:
            if ch == "{": depth += 1
            if ch == "}": depth -= 1
            if ch == "," and depth == 0:
                items.append(cur); cur = ""
            else:
                cur += ch
        if cur: items.append(cur)
        for it in items:
            m = re.match(r"^(.*?)::\{(.*)\}$", it)
            if m:
                out += rec(prefix + m.group(1).split("::"), m.group(2))
            elif it.startswith("{") and it.endswith("}"):
                out += rec(prefix, it[1:-1])
            else:
                out.append(prefix + it.split("::"))
        return out
    return rec([], body)

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    methods = "--methods" in sys.argv
    crate = args[0].rstrip("/")
    rev = args[1] if len(args) > 1 else None
    texts = {module_of(rel): (rel, strip_comments(t)) for rel, t in files_at(crate, rev)}
    modules = set(texts)
    def resolve(here, path, is_dir_mod):
        if path[0] == "crate":
            full = path[1:]
        elif path[0] == "super":
            # `super` is the parent of the module, whether the module is a file or a folder's mod.rs.
            full = path
            base = list(here)
            while full and full[0] == "super":
                base = base[:-1]; full = full[1:]
            full = base + full
        elif path[0] == "self":
            full = list(here) + path[1:]
        else:
            full = list(here) + path  # a child module named relatively
            if tuple(full[:len(here) + 1]) not in modules:
                return None
        best = ()
        for i in range(len(full), 0, -1):
            if tuple(full[:i]) in modules:
                best = tuple(full[:i]); break
        return best
    reexports = {}
    root = texts.get((), ("", ""))[1]
    for m in re.finditer(r"\bpub(?:\(crate\))?\s+use\s+([^;]+);", root):
        for p in expand_use(m.group(1)):
            p = p[1:] if p[0] == "crate" else p
            for i in range(len(p) - 1, 0, -1):
                if tuple(p[:i]) in modules:
                    reexports[p[-1]] = tuple(p[:i]); break
    def inner_blocks(text):
        for m in re.finditer(r"impl\s+(?:crate::)?Inner\s*\{", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0); i += 1
            yield m.start(), i
    defined = defaultdict(set)
    for mod, (rel, text) in texts.items():
        for a, b in inner_blocks(text):
            for f in re.finditer(r"\bfn\s+([a-z_][a-z0-9_]*)", text[a:b]):
                defined[f.group(1)].add(mod)
    owner = {name: next(iter(ms)) for name, ms in defined.items() if len(ms) == 1}
    edges = defaultdict(list)
    for mod, (rel, text) in texts.items():
        if methods:
            spots = [(m.start(), m.group(1)) for m in re.finditer(r"\b(?:self\.svc|cx\.svc|self\.inner|svc|inner)\.([a-z_][a-z0-9_]*)\(", text)]
            for a, b in inner_blocks(text):
                spots += [(a + m.start(), m.group(1)) for m in re.finditer(r"\bself\.([a-z_][a-z0-9_]*)\(", text[a:b])]
            for at, name in spots:
                target = owner.get(name)
                if target and target != mod and mod and target[:len(mod)] != mod and mod[:len(target)] != target:
                    edges[(mod, target)].append(f"{rel}:{text[:at].count(chr(10)) + 1} .{name}()")
        is_dir = rel.endswith("mod.rs") or rel == "lib.rs"
        lines = text.split("\n")
        flat = text
        found = []
        for m in re.finditer(r"\buse\s+([^;]+);", flat):
            line = flat[:m.start()].count("\n") + 1
            for p in expand_use(m.group(1)):
                found.append((line, p))
        for m in re.finditer(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", flat):
            line = flat[:m.start()].count("\n") + 1
            found.append((line, [m.group(1)] + m.group(2).strip(":").split("::")))
        for line, p in found:
            if not p or p[0] not in ("crate", "super", "self") and (tuple(list(mod) + p[:1]) not in modules):
                continue
            target = resolve(mod, p, is_dir)
            if target == () and p[0] == "crate" and len(p) > 1 and p[1] in reexports:
                target = reexports[p[1]]
            if not target or target == mod or mod == () or target == ():
                continue
            if target[:len(mod)] == mod or mod[:len(target)] == target:
                continue  # parent and descendant
            edges[(mod, target)].append(f"{rel}:{line}")
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    # Tarjan
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: sccs.append(comp)
    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index: strong(v)
    name = lambda m: "::".join(m) or "crate"
    kind = "use paths and Inner method calls" if methods else "use paths"
    print(f"{crate} at {rev or 'work tree'} ({kind}): {len(modules)} modules, {len(edges)} module edges, {len(sccs)} cycle(s)")
    for comp in sccs:
        cs = set(comp)
        print("cycle: " + " , ".join(sorted(name(m) for m in comp)))
        for (a, b), where in sorted(edges.items()):
            if a in cs and b in cs:
                print(f"  {name(a)} -> {name(b)}  ({', '.join(sorted(set(where))[:3])})")
    sys.exit(0)

main()
