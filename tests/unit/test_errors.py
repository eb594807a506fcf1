"""One exception tree: every exception class of the package is defined in ``pimento.errors``, in the
tree its docstring draws, and each carries the HTTP status the service answers it with."""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import pimento
from pimento import errors
from pimento.errors import PimentoError, UserError

SRC = Path(pimento.__file__).parent

#: Exception classes that may live outside pimento.errors, and why.
ALLOWED_OUTSIDE = {
    # Control flow private to its module: raised and caught there, never seen by a caller.
    "pimento.llm.structured._NotJson": "private",
    "pimento.llm.structured._SchemaError": "private",
    "pimento.search.llm_expander._Invalid": "private",
    "pimento.policy.extract_offline._Unextracted": "private",
    # The PostgreSQL ledger's driver errors, raised as sqlite3's OperationalError so that the ledger
    # handles both backends' errors on one code path (it turns them into Pimento errors).
    "pimento.mechanisms.ledger_postgres.LedgerBackendError": "a sqlite3.OperationalError on purpose",
}

#: The status of every class, as the service's isinstance ladder gave it before the statuses moved
#: onto the classes (PimentoError and InternalError: the 500 of the service's catch-all handlers).
STATUS = {
    "PimentoError": 500,
    "InternalError": 500,
    "UserError": 400,
    "ConfigError": 503,
    "DataSourceError": 503,
    "EngineError": 503,
    "EngineQueryError": 503,
    "QueryTimeout": 503,
    "DatabaseChangedError": 503,
    "SyntheticCopyError": 503,
    "CatalogError": 422,
    "ConstraintViolation": 422,
    "SqlError": 422,
    "UnsupportedQuery": 422,
    "Refusal": 422,
    "PrivacyParameterError": 422,
    "BudgetError": 409,
    "MostlyNoiseError": 409,
    "LedgerIntegrityError": 503,
    "ReleaseAbortedError": 500,
    "DeploymentHaltedError": 503,
    "PolicyError": 422,
    "ModeError": 422,
    "ContextNotAllowedError": 403,
    "LLMError": 502,
    "SearchError": 422,
    "NotACountingQuestion": 400,
    "NotASelectQuestion": 400,
    "KeyStoreError": 400,
    "ServiceError": 400,
}


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


@pytest.fixture(scope="module")
def package_exceptions() -> set[type]:
    """Every exception class defined in a module of the package, after importing them all."""
    for module in pkgutil.walk_packages(pimento.__path__, "pimento."):
        if not module.name.endswith(".__main__"):  # running it would start the CLI
            importlib.import_module(module.name)
    return {cls for cls in _subclasses(BaseException) if cls.__module__ == "pimento" or cls.__module__.startswith("pimento.")}


def _public_exceptions() -> dict[str, type]:
    named = {name: getattr(errors, name) for name in errors.__all__}
    return {name: obj for name, obj in named.items() if isinstance(obj, type) and issubclass(obj, BaseException)}


def test_every_exception_class_is_defined_in_pimento_errors(package_exceptions):
    outside = {_qualname(cls) for cls in package_exceptions if cls.__module__ != "pimento.errors"}
    assert outside - set(ALLOWED_OUTSIDE) == set(), "define these in pimento.errors (and draw them in its tree)"
    assert set(ALLOWED_OUTSIDE) - outside == set(), "stale entries of ALLOWED_OUTSIDE"
    inside = {cls.__name__ for cls in package_exceptions if cls.__module__ == "pimento.errors"}
    assert inside == set(_public_exceptions()), "every class of pimento.errors is public (in __all__), and only those"


def test_every_pimento_exception_roots_at_pimento_error(package_exceptions):
    for cls in package_exceptions:
        if _qualname(cls) in ALLOWED_OUTSIDE:
            continue
        assert issubclass(cls, PimentoError), cls


@functools.cache
def _names_used(path: Path) -> set[str]:
    """The names a module's code mentions: names, attributes, imported names (not its text)."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.alias):
            used.add(node.name)
    return used


@pytest.mark.parametrize("qualname", sorted(q for q, why in ALLOWED_OUTSIDE.items() if why == "private"))
def test_private_exceptions_never_leave_their_module(qualname):
    module, name = qualname.rsplit(".", 1)
    assert name.startswith("_")
    home = Path(importlib.import_module(module).__file__).resolve()
    users = [p for p in SRC.rglob("*.py") if p.resolve() != home and name in _names_used(p)]
    assert users == [], f"{name} is used outside {module}: make it a class of pimento.errors"


def test_each_class_has_the_status_the_service_gave_it(package_exceptions):
    public = _public_exceptions()
    assert set(public) == set(STATUS), "a new error class needs its status here (and in the tree of pimento.errors)"
    for name, cls in public.items():
        assert cls.http_status == STATUS[name], name
    for cls in package_exceptions:
        if issubclass(cls, UserError):
            assert isinstance(cls.http_status, int) and 400 <= cls.http_status < 600, cls


def _tree() -> list[tuple[int, str, int]]:
    """(column, class name, status) of each row of the tree drawn in pimento.errors' docstring."""
    doc = errors.__doc__ or ""
    rows = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*(?:[├└]── )?)([A-Z]\w+)\s+(\d{3})\b", line)
        if match and (match.group(2) == "PimentoError" or "──" in match.group(1)):
            rows.append((len(match.group(1)), match.group(2), int(match.group(3))))
    return rows


def test_the_docstring_tree_draws_every_public_class_under_its_parent_with_its_status():
    public = _public_exceptions()
    rows = _tree()
    names = [name for _, name, _ in rows]
    assert sorted(names) == sorted(public), "the tree names every exception class of __all__, once, and only those"
    stack: list[tuple[int, str]] = []
    for column, name, status in rows:
        while stack and stack[-1][0] >= column:
            stack.pop()
        parent = stack[-1][1] if stack else None
        base = public[name].__bases__[0]
        assert (base.__name__ if base.__module__ == "pimento.errors" else None) == parent, f"{name} is drawn under {parent}"
        assert public[name].http_status == status, f"{name}: the tree says {status}"
        stack.append((column, name))


def test_refusal_constructs_are_the_allow_lists():
    """Every ``Refusal(...)`` of the allow-list names a construct of ``SELECTION_REASONS`` (the check
    its constructor made when it lived in pimento.sql.allowlist), as a literal."""
    from pimento.sql.allowlist import SELECTION_REASONS

    tree = ast.parse((SRC / "sql" / "allowlist.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Refusal"]
    assert len(calls) > 20
    for call in calls:
        first = call.args[0]
        assert isinstance(first, ast.Constant) and first.value in SELECTION_REASONS, ast.unparse(call)


def test_service_error_carries_its_own_status():
    refused = errors.ServiceError(429, "slow down", hint="retry in 3 s", headers={"Retry-After": "3"})
    assert isinstance(refused, UserError)
    assert (refused.http_status, refused.status, refused.type, refused.one_line()) == (429, 429, "RateLimited", "slow down (retry in 3 s)")
    assert errors.ServiceError(403, "no", type_="CsrfError").type == "CsrfError"
    assert errors.ServiceError(418, "teapot").type == "Error"
    assert errors.ServiceError.http_status == 400  # the class's own is untouched
