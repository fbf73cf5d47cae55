"""Distributed loading under torchrun: per-rank throughput, the straggler, and whether the sampler covers LFW.

``torchrun --standalone --nproc-per-node=N -m lfw.distributed`` (``make distributed``): every rank measures its
``DistributedSampler`` shard (:mod:`.rank`); rank 0 gathers, prints and saves the run (:mod:`.gathered`).
"""
