"""The WebNN graph IR: operands, operations, graphs."""
from .graph import Graph
from .operand import ConstantData, Operand, TensorDesc, Use
from .operation import Operation
from .state import StateVar

__all__ = ["Graph", "Operand", "Operation", "ConstantData", "TensorDesc", "Use", "StateVar"]
