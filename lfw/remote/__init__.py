"""LFW on object storage: moto's S3 server and a latency/fault proxy on 127.0.0.1 (:func:`.endpoint.local_s3`), a
boto3 reader (:mod:`.client`), LFW from a bucket with a concurrency strategy (:mod:`.dataset`), the remote group's
rotation members (:mod:`.bench`) and ``python -m lfw.remote``. Docs: docs/remote.md.
"""
