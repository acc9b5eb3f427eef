"""Importers: source model formats into the WebNN graph IR."""

__all__ = ["importer_tables"]

# Each importer's registry records here what it imports each source op to:
# format name -> {source op -> [WebNN ops]}, for the op catalogue (converter/catalogue.py).
importer_tables: dict[str, dict[str, list[str]]] = {}
