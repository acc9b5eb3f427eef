"""Importers: source model formats into the WebNN graph IR."""

__all__ = ["REFUSAL_FIX", "importer_tables"]

# Each importer's registry records here what it imports each source op to:
# format name -> {source op -> [WebNN ops]}, for the op catalogue as data
# (converter/catalogue/webnn_ops.py).
importer_tables: dict[str, dict[str, list[str]]] = {}

# The fix of an import's UnsupportedError. Its reasons are of every kind (an op with no WebNN
# form, a data type or attribute a rule refuses, a value needed at conversion time, an output
# that cannot be one), so the fix claims none of them: each reason says what stops its part.
REFUSAL_FIX = ("change or remove each part named above (its reason says what stops it); "
               "`webnn-convert ops` lists the WebNN ops with the data types and ranks each takes")
