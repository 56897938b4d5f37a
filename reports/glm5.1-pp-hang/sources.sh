#!/usr/bin/env bash
# Prints, from the released wheels themselves, every source line the README quotes, each under its
# file:line, so a reader can check the quotes without trusting them. Nothing is imported.
#
#     p2paudit sites megatron-core==0.17.0 ms-swift==4.3.0 mcore-bridge==1.4.1 > /dev/null  # download once
#     bash reports/glm5.1-pp-hang/sources.sh
#
# torch 2.10.0/2.11.0 (the coalescing test, the op-by-op loop, the wrapper's missing symbol) are
# quoted too when TORCH_WHEELS names a directory holding those two wheels, e.g. the ~80 MB macOS
# ones (any platform has the same Python file; the symbol check reads libtorch_cpu):
#     pip download --no-deps --only-binary=:all: --platform macosx_11_0_arm64 --python-version 3.12 -d /tmp/tw torch==2.10.0
#     pip download --no-deps --only-binary=:all: --platform macosx_11_0_arm64 --python-version 3.12 -d /tmp/tw torch==2.11.0
#     TORCH_WHEELS=/tmp/tw bash reports/glm5.1-pp-hang/sources.sh
set -uo pipefail
CACHE=${P2PAUDIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/p2paudit}/downloads

wheel() {  # wheel DIST VERSION: the cached wheel's path
  local found
  found=$(ls "$CACHE/$1-$2"/*.whl 2>/dev/null | head -1)
  [ -n "$found" ] || { echo "no $1 $2 wheel in $CACHE: run the p2paudit sites line above" >&2; exit 2; }
  echo "$found"
}

quote() {  # quote WHEEL DIST-LABEL PATH FIRST LAST WHY
  echo "== $2 $3:$4-$5  ($6)"
  unzip -p "$1" "$3" | sed -n "$4,$5p"
  echo
}

MC=$(wheel megatron-core 0.17.0)
SW=$(wheel ms-swift 4.3.0)
BR=$(wheel mcore-bridge 1.4.1)

quote "$SW" "ms-swift 4.3.0" swift/megatron/init.py 23 32 "the patch that sends activations on the default group"
quote "$SW" "ms-swift 4.3.0" swift/megatron/init.py 212 212 "installed by init_megatron_env"
quote "$SW" "ms-swift 4.3.0" swift/megatron/arguments/megatron_args.py 528 528 "default process-group timeout, seconds"
quote "$SW" "ms-swift 4.3.0" swift/megatron/arguments/megatron_args.py 552 552 "expert_tensor_parallel_size default"
quote "$SW" "ms-swift 4.3.0" swift/megatron/arguments/megatron_args.py 901 904 "batch_p2p_comm without a virtual pipeline"
quote "$SW" "ms-swift 4.3.0" swift/megatron/arguments/megatron_args.py 748 751 "PP=1 refuses an uneven split"
quote "$SW" "ms-swift 4.3.0" swift/utils/torch_utils.py 235 247 "init_process_group: no device_id, so NCCL init is lazy"
quote "$SW" "ms-swift 4.3.0" swift/megatron/utils/megatron_lm_utils.py 69 69 "megatron subgroups: ddp_timeout // 60 minutes"
quote "$SW" "ms-swift 4.3.0" swift/megatron/model/utils.py 53 54 "the uneven-split flags reach megatron-core"
quote "$BR" "mcore-bridge 1.4.1" mcore_bridge/config/model_config.py 234 236 "variable_seq_lengths and overlap_p2p_comm defaults"
quote "$BR" "mcore-bridge 1.4.1" mcore_bridge/config/model_config.py 306 306 "batch_p2p_comm = not overlap_p2p_comm"
quote "$MC" "megatron-core 0.17.0" megatron/core/pipeline_parallel/p2p_communication.py 26 50 "_batched_p2p_ops: send_prev, recv_prev, send_next, recv_next"
quote "$MC" "megatron-core 0.17.0" megatron/core/pipeline_parallel/p2p_communication.py 322 324 "the shape exchange runs first"
quote "$MC" "megatron-core 0.17.0" megatron/core/pipeline_parallel/p2p_communication.py 374 378 "batched or not"
quote "$MC" "megatron-core 0.17.0" megatron/core/parallel_state.py 562 562 "rank order: PP varies slowest"
quote "$MC" "megatron-core 0.17.0" megatron/core/transformer/transformer_config.py 1526 1531 "uneven PP"
quote "$MC" "megatron-core 0.17.0" megatron/core/transformer/transformer_config.py 1581 1585 "the PP=8 start-up error"
quote "$MC" "megatron-core 0.17.0" megatron/core/transformer/transformer_block.py 151 153 "an even split must divide"
quote "$MC" "megatron-core 0.17.0" megatron/core/transformer/experimental_attention_variant/dsa.py 278 278 "indexer scores, fp32, all indexer heads"
quote "$MC" "megatron-core 0.17.0" megatron/core/transformer/experimental_attention_variant/dsa.py 936 936 "sparse attention scores, fp32"

if [ -n "${TORCH_WHEELS:-}" ]; then
  for v in 2.10.0 2.11.0; do
    w=$(ls "$TORCH_WHEELS"/torch-"$v"-*.whl 2>/dev/null | head -1)
    [ -n "$w" ] || { echo "no torch $v wheel in $TORCH_WHEELS" >&2; continue; }
    lib=$(unzip -Z1 "$w" | grep -E '^torch/lib/libtorch_cpu\.(so|dylib)$' | head -1)
    echo "== torch $v $lib: _ProcessGroupWrapper::supportsCoalescing defined: $(unzip -p "$w" "$lib" \
      | grep -c ProcessGroupWrapper18supportsCoalescingEv) (0: the DETAIL wrapper reports False)"
    echo
  done
  w=$(ls "$TORCH_WHEELS"/torch-2.10.0-*.whl | head -1)
  quote "$w" "torch 2.10.0" torch/distributed/distributed_c10d.py 2838 2862 "coalesce, or issue the ops one by one"
  quote "$w" "torch 2.10.0" torch/distributed/distributed_c10d.py 2536 2536 "irecv: the py-spy frame of ms-swift #9451"
fi
