#!/usr/bin/env bash
# The peer benchmark in one command: taopipe against ONNX Runtime on VGG16, ResNet50 and
# AlexNet, same weights, same input. `bench/peers/run.sh --help` lists the flags.
#
# Makes bench/peers/.venv with requirements.txt (once; again when requirements.txt
# changes), then runs peers.py in it. With --system-python, or PEERS_SYSTEM_PYTHON=1, no
# venv: the interpreter's own packages are used. PYTHON names the interpreter (python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
system=${PEERS_SYSTEM_PYTHON:-0}

for arg in "$@"; do
    case $arg in
        -h | --help) exec "$python" "$here/peers.py" --help ;;
        --system-python) system=1 ;;
    esac
done

if ! command -v "$python" > /dev/null; then
    echo "run.sh: $python not found (set PYTHON to a Python 3.9+ interpreter)" >&2
    exit 1
fi

if [[ $system == 1 ]]; then
    exec "$python" "$here/peers.py" "$@"
fi

venv=$here/.venv
stamp=$venv/requirements.installed
if ! cmp -s "$here/requirements.txt" "$stamp" 2> /dev/null; then
    echo "run.sh: setting up $venv from requirements.txt" >&2
    if ! "$python" -m venv "$venv"; then
        echo "run.sh: '$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv;" \
            "or use --system-python with the packages of requirements.txt installed)" >&2
        exit 1
    fi
    "$venv/bin/python" -m pip install --disable-pip-version-check --quiet \
        -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi
exec "$venv/bin/python" "$here/peers.py" "$@"
