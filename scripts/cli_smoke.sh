#!/usr/bin/env bash
# Smoke test of the CLI's error paths with ONLY the runtime dependencies installed.
#
# The test extras pull in packages the runtime does not declare (click came in through
# import-linter, and hid issue 18's finding 8: every CLI error ended in a traceback on a fresh
# install). This script installs Pimento alone into a fresh virtual environment (pip's cache
# makes that quick), then runs commands that must fail cleanly: the expected exit status, one
# line on standard error for a user error, and never a traceback.
#
# Usage: scripts/cli_smoke.sh [PYTHON]   (default python3; run from anywhere)
# Environment: PIMENTO_SMOKE_VENV=DIR reuses DIR as the environment instead of a temporary one.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${1:-python3}"
log() { printf '[cli_smoke] %s\n' "$*" >&2; }

WORK="$(mktemp -d /tmp/pimento-cli-smoke.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
VENV="${PIMENTO_SMOKE_VENV:-$WORK/venv}"
start=$(date +%s)
[[ -x "$VENV/bin/pip" ]] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -c requirements/lock-py311.txt -e .  # the core: no extra
log "runtime-only environment ready in $(( $(date +%s) - start ))s: $VENV"

# Anything not declared in [project] dependencies must be absent here, or the test proves nothing.
if "$VENV/bin/python" -c "import click" 2>/dev/null; then
    log "click is importable in the runtime-only environment: some runtime dependency requires it now; revisit this check"
fi

"$VENV/bin/python" - "$WORK/tiny.sqlite" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)")
con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "y"), (3, "x")])
con.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, t_id INTEGER REFERENCES t (id))")
con.execute("INSERT INTO u VALUES (1, 1), (2, 9)")  # an orphan: `catalog --check` exits 1
con.commit()
PY
mkdir -p "$WORK/typo"
cp "$WORK/tiny.sqlite" "$WORK/typo/tiny.sqlite"
printf '[privacy]\nprivat = ["t"]\n' > "$WORK/typo/pimento.toml"

failures=0
# expect STATUS LINES -- ARGS...: STATUS is the exit status; LINES=1 demands exactly one stderr line.
expect() {
    local status="$1" lines="$2"
    shift 3
    local out="$WORK/out" err="$WORK/err" got=0
    "$VENV/bin/pimento" "$@" >"$out" 2>"$err" || got=$?
    local problem=""
    [[ "$got" == "$status" ]] || problem="exit status $got, expected $status"
    if grep -q "Traceback" "$out" "$err"; then problem="${problem:+$problem; }a traceback"; fi
    if [[ "$lines" == 1 && "$(wc -l <"$err")" != 1 ]]; then problem="${problem:+$problem; }$(wc -l <"$err") lines on stderr, expected 1"; fi
    if [[ -n "$problem" ]]; then
        log "FAIL: pimento $*: $problem"
        sed 's/^/    stdout: /' "$out" >&2
        sed 's/^/    stderr: /' "$err" >&2
        failures=$((failures + 1))
    else
        log "ok: pimento $* -> $got"
    fi
}

DB="$WORK/tiny.sqlite"
expect 0 - -- --version
expect 0 - -- parse --db "$DB" --sql "SELECT a, count(*) FROM t GROUP BY a"
expect 1 - -- parse --db "$DB" --sql "SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1"
expect 1 - -- catalog --db "$DB" --check
expect 2 1 -- parse --db "$DB" --sql "SELECT FROM WHERE"
expect 2 1 -- sql --db "$WORK/missing.duckdb" --sql "SELECT COUNT(*) FROM t" --epsilon 1
expect 2 1 -- sql --db "$DB" --sql "SELECT COUNT(*) FROM t" --epsilon -1
expect 2 1 -- sql --db "$DB" --sql "SELECT COUNT(*) FROM t" --epsilon abc
expect 2 1 -- catalog --db "$DB" --private nope
expect 2 1 -- catalog --db "$WORK/typo/tiny.sqlite"
expect 2 - -- sql --db "$DB"
# Refused from the arguments alone, before anything heavy is imported (issue 28).
expect 2 1 -- budget --db "$WORK/missing.duckdb"
expect 2 1 -- keys list --db "$WORK/missing.duckdb"
expect 2 1 -- synth --db "$DB" --out "$DB" --epsilon 1 --delta 1e-6
expect 2 1 -- synth --db "$DB" --out "$WORK/syn.duckdb" --epsilon abc --delta 1e-6
expect 2 1 -- ask "" --db "$DB" --epsilon 1
expect 2 1 -- search "" --db "$DB"

if (( failures )); then
    log "$failures command(s) failed"
    exit 1
fi
log "all CLI error paths clean ($(( $(date +%s) - start ))s in all)"
