"""Run the ONNX backend node test cases through import and our executor; print the counts.

Usage:
    python tools/onnx_backend_report.py                 # every case; summary + per-op table
    python tools/onnx_backend_report.py --op Conv --op Pad -v   # only cases using these ops
    python tools/onnx_backend_report.py --markdown      # the summary table for docs/reference/performance.md
    python tools/onnx_backend_report.py --write-failures  # rewrite expected_failures.json

A case is claimed when every op in it has an import rule. Outcomes: pass, fail (wrong numbers),
unsupported (the importer refused it, with a reason), error (a crash: always a bug to fix).
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.onnx_backend.cases import all_cases, claimed, run_case  # noqa: E402

FAILURES = ROOT / "tests" / "onnx_backend" / "expected_failures.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", action="append", default=[], help="only cases using this ONNX op")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--write-failures", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    cases = all_cases()
    results = {}
    for name, case in sorted(cases.items()):
        ops = {n.op_type for n in case.model.graph.node}
        if args.op and not ops & set(args.op):
            continue
        outcome, detail = run_case(case)
        results[name] = (claimed(case), outcome, detail, sorted(ops))
        if args.verbose:
            print(f"{outcome:12} {'claimed' if claimed(case) else 'unclaimed':9} {name}: {detail}")
    total = collections.Counter(o for _, o, _, _ in results.values())
    mine = collections.Counter(o for c, o, _, _ in results.values() if c)
    n_claimed = sum(mine.values())
    rate = mine["pass"] / n_claimed if n_claimed else 0.0
    if args.markdown:
        print("| cases | claimed | pass | fail | unsupported | error | pass rate (claimed) |")
        print("|---|---|---|---|---|---|---|")
        print(f"| {len(results)} | {n_claimed} | {mine['pass']} | {mine['fail']} | "
              f"{total['unsupported']} | {mine['error']} | {rate:.1%} |")
    else:
        print(f"{len(results)} cases; claimed {n_claimed}: " +
              ", ".join(f"{k} {v}" for k, v in sorted(mine.items())) +
              f"; pass rate {rate:.1%}; all outcomes: {dict(total)}")
    if args.write_failures:
        # A listed case keeping its kind of outcome keeps its reason: some are written by
        # hand (why the case itself is wrong, say), not the importer's message.
        listed = json.loads(FAILURES.read_text()) if FAILURES.exists() else {}
        failing = {n: listed[n] if listed.get(n, "").startswith(f"{o}:") else f"{o}: {d}"[:300]
                   for n, (c, o, d, _) in results.items() if c and o != "pass"}
        FAILURES.write_text(json.dumps(dict(sorted(failing.items())), indent=1) + "\n")
        print(f"wrote {len(failing)} entries to {FAILURES}")


if __name__ == "__main__":
    main()
