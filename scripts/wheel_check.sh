#!/usr/bin/env bash
# The wheel a custodian installs: build it, check what it holds, install it with the demo's extra
# into a fresh virtual environment (the versions of requirements/lock-py311.txt) and run the demo
# from a folder outside the checkout, so that only the installed package is used.
#
# 1. builds the wheel of the checkout with pip (`pip wheel --no-deps`, pip's build isolation) from a
#    copy of pyproject.toml, README.md and src/;
# 2. checks its metadata (the distribution name pimento-dp, the version of pimento.__version__,
#    Requires-Python, the extras) and that it holds the package data (service templates and
#    stylesheet, policy examples and texts, py.typed) and no tests or benchmarks;
# 3. installs `WHEEL[demo]` into a fresh venv with `-c requirements/lock-py311.txt`;
# 4. runs `pimento --version` and `pimento demo run` (PIMENTO_WHEEL_DEMO_ARGS, default
#    `--patients 2000`: the whole demo on a smaller hospital) in an empty temporary folder, and
#    checks that `pimento` was imported from the venv, not from src/.
#
# Usage: scripts/wheel_check.sh [PYTHON]   (default python3; run from anywhere)
# Environment: PIMENTO_WHEEL_KEEP=1 keeps the temporary folder (printed) for a look afterwards.
set -euo pipefail

cd "$(dirname "$0")/.."
REPO="$(pwd)"
PYTHON="${1:-python3}"
LOCK="$REPO/requirements/lock-py311.txt"
DEMO_ARGS="${PIMENTO_WHEEL_DEMO_ARGS:---patients 2000}"
log() { printf '[wheel_check] %s\n' "$*" >&2; }

WORK="$(mktemp -d /tmp/pimento-wheel-check.XXXXXX)"
if [[ "${PIMENTO_WHEEL_KEEP:-}" == 1 ]]; then log "keeping $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
start=$(date +%s)

# From a copy of what the wheel is made of: setuptools' build/ folder in the checkout would keep
# stale modules, and the checkout stays untouched.
mkdir "$WORK/source"
cp -R "$REPO/pyproject.toml" "$REPO/README.md" "$REPO/src" "$WORK/source/"
rm -rf "$WORK/source/src/"*.egg-info
"$PYTHON" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/dist" "$WORK/source"
WHEEL="$(ls "$WORK"/dist/pimento_dp-*.whl)"
log "built $(basename "$WHEEL") in $(( $(date +%s) - start ))s"

# What the wheel holds and says about itself.
"$PYTHON" - "$WHEEL" "$REPO/src/pimento/__init__.py" <<'PY'
import email.parser, re, sys, zipfile

wheel, init = sys.argv[1], sys.argv[2]
version = re.search(r'^__version__ = "([^"]+)"$', open(init, encoding="utf-8").read(), re.M).group(1)
names = zipfile.ZipFile(wheel).namelist()
meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
meta = email.parser.Parser().parsestr(zipfile.ZipFile(wheel).read(meta_name).decode("utf-8"))
problems = []
if meta["Name"] != "pimento-dp":
    problems.append(f"Name is {meta['Name']!r}, not 'pimento-dp'")
if meta["Version"] != version:
    problems.append(f"Version is {meta['Version']!r}, pimento.__version__ is {version!r}")
if meta["Requires-Python"] != ">=3.10":
    problems.append(f"Requires-Python is {meta['Requires-Python']!r}")
extras = set(meta.get_all("Provides-Extra") or [])
for extra in ("synth", "service", "llm", "postgres", "spark", "demo", "all"):
    if extra not in extras:
        problems.append(f"no extra {extra!r}")
if not (meta.get_payload() or "").strip():
    problems.append("no long description (README.md)")
required = {
    "pimento/py.typed": lambda n: n == "pimento/py.typed",
    "service templates": lambda n: n.startswith("pimento/service/templates/") and n.endswith(".html"),
    "policy examples": lambda n: n.startswith("pimento/policy/examples/") and n.endswith(".yaml"),
    "policy texts": lambda n: n.startswith("pimento/policy/examples/") and n.endswith(".txt"),
    "the web page's stylesheet": lambda n: n == "pimento/service/templates/pimento.css",
    "the console script": lambda n: n.endswith("entry_points.txt"),
    "the count ranker": lambda n: n == "pimento/nl/count_ranker.json",
    "the grouped readings' ranker": lambda n: n == "pimento/nl/aggregate_ranker.json",
}
for what, test in required.items():
    if not any(test(n) for n in names):
        problems.append(f"missing {what}")
stray = [n for n in names if n.split("/")[0] in {"tests", "benchmarks", "scripts", "docs"}]
if stray:
    problems.append(f"files outside the package: {stray[:5]}")
if problems:
    sys.exit("wheel metadata/contents: " + "; ".join(problems))
print(f"[wheel_check] {len(names)} files; {meta['Name']} {meta['Version']}, Requires-Python {meta['Requires-Python']}, "
      f"extras {', '.join(sorted(extras))}", file=sys.stderr)
PY

step=$(date +%s)
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check -c "$LOCK" "${WHEEL}[demo]"
"$WORK/venv/bin/pip" check >&2
log "installed ${WHEEL##*/}[demo] in $(( $(date +%s) - step ))s"

mkdir "$WORK/run"
cd "$WORK/run"
where="$("$WORK/venv/bin/python" -c 'import pimento; print(pimento.__file__)')"
[[ "$where" == "$WORK/venv/"* ]] || { log "pimento was imported from $where, not from the venv"; exit 1; }
"$WORK/venv/bin/pimento" --version >&2
step=$(date +%s)
# shellcheck disable=SC2086
"$WORK/venv/bin/pimento" demo run $DEMO_ARGS >"$WORK/demo.out" 2>"$WORK/demo.err" || {
    log "pimento demo run $DEMO_ARGS failed:"; tail -n 30 "$WORK/demo.out" "$WORK/demo.err" >&2; exit 1; }
if grep -q "Traceback" "$WORK/demo.out" "$WORK/demo.err"; then log "a traceback in the demo's output"; exit 1; fi
[[ -f "$WORK/run/pimento-demo/hospital.duckdb" ]] || { log "the demo wrote no ./pimento-demo/hospital.duckdb"; exit 1; }
log "pimento demo run $DEMO_ARGS from the wheel: ok in $(( $(date +%s) - step ))s ($(wc -l <"$WORK/demo.out") lines)"
log "wheel check passed in $(( $(date +%s) - start ))s"
