"""Each package face exports exactly what it says (issue 24), the way httpx pins its ``__all__``.

For every face: ``__all__`` is the expected set below (a name added to or dropped from a face is a
decision, made here in the same change), it has no duplicates, every name in it exists (so
``from pimento.x import *`` works), and every public name the face offers from pimento's own code
is in it (nothing imported into a package for callers but left out of its ``__all__``). Modules,
``from __future__`` features and names from other libraries (``dataclass``, ``ClassVar``) are not
offered.
"""

from __future__ import annotations

import __future__
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import pimento

EXPECTED: dict[str, set[str]] = {
    "pimento": {"__version__", "Session"},
    "pimento.errors": {
        "BudgetError", "CatalogError", "ConfigError", "ConstraintViolation", "ContextNotAllowedError",
        "DatabaseChangedError", "DataSourceError", "DeploymentHaltedError", "EngineError", "EngineQueryError",
        "Highlight", "InternalError", "KeyStoreError", "LedgerIntegrityError", "LLMError", "ModeError", "MostlyNoiseError",
        "NotACountingQuestion", "NotASelectQuestion", "PimentoError", "PolicyError", "PrivacyParameterError",
        "QueryTimeout", "Refusal", "ReleaseAbortedError", "SearchError", "ServiceError", "SqlError",
        "SyntheticCopyError", "UnsupportedQuery", "UserError",
    },
    "pimento.schema": {"Catalog", "Column", "ForeignKey", "FunctionalDependency", "normalize_type", "Table"},
    "pimento.sql": {
        "Attribute", "Count", "CountQuery", "JoinCondition", "parse_count_query", "REJECTION_REASONS",
        "Relation", "Selection",
    },
    "pimento.engines": {"Engine", "open_engine", "register_engine", "registered_engines", "Result"},
    "pimento.sensitivity": {
        "attribute", "Attribution", "check_beta", "compute_te", "Envelope", "maximize_envelope",
        "needed_subsets", "Neighbourhood", "private_relations", "residual_sensitivity", "ResidualCounts",
        "ResidualSensitivity", "rs_from_te", "te_key", "value_function",
    },
    "pimento.mechanisms": {
        "AuditReport", "Budget", "Charge", "format_number", "GlobalLaplace", "guarded_release",
        "GuardedAnswer", "Ledger", "ledger_path", "Mechanism", "mechanism_for", "mechanism_for_query",
        "parse_number", "Release", "request_key", "SmoothLaplace", "SmoothQuartic",
    },
    "pimento.synth": {"META_TABLE", "source_fingerprint", "synthesize", "SynthResult"},
    "pimento.llm": {
        "Backend", "Candidate", "ChatRequest", "ChatResponse", "complete_structured",
        "complete_structured_one", "Completion", "expansion_messages", "ExpansionAnswer",
        "generate_zero_shot", "Message", "open_backend", "OpenAIBackend", "RecordingBackend",
        "register_backend", "registered_backends", "Rejected", "render_schema", "ReplayBackend",
        "request_key", "SqlAnswer", "StructuredSample", "SYNTH_META_TABLE", "SyntheticValues", "Usage",
        "zero_shot_messages", "ZeroShotResult",
    },
    "pimento.nl": {
        "AggregateCandidate", "Candidate", "CountIntent", "detect_intent", "join_edges", "join_trees", "JoinEdge", "JoinTree",
        "NotACountingQuestion", "NotASelectQuestion", "NumericRange", "SelectCandidate", "SelectQuery",
        "translate", "translate_aggregate", "translate_select", "ValueHit", "ValueIndex",
    },
    "pimento.search": {
        "Action", "AddRelation", "Alternative", "decompose", "Expander", "make_expander", "NodeState",
        "PartialQuery", "register_expander", "SchemaGraphExpander", "SearchConfig", "SearchResult",
        "SensitivityInfo", "SensitivitySearch", "SetCount", "Stop",
    },
    "pimento.policy": {
        "AnalyzedQuery", "apply_implications", "Authorization", "analyze_query", "CompiledPolicy",
        "compile_policy", "Context", "Enforcer", "example_policy_path", "Explanation", "Identity",
        "load_compiled_policy", "load_policy", "Location", "Norm", "Policy", "policy_from_dict", "run_checks",
    },
    "pimento.ingest": {
        "Cell", "DEFAULT_LLM_URL", "derive_spec", "Document", "DOCUMENTS_TABLE", "Extractor",
        "EXTRACTOR_NAMES", "ingest", "IngestReport", "LLMExtractor", "load_corpus", "load_spec",
        "load_target", "locate", "Lookup", "Mention", "OfflineExtractor", "open_extractor", "parse_spec",
        "PatternSpec", "PROVENANCE_TABLE", "Rejected", "REJECTED_TABLE", "Resolution", "resolve", "Row",
        "Span", "Target",
    },
    "pimento.release": {
        "Answer", "Context", "interpret", "Interpretation", "Mode", "Neighbourhood", "planner", "Request",
        "SearchOptions", "Session",
    },
    "pimento.demo": {
        "check_target", "create_demo", "DEMO_QUESTION", "DEMO_SQL_ORDERS", "DEMO_SQL_PRESCRIPTION", "DemoInfo",
    },
}  # fmt: skip

#: Names a module binds for its own use that no face offers.
NOT_OFFERED = {"TYPE_CHECKING"}


def _offered(module: ModuleType) -> set[str]:
    """The public names ``module`` binds from pimento's own code (see the module docstring)."""
    out = set()
    for name, value in vars(module).items():
        if name.startswith("_") or name in NOT_OFFERED or inspect.ismodule(value):
            continue
        if isinstance(value, __future__._Feature):  # `from __future__ import annotations`
            continue
        origin = getattr(value, "__module__", None)
        if isinstance(origin, str) and (inspect.isclass(value) or callable(value)) and not origin.startswith("pimento"):
            continue  # dataclass, ClassVar, ...: another library's
        out.add(name)
    return out


@pytest.mark.parametrize("face", sorted(EXPECTED))
def test_all_is_pinned(face: str) -> None:
    module = importlib.import_module(face)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{face} has no __all__"
    assert len(exported) == len(set(exported)), f"{face}.__all__ repeats a name"
    assert set(exported) == EXPECTED[face], (
        f"{face}.__all__ changed: added {sorted(set(exported) - EXPECTED[face])}, "
        f"dropped {sorted(EXPECTED[face] - set(exported))} (update EXPECTED here if that is intended)"
    )


@pytest.mark.parametrize("face", sorted(EXPECTED))
def test_every_exported_name_exists(face: str) -> None:
    module = importlib.import_module(face)
    missing = [name for name in getattr(module, "__all__", ()) if not hasattr(module, name)]
    assert not missing, f"{face}.__all__ names {missing}, which {face} does not define"
    namespace: dict[str, object] = {}
    exec(f"from {face} import *", namespace)  # noqa: S102 - the star import a user would write
    assert set(getattr(module, "__all__", ())) <= set(namespace)


@pytest.mark.parametrize("face", sorted(EXPECTED))
def test_every_offered_name_is_exported(face: str) -> None:
    module = importlib.import_module(face)
    extra = sorted(_offered(module) - set(getattr(module, "__all__", ())))
    assert not extra, f"{face} offers {extra} without listing them in __all__"


def test_every_package_face_is_pinned() -> None:
    """A new package under src/pimento with an ``__all__`` gets an entry here."""
    faces = {f"pimento.{info.name}" for info in pkgutil.iter_modules(pimento.__path__) if info.ispkg}
    with_all = {face for face in faces if hasattr(importlib.import_module(face), "__all__")}
    assert with_all <= set(EXPECTED), f"pin these faces' __all__ here: {sorted(with_all - set(EXPECTED))}"
