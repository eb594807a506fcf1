"""The policy-checks benchmark (benchmarks.policy_checks) runs on a tiny demo and reports each step."""

from __future__ import annotations

import json

from benchmarks.policy_checks import main


def test_policy_checks_bench_small(tmp_path, capsys) -> None:
    main(["--workdir", str(tmp_path), "--patients", "150"])
    main(["--workdir", str(tmp_path), "--patients", "150", "--only-satisfiability"])
    whole, alone = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    for result in (whole, alone):
        assert result["returncode"] == 0 and not result["timed_out"], result
        assert result["witnesses"] == ["N1", "N2", "N3", "N5"]
        assert [s for s, _ in result["steps"] if "searching a witness flow" in s] == [
            f"satisfiability: searching a witness flow for {n} ({i}/4)" for i, n in enumerate(["N1", "N2", "N3", "N5"], 1)]
        assert result["peak_rss_mb"] > 0
    assert whole["run"] == "policy compile" and any(s == "redundancy" for s, _ in whole["steps"])
    assert alone["run"] == "satisfiability only" and not any(s == "redundancy" for s, _ in alone["steps"])
