"""Verification: proving a converted graph computes what its source model computes.

    core.py       `converter.verify`: the source on its own runtime vs the graph, one run
    steps.py      `converter.verify_steps`: stateful models, N steps with their state
    decode.py     greedy decoding through the graph vs the source decoder
    parity.py     the comparison policy (tolerances.md) and the verdict against float64
    reference/    the float64 oracle: a numpy interpreter of WebNN graphs
    bisect.py     where a mismatch starts, op by op against the oracle
    op_budgets.py one operation's ULP budget, for bisect
    notes.py, text.py   what a report says beside its verdicts, and the report as text

It sits above everything it checks (conversion, runtimes, state) and below the API. The
package is not named `verify`: importing `converter.verify.<module>` would set the attribute
`converter.verify` to that package, replacing the API function of that name."""
