"""The IR: types, values, ops, blocks, functions, the primitive record, and what reads
or checks them (printer, parser, verifier, interpreter). No transforms live here."""
from compiler.ir import printer as _printer  # noqa: F401  (installs str(Function))
