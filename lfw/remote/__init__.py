"""LFW on object storage: a real S3 API on loopback, injected latency and faults, and how to read through them.

- :mod:`lfw.remote.moto_server`, :mod:`lfw.remote.proxy`, :mod:`lfw.remote.endpoint`: moto's S3 server and a
  latency/fault proxy, each in its own process on 127.0.0.1, started and stopped together (:func:`local_s3`);
- :mod:`lfw.remote.client`: boto3, one client per process, bounded retries, a length check on every body;
- :mod:`lfw.remote.dataset`: LFW from a bucket with a concurrency strategy (serial, threads, batch);
- :mod:`lfw.remote.bench`: the rotation members of the remote benchmark group and what they record;
- ``python -m lfw.remote``: time loading from an S3 endpoint, local or real, with the shared primitive.
"""
