"""The import graph of compiler/ and runtime/, read from the source (imports anywhere
in a file count: module level, function bodies, ``if TYPE_CHECKING:`` blocks).

    python -m tests.architecture.imports      # prints cycles, upward imports and
                                               # function-body imports; exit 1 on a violation

The layers (docs/internals.md draws them): a module may import its own package and
packages of lower layers, never a higher one, and never a sibling of the same layer.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: (package prefix, layer); the longest matching prefix decides
LAYERS: list[tuple[str, int]] = [
    ("runtime", 0),
    ("compiler.errors", 1), ("compiler.config", 1), ("compiler.version", 1),
    ("compiler.ir", 2), ("compiler.progress", 2),
    ("compiler.signature", 3), ("compiler.primitives", 3),
    ("compiler.transforms", 4), ("compiler.backend", 4),
    ("compiler.frontend", 5),
    ("compiler.function", 6), ("compiler.pipeline", 6),
    ("compiler.cache", 7),
    ("compiler.api", 8),
    ("compiler.build", 9), ("compiler.random", 9),
    ("compiler.cli", 10),
    ("compiler", 11),
    ("compiler.__main__", 12),
]

#: function-body imports that are there on purpose, with the reason (module, imported module)
DEFERRED_IMPORTS: dict[tuple[str, str], str] = {
    # import time (docs/internals.md, "Import time"): `import compiler` loads what a kernel loaded
    # from the on-disk cache needs (jit, Kernel, cache.py, MCJIT), not the frontend, the
    # transforms and the code generator (~45 ms of `import compiler` before, measured with
    # `python -X importtime`); they load with the first compile or the first use of their names
    ("compiler", "compiler.api.control"): "import time: compiler.cond/switch/while_loop on first use",
    ("compiler", "compiler.function"): "import time: compiler.Function on first use",
    ("compiler", "compiler.random"): "import time: compiler.random on first use",
    ("compiler", "compiler.api.vmap"): "import time: compiler.vmap on first use",
    ("compiler.api", "compiler.api.autodiff"): "import time: grad, jacrev, ... on first use",
    ("compiler.api", "compiler.api.loops"): "import time: fori_loop, scan on first use",
    ("compiler.api", "compiler.api.staged"): "import time: registered before the first staging",
    ("compiler.api.kernel", "compiler.pipeline"): "import time: the compile machinery, on the first compile",
    ("compiler.api.kernel", "compiler.function.trampoline"): "import time: host callbacks, on the first compile",
    ("compiler.api.kernel", "compiler.backend.parallel"): "import time: parallel=True, on its first compile",
    ("compiler.api.kernel", "compiler.api.callbacks"): "import time: Kernel.ctypes/address(prototype=...)",
    ("compiler.api.kernel", "compiler.api.pickling"): "import time: pickling a Kernel",
    ("compiler.cache", "compiler.function.trampoline"): "import time: storing an entry (after a compile)",
    ("compiler.backend.pool", "compiler.backend.passes"): "import time: a cache hit loads the pool "
                                                          "(jit.py); only `aotx build` optimizes it",
    ("compiler.frontend", "compiler.frontend.staging"): "import time: the staging interpreter and the NumPy "
                                                        "API tables, on the first staging",
}


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    line: int
    in_function: bool


def modules(root: Path = ROOT) -> dict[str, Path]:
    mods = {}
    for top in ("compiler", "runtime"):
        for path in sorted((root / top).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, package: str, mods: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]


def edges(mods: dict[str, Path] | None = None) -> list[Edge]:
    """Every internal import, with whether it sits in a function body."""
    mods = mods or modules()
    out = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        in_function = {id(sub) for fn in ast.walk(tree)
                       if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for sub in ast.walk(fn)}
        for node in ast.walk(tree):
            for target in _targets(node, package, mods):
                dst = _resolve(target, mods)
                if dst is not None and dst != name:
                    out.append(Edge(name, dst, node.lineno, id(node) in in_function))
    return out


def layer_of(module: str) -> tuple[str, int]:
    matches = [(p, n) for p, n in LAYERS if module == p or module.startswith(p + ".")]
    if not matches:
        raise KeyError(f"{module} is in no layer: add it to LAYERS")
    return max(matches, key=lambda m: len(m[0]))


def cycles(all_edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for e in all_edges:
        graph.setdefault(e.src, set()).add(e.dst)
        graph.setdefault(e.dst, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[v] = min(low[v], index[child])
    return found


def against_layers(all_edges: list[Edge]) -> list[Edge]:
    """Imports of a higher layer, or of a sibling package of the same layer."""
    bad = []
    for e in all_edges:
        (sp, sl), (dp, dl) = layer_of(e.src), layer_of(e.dst)
        if dl > sl or (dl == sl and sp != dp):
            bad.append(e)
    return bad


def deferred(all_edges: list[Edge]) -> list[Edge]:
    """Function-body imports that are not on the DEFERRED_IMPORTS list."""
    return [e for e in all_edges if e.in_function and (e.src, e.dst) not in DEFERRED_IMPORTS]


def main() -> int:
    all_edges = edges()
    problems = 0
    for comp in cycles(all_edges):
        print(f"cycle of {len(comp)}: {', '.join(comp)}")
        problems += 1
    for e in against_layers(all_edges):
        print(f"against the layers: {e.src}:{e.line} imports {e.dst}")
        problems += 1
    for e in deferred(all_edges):
        print(f"function-body import: {e.src}:{e.line} imports {e.dst}")
        problems += 1
    print(f"{len(all_edges)} internal imports, {sum(e.in_function for e in all_edges)} in function "
          f"bodies; {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
