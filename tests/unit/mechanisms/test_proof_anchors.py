"""The proof notes cite code by named tags, never by line number (issue 24).

A note writes ``smooth.py [proof: smooth-value-on-grid]``; the code carries the comment
``# proof: smooth-value-on-grid`` at the place argued about. Line numbers move whenever code moves
(the first PROOF.md cited lines of ``smooth.py`` that had moved by hundreds); tags move with the
code. Checked here: every cited tag exists exactly once in the file named, every tag in the code is
cited by some note, and no note cites a bare line number.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "pimento"
DOCS = ROOT / "docs"

#: A citation in a note: a Python file name (a path below the note's folder or src/pimento/, or
#: a bare name found once in the package), then the tag in brackets.
CITATION = re.compile(r"(?P<file>[\w./-]+\.py)`?\s*\[proof:\s*(?P<tag>[^\]]*?)\s*\]")
#: Any bracketed tag, to find those that follow no file name.
BRACKET = re.compile(r"\[proof:[^\]]*\]")
#: The comment that marks a place in the code.
CODE_TAG = re.compile(r"#\s*proof:\s*(?P<tag>\S+)")
TAG_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: Line-number references: "line 12", "lines 3-7", "smooth.py:451", "#L451" (an "L1"/"L50" alone
#: is mathematics in these notes, so only the GitHub form with "#" counts).
LINE_REFERENCE = re.compile(r"\blines?\s+\d+|\.py:\d+|#L\d+", re.IGNORECASE)


def proof_notes() -> list[Path]:
    """The notes that argue about code: every Markdown file in the package, and analyst-learns.md."""
    return sorted(PACKAGE.rglob("*.md")) + [DOCS / "analyst-learns.md"]


def citing_pages() -> list[Path]:
    """Every page that may cite code by tag: the proof notes and the documentation."""
    return sorted(set(proof_notes()) | set(DOCS.rglob("*.md")))


def resolve(note: Path, name: str) -> Path:
    """The file a citation in ``note`` names: relative to the note's folder, else to src/pimento/,
    else (a bare file name) the one file of that name in the package."""
    for base in (note.parent, PACKAGE):
        if (base / name).is_file():
            return base / name
    found = sorted(p for p in PACKAGE.rglob(Path(name).name) if p.as_posix().endswith("/" + name))
    assert len(found) == 1, f"{note.relative_to(ROOT)}: {name!r} names {len(found)} files ({found}); give its path below src/pimento/"
    return found[0]


def citations() -> list[tuple[Path, str, Path, str]]:
    """(note, file as written, resolved file, tag) for every citation in every page."""
    found = []
    for page in citing_pages():
        for match in CITATION.finditer(page.read_text(encoding="utf-8")):
            found.append((page, match["file"], resolve(page, match["file"]), match["tag"]))
    return found


def code_tags() -> dict[tuple[Path, str], int]:
    """How often each (file, tag) comment occurs in the package's Python files."""
    counts: dict[tuple[Path, str], int] = {}
    for path in PACKAGE.rglob("*.py"):
        for match in CODE_TAG.finditer(path.read_text(encoding="utf-8")):
            key = (path, match["tag"])
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_the_mechanisms_proof_cites_code_by_tags():
    """PROOF.md cites many places: the check below is not vacuous."""
    cited = [c for c in citations() if c[0] == PACKAGE / "mechanisms" / "PROOF.md"]
    assert len(cited) >= 50
    assert {c[2].name for c in cited} >= {"smooth.py", "samplers.py", "guarded.py"}


@pytest.mark.parametrize("note", proof_notes(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_proof_note_cites_a_line_number(note):
    text = note.read_text(encoding="utf-8")
    found = [(text.count("\n", 0, m.start()) + 1, m.group()) for m in LINE_REFERENCE.finditer(text)]
    assert not found, (
        f"{note.relative_to(ROOT)} cites code by line number at {found}: line numbers move with every edit; "
        "put a `# proof: some-tag` comment at the place and cite it as `file.py [proof: some-tag]`"
    )


def test_every_cited_tag_exists_exactly_once_in_the_file_named():
    tags = code_tags()
    wrong = []
    for note, written, path, tag in citations():
        count = tags.get((path, tag), 0)
        if not TAG_NAME.fullmatch(tag) or count != 1:
            wrong.append(f"{note.relative_to(ROOT)}: {written} [proof: {tag}] is in {path.relative_to(ROOT)} {count} time(s)")
    assert not wrong, "\n".join(wrong)


def test_every_tag_follows_a_file_name():
    """A bare ``[proof: tag]`` could not be checked: each must say which file holds it."""
    orphans = []
    for page in citing_pages():
        text = page.read_text(encoding="utf-8")
        cited = {m.start("tag") for m in CITATION.finditer(text)}
        for match in BRACKET.finditer(text):
            if not any(match.start() < start < match.end() for start in cited):
                orphans.append(f"{page.relative_to(ROOT)}: {match.group()}")
    assert not orphans, "\n".join(orphans)


def test_every_tag_in_the_code_is_cited():
    """A tag no note cites is a stale anchor (its argument was removed or rewritten): drop it."""
    cited = {(path, tag) for _note, _written, path, tag in citations()}
    stale = sorted(f"{path.relative_to(ROOT)}: # proof: {tag}" for path, tag in code_tags() if (path, tag) not in cited)
    assert not stale, "\n".join(stale)
