#!/usr/bin/env bash
# The P2P gate for megatron-core upgrades: scan the seed launch script (the GLM-5.1 run of
# ms-swift #9451, https://github.com/modelscope/ms-swift/issues/9451, examples/glm5_1_lora_pp4.sh) against each release and fail when one
# adds a reachable unbatched P2P site or a contradiction that the committed baseline (0.17.0, the
# report's release, with the report's torch 2.10.0) does not have.
#
#   ci/gate.sh                     0.16.1, 0.17.0 and the newest release on PyPI
#   ci/gate.sh 0.19.2 ...          these releases
#   ci/gate.sh --rebaseline        rewrite the baseline (after a deliberate change), then gate
#
# Per release it writes $P2PAUDIT_GATE_OUT (default ./p2paudit-gate)/megatron-core-V.{txt,json,
# sarif,html}. Exit status: 2 if any release could not be checked, else 1 if any failed, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."

CONFIG=examples/glm5_1_lora_pp4.sh
BASELINE=ci/baseline/glm5_1_lora_pp4.megatron-core-0.17.0.json
OUT=${P2PAUDIT_GATE_OUT:-p2paudit-gate}
P2PAUDIT=${P2PAUDIT:-p2paudit}

newest() {
    python3 -m pip index versions --disable-pip-version-check --python-version 3.12 \
        --only-binary=:all: megatron-core 2>/dev/null | sed -n 's/^megatron-core (\(.*\))$/\1/p'
}

if [ "${1:-}" = "--rebaseline" ]; then
    shift
    $P2PAUDIT scan --config "$CONFIG" --target megatron-core==0.17.0 --target ms-swift==4.3.0 \
        --target mcore-bridge==1.4.1 --torch 2.10.0 --format json -o "$BASELINE"
    [ $? -le 1 ] || { echo "ci/gate.sh: could not write $BASELINE" >&2; exit 2; }
fi

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
    latest=$(newest)
    [ -n "$latest" ] || { echo "ci/gate.sh: cannot read megatron-core's newest release from PyPI" >&2; exit 2; }
    versions=(0.16.1 0.17.0 "$latest")
fi

mkdir -p "$OUT"
worst=0
for v in "${versions[@]}"; do
    base="$OUT/megatron-core-$v"
    $P2PAUDIT gate --config "$CONFIG" --baseline "$BASELINE" --target "megatron-core==$v" \
        --format json -o "$base.json" 2> "$base.txt"
    rc=$?
    if [ $rc -le 1 ]; then
        $P2PAUDIT report --scan "$base.json" --format sarif -o "$base.sarif" 2>/dev/null
        $P2PAUDIT report --scan "$base.json" --format html -o "$base.html" 2>/dev/null
    fi
    echo "megatron-core $v: exit $rc: $(tail -n 1 "$base.txt")"
    if [ $rc -eq 2 ] || { [ $rc -eq 1 ] && [ $worst -eq 0 ]; }; then
        worst=$rc
    fi
done
exit $worst
