"""Issue 26, item 4: the warning ``pimento sql`` says on stderr before it charges names the epsilon predicted to give
+-10% (the quick check prices the asked epsilon only; when it warns, the planner's epsilons are priced too)."""

from __future__ import annotations

import json

from test_sql_preview_cli import COUNT, _run, hospital  # noqa: F401  (the module's deployment fixture)


def test_the_warning_before_the_charge_names_the_epsilon_for_10_percent(hospital):  # noqa: F811
    previewed = json.loads(_run("sql", "--db", str(hospital), "--sql", COUNT, "--epsilon", "0.001", "--preview", "--json").output)
    better = previewed["epsilon_for_10_percent"]
    assert better is not None
    noisy = _run("sql", "--db", str(hospital), "--sql", COUNT, "--epsilon", "0.001", "--json")
    said = " ".join(noisy.stderr.split())
    assert noisy.exit_code == 0 and f"epsilon {better} is predicted to give about +-10%" in said, said
    assert json.loads(noisy.stdout)["value"] is not None  # the CLI warns, then spends
