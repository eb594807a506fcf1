"""Contextual integrity: norms, policy files, the view compiler, canonical checks, runtime enforcement.

Typical use::

    from pimento.policy import load_policy, compile_policy, run_checks, Enforcer
    policy = load_policy("hospital_hipaa.yaml")
    compiled = compile_policy(policy, db.catalog, db.engine)  # P+: information implication included
    compiled = run_checks(compiled, db.catalog, db.engine, policy=policy)  # merged; reports in compiled.checks
    enforcer = Enforcer(compiled, db.engine, db.catalog)
    ctx = enforcer.context("employee:10", "employee:20", "treatment")
    answer = enforcer.authorize(ctx, "SELECT pat_id, diagnosis FROM Visit")  # the analyst's answer
    why = enforcer.explain(ctx, "SELECT pat_id, diagnosis FROM Visit")  # custodian only: private
"""

from __future__ import annotations

from importlib.resources import files

from pimento.policy.checks import run_checks
from pimento.policy.compiled import CompiledPolicy, Location, load_compiled_policy
from pimento.policy.compiler import compile_policy
from pimento.policy.enforce import Authorization, Context, Enforcer, Explanation, Identity
from pimento.policy.implication import apply_implications
from pimento.policy.lineage import AnalyzedQuery, analyze_query
from pimento.policy.model import Norm, Policy, load_policy, policy_from_dict

__all__ = [
    "AnalyzedQuery",
    "Authorization",
    "CompiledPolicy",
    "Context",
    "Enforcer",
    "Explanation",
    "Identity",
    "Location",
    "Norm",
    "Policy",
    "analyze_query",
    "apply_implications",
    "compile_policy",
    "example_policy_path",
    "load_compiled_policy",
    "load_policy",
    "policy_from_dict",
    "run_checks",
]


def example_policy_path(name: str = "hospital_hipaa") -> str:
    """Path of a shipped example policy (package data)."""
    return str(files("pimento.policy") / "examples" / f"{name}.yaml")
