"""Registers the built-in LLM backends (the same extension point third parties use)."""

from __future__ import annotations

from collections.abc import Mapping

from pimento.config import LLMSettings
from pimento.llm.base import Backend, register_backend


def _openai(url: str, settings: LLMSettings, environ: Mapping[str, str]) -> Backend:
    from pimento.llm.openai import OpenAIBackend

    return OpenAIBackend.from_settings(settings, url=url, environ=environ)


def _replay(url: str, settings: LLMSettings, environ: Mapping[str, str]) -> Backend:
    from pimento.llm.replay import ReplayBackend

    return ReplayBackend(url.removeprefix("replay:"))


register_backend("openai", lambda url: url.lower().startswith(("http://", "https://")), _openai)
register_backend("replay", lambda url: url.startswith("replay:"), _replay)
