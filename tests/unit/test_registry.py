"""The one registry shape of engines, LLM backends and expanders (pimento.registry)."""

from __future__ import annotations

from pimento.registry import Registry


def test_builtins_load_first_so_a_plugin_registered_before_any_use_still_wins() -> None:
    loaded: list[str] = []
    registry: Registry[str] = Registry()

    def load() -> None:
        if not loaded:  # an import: runs once
            loaded.append("builtins")
            registry.register("builtin", "built-in factory", matches=lambda loc: loc.endswith(".db"))

    registry._load = load  # noqa: SLF001  (a registry whose built-ins register through it)
    registry.register("plugin", "plug-in factory", matches=lambda loc: loc.startswith("mine:"))
    registry.register("claim", "claiming factory", matches=lambda loc: loc.endswith(".db"))
    assert loaded == ["builtins"]
    assert registry.names() == ("builtin", "plugin", "claim")
    assert registry.find("x.db") == "claiming factory"  # newest first
    assert registry.find("mine:x") == "plug-in factory"
    assert registry.find("other") is None


def test_registering_a_name_again_replaces_it_and_makes_it_the_newest() -> None:
    registry: Registry[int] = Registry()
    registry.register("a", 1, matches=lambda loc: True)
    registry.register("b", 2, matches=lambda loc: True)
    registry.register("a", 3, matches=lambda loc: True)
    assert registry.names() == ("b", "a")
    assert registry.get("a") == 3
    assert registry.find("anything") == 3


def test_the_three_extension_points_share_it() -> None:
    from pimento.engines import registered_engines
    from pimento.llm import registered_backends
    from pimento.search import expanders

    assert {"duckdb", "sqlite", "postgres", "spark"} <= set(registered_engines())
    assert {"openai", "replay"} <= set(registered_backends())
    assert isinstance(expanders._EXPANDERS, Registry) and "schema-graph" in expanders._EXPANDERS.names()
