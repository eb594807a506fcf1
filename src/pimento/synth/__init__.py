"""DP synthetic relational database that keeps keys, foreign keys, unique keys and FDs valid.

See ``PRIVACY.md`` in this package for the guarantee, docs/synth.md and docs/synthetic-data.md.
"""

from __future__ import annotations

from pimento.synth.api import META_TABLE, SynthResult, source_fingerprint, synthesize

__all__ = ["META_TABLE", "SynthResult", "source_fingerprint", "synthesize"]
