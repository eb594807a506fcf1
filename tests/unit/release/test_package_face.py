"""The face of ``pimento.release`` (and ``pimento.Session``): its names pinned, each resolving, loaded lazily."""

from __future__ import annotations

import subprocess
import sys

import pimento
import pimento.release as release

FACE = ["Answer", "Context", "Interpretation", "Mode", "Neighbourhood", "Request", "SearchOptions", "Session", "interpret", "planner"]


def test_the_face_is_pinned_and_every_name_resolves():
    import pimento.release.interpretation  # noqa: F401  (a submodule, once imported, must not shadow a face name)

    assert release.__all__ == FACE
    for name in FACE:
        assert getattr(release, name) is not None
    assert callable(release.interpret) and release.interpret.__module__ == "pimento.release.interpretation"
    assert pimento.Session is release.Session
    assert pimento.__all__ == ["Session", "__version__"]
    assert release.__doc__ and "ARCHITECTURE.md" not in release.__doc__


def test_importing_pimento_does_not_load_the_release_path():
    code = "import sys, pimento, pimento.release; print(any(m.startswith('pimento.release.') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
