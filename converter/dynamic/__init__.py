"""A model at several values of its symbolic dims: `Variants` and `convert_variants`
(variants.py), and one graph whose shapes are expressions of the dims (symbolic.py)."""
from .variants import Variants, convert_variants

__all__ = ["Variants", "convert_variants"]
