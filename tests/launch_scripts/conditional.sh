#!/bin/bash
# Settings chosen by branches, defaults and a function around the launch.
MODE=${1:-pp}
[ -z "$NNODES" ] && NNODES=2
NPROC_PER_NODE=8

if [ "$MODE" = "pp" ]; then
    PP=4
    VPP=2
elif [ "$MODE" = "tp" ]; then
    PP=1
    VPP=2
else
    PP=2
    VPP=2
fi

case "$MODE" in
  pp|tp) LR=1e-4 ;;
  *) LR=1e-4 ;;
esac

for attempt in 1 2 3; do
    SEED=$attempt
done

launch() {
    NPROC_PER_NODE=$NPROC_PER_NODE NNODES=$NNODES megatron pt \
        --pipeline_model_parallel_size $PP \
        --virtual_pipeline_model_parallel_size "$VPP" \
        --lr $LR --seed $SEED \
        --overlap_p2p_comm true \
        --no_save_optim true
}

launch "$@"
