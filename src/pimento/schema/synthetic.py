"""What marks a database as a synthetic copy, and where a copy lives by default.

The one home of both: the synthesizer (``pimento.synth``) writes the marker table, and every
layer that must refuse a database that is not a synthetic copy (``pimento.llm`` prompts,
``pimento.nl`` value index, ``pimento.release``) checks for it by this name.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SYNTH_META_TABLE", "default_synthetic_path"]

#: The table the synthesizer writes into every synthetic database (its budget, root, copy id,
#: and the key of the database it was made from); its presence is the guard.
SYNTH_META_TABLE = "_pimento_synth_meta"


def default_synthetic_path(location: str | Path) -> Path:
    """Where `pimento demo` and the docs put the synthetic copy of ``location``: beside it.

    >>> default_synthetic_path("/data/clinic.duckdb").name
    'clinic.synthetic.duckdb'
    """
    path = Path(str(location))
    return path.with_name(path.stem + ".synthetic.duckdb")
