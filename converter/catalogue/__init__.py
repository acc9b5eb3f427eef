"""The op tables as data, for `webnn-convert ops` and the tools that read them: every WebNN op
with its operands' data types and ranks and the source ops that import to it (webnn_ops.py),
and every source op the importers have a rule for, with what it becomes (source_ops.py).

They read both the op catalogue (converter/ops/) and the importers' rule tables, so they sit
above both; nothing that converts a model imports them."""
