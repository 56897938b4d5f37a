"""The training script examples/deepspeed_pipe_pp2.sh runs: a DeepSpeed PipelineModule trained
with engine.train_batch(), the construct of microsoft/DeepSpeedExamples@83757d9c937daabd1089a08051061706cb73900d
training/pipeline_parallelism/train.py (get_args, train_pipe), cut to what p2paudit reads: its
imports, its argparse options and the PipelineModule(num_stages=...) call."""

import argparse

import deepspeed
import torch
from deepspeed.pipe import PipelineModule


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="pipeline example")
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("-s", "--steps", type=int, default=100)
    parser.add_argument("-p", "--pipeline-parallel-size", type=int, default=2)
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def train_pipe(args: argparse.Namespace) -> None:
    layers = [torch.nn.Linear(32, 32) for _ in range(8)]
    net = PipelineModule(layers=layers, loss_fn=torch.nn.MSELoss(), num_stages=args.pipeline_parallel_size)
    engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
    for _ in range(args.steps):
        engine.train_batch()


if __name__ == "__main__":
    deepspeed.init_distributed()
    train_pipe(get_args())
