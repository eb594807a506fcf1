import pimento.mechanisms as mechanisms


def test_public_api_is_pinned():
    assert sorted(mechanisms.__all__) == [
        "AuditReport",
        "Budget",
        "Charge",
        "GlobalLaplace",
        "GuardedAnswer",
        "Ledger",
        "Mechanism",
        "Release",
        "SmoothLaplace",
        "SmoothQuartic",
        "format_number",
        "guarded_release",
        "ledger_path",
        "mechanism_for",
        "mechanism_for_query",
        "parse_number",
        "request_key",
    ]
    for name in mechanisms.__all__:
        assert hasattr(mechanisms, name)
