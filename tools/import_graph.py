"""The import graph of tirc: modules at the root, function-local imports, cycles (strongly
connected components) and the edges between packages.

    python tools/import_graph.py .
"""
import ast, sys
from pathlib import Path
root = Path(sys.argv[1]); pkg = root / "tirc"
mods = {}
for p in pkg.rglob("*.py"):
    rel = p.relative_to(root).with_suffix("")
    name = ".".join(rel.parts)
    if name.endswith(".__init__"): name = name[:-9]
    mods[name] = p
def resolve(name):
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None
edges = {}; local = []
for m, p in mods.items():
    tree = ast.parse(p.read_text())
    # typing-only blocks
    tc = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            for x in ast.walk(n): tc.add(id(x))
    funcs = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for x in ast.walk(n):
                if x is not n: funcs.add(id(x))
    for n in ast.walk(tree):
        if id(n) in tc: continue
        targets = []
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and n.module.startswith("tirc"):
            for a in n.names:
                full = f"{n.module}.{a.name}"
                targets.append(resolve(full) if full in mods else resolve(n.module))
        elif isinstance(n, ast.Import):
            targets = [resolve(a.name) for a in n.names if a.name.startswith("tirc")]
        for t in targets:
            if t and t != m:
                edges.setdefault(m, {})[t] = edges.get(m, {}).get(t, False) or (id(n) not in funcs)
                if id(n) in funcs: local.append((m, t))
# SCCs (Tarjan) over all edges
import itertools
index = {}; low = {}; st = []; on = set(); sccs = []; c = itertools.count()
sys.setrecursionlimit(10000)
def sc(v):
    index[v] = low[v] = next(c); st.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
for v in mods:
    if v not in index: sc(v)
root_mods = [m for m in mods if m.count(".") == 1 and m not in ("tirc.__main__",) and mods[m].parent == pkg and mods[m].name != "__init__.py"]
print("modules", len(mods), "root modules (besides __init__/__main__):", len([m for m in root_mods]), sorted(root_mods))
print("function-local imports of tirc modules:", len(local))
print("cycles (SCCs):", len(sccs))
for s in sccs: print("  ", len(s), s if len(s) < 12 else s[:12] + ["..."])
if len(sys.argv) > 2:
    for m, t in sorted(local): print("local", m, "->", t)

def top(m):
    parts = m.split(".")
    return ".".join(parts[:2])
pe = {}
for m, ts in edges.items():
    for t in ts:
        a, b = top(m), top(t)
        if a != b: pe.setdefault(a, set()).add(b)
print("package edges:")
for a in sorted(pe): print(" ", a, "->", sorted(pe[a]))
