package catalogadmin

// Skeleton is the new-template editor's starting text: a small training
// template that passes policy with the default allowlist.
const Skeleton = `name: my-training
kind: training
title: My training run
description: A single-node training run.
image: nvcr.io/nvidia/pytorch:24.12-py3
teams: []
gpuTypes:
  - {name: h100, label: "H100 80 GB SXM", pool: h100-sxm-ib-training, resource: nvidia.com/gpu}
command: [torchrun, --standalone, --nproc-per-node=gpu]
parameters:
  gpus: {min: 1, max: 8, default: 1}
  cpu: {min: "1", max: "32", default: "4"}
  memory: {min: 4Gi, max: 256Gi, default: 16Gi}
  durationMinutes: {min: 1, max: 1440, default: 60}
  args: "train.py"
`
