"""The layers of docs/internals.md hold: no import cycle among compiler/ and runtime/
modules, no import against the layers, no function-body import without a reason."""
from tests.architecture import imports


def test_no_import_cycles():
    assert imports.cycles(imports.edges()) == []


def test_imports_follow_the_layers():
    bad = [f"{e.src}:{e.line} imports {e.dst}" for e in imports.against_layers(imports.edges())]
    assert bad == []


def test_function_body_imports_have_a_reason():
    bad = [f"{e.src}:{e.line} imports {e.dst}" for e in imports.deferred(imports.edges())]
    assert bad == []


def test_every_module_has_a_layer():
    for name in imports.modules():
        imports.layer_of(name)


def test_runtime_needs_only_numpy_and_the_standard_library():
    assert not [e for e in imports.edges() if e.src.startswith("runtime") and e.dst.startswith("compiler")]


def test_the_check_sees_a_cycle_and_an_upward_import():
    """The checker itself: a planted cycle and an upward import are reported."""
    planted = [imports.Edge("compiler.ir.core", "compiler.primitives.ops", 1, False),
               imports.Edge("compiler.primitives.ops", "compiler.ir.core", 1, False)]
    assert imports.cycles(planted) == [["compiler.ir.core", "compiler.primitives.ops"]]
    assert [e.src for e in imports.against_layers(planted)] == ["compiler.ir.core"]
