"""A model at several values of its symbolic dims: `Variants` (variants.py), one graph whose
shapes are expressions of the dims (symbolic.py, expr.py), the graph at a value never converted
(instantiate.py), and the two ways they are written: one graph file with shared weights
(variants_file.py) and one ES module taking the dims (module_js.py). Converting a model at
several values is converter/conversion/variants.py, above the targets."""
from .variants import Variants

__all__ = ["Variants"]
