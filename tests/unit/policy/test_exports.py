from __future__ import annotations

import pimento.policy


def test_public_api_is_pinned() -> None:
    assert sorted(pimento.policy.__all__) == [
        "AnalyzedQuery", "Authorization", "CompiledPolicy", "Context", "Enforcer", "Explanation", "Identity", "Location", "Norm",
        "Policy", "analyze_query", "apply_implications", "compile_policy", "example_policy_path", "load_compiled_policy", "load_policy",
        "policy_from_dict", "run_checks",
    ]
    for name in pimento.policy.__all__:
        assert hasattr(pimento.policy, name)
