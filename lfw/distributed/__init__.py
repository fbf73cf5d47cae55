"""Distributed loading under torchrun: per-rank throughput, the straggler, and whether the sampler covers LFW.

``torchrun --standalone --nproc-per-node=N -m lfw.distributed`` (``make distributed``) runs, on every rank, the
measurement primitive over that rank's ``DistributedSampler`` shard with an all-reduce per step (DDP's gradient
synchronization, stood in for); rank 0 gathers and reports.

- :mod:`lfw.distributed.rank`: what one rank measures;
- :mod:`lfw.distributed.record`: rank 0's figures (straggler ratio, total, whether the epochs' shards cover the
  dataset once and reshuffle) and the pytest-benchmark JSON.
"""
