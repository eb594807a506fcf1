"""The Python examples of docs/contextual-dp.md and docs/modes.md run (the latter on a demo hospital)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "docs" / page).read_text(encoding="utf-8"), re.S)


def test_contextual_dp_page_example_runs():
    (block,) = _python_blocks("contextual-dp.md")
    exec(compile(block, "contextual-dp.md", "exec"), {})


def test_modes_page_example_runs(tmp_path, monkeypatch):
    from policy_config import compile_example_policy, configure_policy

    from pimento.demo.hospital import create_demo

    create_demo(tmp_path / "hospital.duckdb", patients=80, seed=2)
    configure_policy(tmp_path / "hospital.duckdb", compile_example_policy(tmp_path / "hospital.duckdb", tmp_path / "compiled.json"))
    with open(Path(tmp_path / "hospital.duckdb").parent / "pimento.toml", "a", encoding="utf-8") as fh:  # one analyst spends more than a quarter of the cap here (issue 28)
        fh.write('\n[ledger]\nanalyst_share = "1"\n')
    monkeypatch.chdir(tmp_path)
    (block,) = _python_blocks("modes.md")
    scope: dict = {}
    exec(compile(block, "modes.md", "exec"), scope)
    assert isinstance(scope["b"].authorized_exact, int)
    assert "contextual DP" in scope["a"].to_dict()["guarantee_kind"]
