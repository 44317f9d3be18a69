"""The component's state is its own (issue #50): no module of the package but
the component's file and its state module reads or writes a private
attribute (``_name``) of the component, or replaces its ``cfg``, ``model`` or
``target`` (nor those of its ``ComponentState``: ``swap`` does). Every other
module is handed what it works on (the component's ``ComponentState``, a
model, a target), so what changes a component can be read in those two files.

The test walks the syntax tree of every module, so a new module that reaches
into the component fails here whatever it does with the attribute."""

import ast
from pathlib import Path
from typing import Iterator, List, Optional

from conftest import PACKAGE
#: the component's own file, and the module of the state it keeps
OWNERS = {PACKAGE / "pipeline" / "crf_tagger.py", PACKAGE / "pipeline" / "state.py"}
#: the names a component, or the state it hands out, goes by in the package
#: (``self._pipe`` too, an object's reference to one)
COMPONENT_NAMES = {"pipe", "component", "proc", "tagger", "crf_tagger", "state"}
#: the attributes only the owners may assign
REPLACED = {"cfg", "model", "target"}


def component_named(node: ast.AST) -> Optional[str]:
    """The name ``node`` calls the component by (``pipe``, ``self._pipe``,
    ``nlp.get_pipe(...)``), or None where it names something else."""
    if isinstance(node, ast.Name) and node.id in COMPONENT_NAMES:
        return node.id
    if isinstance(node, ast.Attribute) and node.attr.lstrip("_") in COMPONENT_NAMES:
        return ast.unparse(node)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get_pipe"):
        return ast.unparse(node)
    return None


def is_private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def assigned(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node a statement assigns to (the parts of a tuple too)."""
    for node in ast.walk(tree):
        targets: List[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            elif isinstance(target, ast.Starred):
                targets.append(target.value)
            else:
                yield target


def offences(path: Path) -> List[str]:
    """Where ``path`` reaches into a component's private state or replaces its parts."""
    tree = ast.parse(path.read_text(encoding="utf8"))
    where = path.relative_to(PACKAGE.parent)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            name = component_named(node.value)
            if name is not None:
                found.append(f"{where}:{node.lineno}: {name}.{node.attr}")
        # setattr(pipe, "_x", ...) / getattr(pipe, "_x") name the attribute as a string
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "delattr", "hasattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            attr = node.args[1].value
            name = component_named(node.args[0])
            if name is not None and (is_private(attr)
                                     or (node.func.id != "getattr" and attr in REPLACED)):
                found.append(f"{where}:{node.lineno}: {node.func.id}({name}, {attr!r})")
    for target in assigned(tree):
        if isinstance(target, ast.Attribute) and target.attr in REPLACED:
            name = component_named(target.value)
            if name is not None:
                found.append(f"{where}:{target.lineno}: {name}.{target.attr} = ...")
    return sorted(found, key=lambda offence: int(offence.split(":")[1]))


def test_no_module_but_the_components_own_touches_its_private_state():
    modules = sorted(path for path in PACKAGE.rglob("*.py") if path not in OWNERS)
    assert len(modules) > 50  # the walk found the package
    found = [offence for path in modules for offence in offences(path)]
    assert not found, "the component's private state, touched from outside:\n" + "\n".join(found)


def test_the_walk_sees_each_kind_of_offence(tmp_path):
    """Each form a module could reach in by is caught (and public reads are not)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(pipe, nlp):\n"
        "    pipe._set_labels([])\n"
        "    x = self._pipe._averages\n"
        "    pipe.model, pipe.target = 1, 2\n"
        "    pipe.cfg = {}\n"
        "    nlp.get_pipe('crf')._rehearsal_model = None\n"
        "    setattr(component, 'model', None)\n"
        "    getattr(tagger, '_added_labels')\n"
        "    state.model = None\n"
        "    state.cfg['labels'] = []\n"
        "    return pipe.cfg['labels'], pipe.model, pipe.__class__, other._private\n",
        encoding="utf8")
    global PACKAGE
    package, PACKAGE = PACKAGE, tmp_path
    try:
        found = offences(sample)
    finally:
        PACKAGE = package
    assert sorted(line.split(": ", 1)[1] for line in found) == sorted([
        "pipe._set_labels", "self._pipe._averages", "nlp.get_pipe('crf')._rehearsal_model",
        "setattr(component, 'model')", "getattr(tagger, '_added_labels')",
        "pipe.cfg = ...", "pipe.model = ...", "pipe.target = ...", "state.model = ...",
    ])


def test_the_component_and_its_state_stay_small():
    """The class and the state it keeps, together, at most 600 lines (issue
    #50: spaCy's tagger.pyx is 303): what grows belongs in a module of its own
    that is handed the state (learning, initialize, rehearsal, saved_state,
    prediction)."""
    lines = sum(len(path.read_text().splitlines()) for path in OWNERS)
    assert lines <= 600, f"crf_tagger.py + state.py: {lines} lines"
