"""The WebNN graph IR: operands, operations, graphs; and what is read off a graph alone: the
transposes a conversion recorded at its boundary (io_permutations.py), its numbers for
`inspect` (summary.py)."""
from .graph import Graph
from .operand import ConstantData, Operand, TensorDesc, Use
from .operation import Operation
from .state import StateVar

__all__ = ["Graph", "Operand", "Operation", "ConstantData", "TensorDesc", "Use", "StateVar"]
