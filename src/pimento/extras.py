"""The one message for an optional part of Pimento that is not installed.

The core (``pip install pimento-dp``) answers SQL and questions with the offline parser on DuckDB
and SQLite files; the heavy parts are extras of the distribution (pyproject.toml,
docs/install.md): ``synth`` (the synthetic copy: mbi, jax), ``service`` (``pimento serve``:
fastapi, starlette, uvicorn, jinja2), ``llm`` (the OpenAI-compatible backend: httpx),
``postgres`` (psycopg) and ``spark`` (pyspark), or ``all``. Each import of an extra's package is
lazy or guarded, and a command that needs a missing one fails with one line naming the extra to
install: a :class:`~pimento.errors.ConfigError` (the CLI's user-error exit status 2; the service's
503).

    >>> err = missing_extra("service", "the HTTP service")
    >>> err.one_line()
    "the HTTP service needs the 'service' extra, which is not installed (pip install 'pimento-dp[service]')"
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from pimento.errors import ConfigError

__all__ = ["DISTRIBUTION", "EXTRAS", "MODULES", "check_extra", "missing_extra", "require_extra"]

#: The distribution's name on the package index (pyproject.toml's ``[project] name``).
DISTRIBUTION = "pimento-dp"

#: The extras, and what each gives (pyproject.toml's ``[project.optional-dependencies]``).
EXTRAS = {
    "synth": "the DP synthetic copy (mbi, jax)",
    "service": "the HTTP service and web page (fastapi, starlette, uvicorn, jinja2)",
    "llm": "the OpenAI-compatible LLM backend (httpx)",
    "postgres": "PostgreSQL databases and ledgers (psycopg)",
    "spark": "the Spark engine (pyspark; needs a Java 17 runtime)",
}

#: The top-level modules each extra installs (what a missing one looks like to ``import``).
MODULES = {
    "synth": ("mbi", "jax", "jaxlib"),
    "service": ("fastapi", "starlette", "uvicorn", "jinja2"),
    "llm": ("httpx",),
    "postgres": ("psycopg",),
    "spark": ("pyspark", "py4j"),
}

#: Extras whose packages need a newer Python than the core does (mbi 2 needs Python 3.11).
_MINIMUM_PYTHON = {"synth": (3, 11)}


def missing_extra(extra: str, what: str) -> ConfigError:
    """The error for ``what`` (a feature, e.g. "the HTTP service"), which needs ``extra``."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}")
    minimum = _MINIMUM_PYTHON.get(extra)
    if minimum and sys.version_info < minimum:
        version = ".".join(map(str, minimum))
        return ConfigError(
            f"{what} needs Python {version} or later (this is Python {sys.version_info.major}.{sys.version_info.minor})",
            hint=f"then pip install '{DISTRIBUTION}[{extra}]'",
        )
    return ConfigError(
        f"{what} needs the {extra!r} extra, which is not installed", hint=f"pip install '{DISTRIBUTION}[{extra}]'"
    )


def require_extra(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module`` (a package of ``extra``), or raise :func:`missing_extra`'s error."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        check_extra(exc, extra, what)
        raise


def check_extra(exc: ImportError, extra: str, what: str) -> None:
    """Raise :func:`missing_extra`'s error if ``exc`` is a module of ``extra`` that is not installed.

    For a guarded import of several modules: ``except ImportError as exc: check_extra(exc, ...);
    raise``. Any other import error (a bug) is left to the caller to re-raise as it is.
    """
    name = getattr(exc, "name", None) or ""
    if name.split(".")[0] in MODULES[extra]:
        raise missing_extra(extra, what) from exc
