"""Whole conversions, file to file: a source read and an output written by their suffixes
(by_suffix.py), and a model converted at several values of its dims (variants.py). They sit
above everything a conversion uses (importers, formats, lowering, emitters, exporters, dynamic
dims and, for variants, the targets' rewrites) and below what runs and verifies the results;
`converter.load`, `converter.convert` and `converter.save` are these."""
