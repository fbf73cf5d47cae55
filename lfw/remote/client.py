"""Reading objects from S3 with boto3: one client per process, bounded retries, a length check on every body.

:class:`S3Reader` makes its client lazily in the process that uses it (checked by pid; never pickled). botocore's
retries are off: :meth:`S3Reader.get` retries what is transient (5xx, throttling, resets, timeouts, a short body)
at most ``attempts`` times and fails at once, in one line saying what to fix, on the rest. docs/remote.md.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from lfw.errors import LFWError

TRANSIENT_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "InternalError",
                   "ServiceUnavailable", "RequestTimeTooSkewed"}
MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
T = TypeVar("T")
DEFAULT_POOL = 16  # connections per client unless a reader asks for more (S3LFW: at least its concurrency)


@dataclass(frozen=True)
class S3Settings:
    """Where the objects are and how patiently to read them."""

    endpoint: str
    bucket: str
    prefix: str = "lfw"
    region: str = "us-east-1"
    access_key: str | None = None  # None: boto3's usual chain (environment, config files)
    secret_key: str | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 10.0
    attempts: int = 4
    backoff_s: float = 0.05
    pool: int = DEFAULT_POOL

    def __post_init__(self) -> None:
        if not self.endpoint.startswith(("http://", "https://")):
            raise LFWError(f"S3 endpoint must be an http(s) URL, got {self.endpoint!r}")
        if self.attempts < 1 or self.pool < 1:
            raise LFWError("S3 attempts and connection pool size must be at least 1")
        if min(self.connect_timeout_s, self.read_timeout_s, self.backoff_s) <= 0:
            raise LFWError("S3 timeouts and backoff must be positive")

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key} at {self.endpoint}"


def s3_client(settings: S3Settings, pool: int | None = None) -> Any:
    """A boto3 S3 client for ``settings`` (path-style, checksums only when required, botocore retries off)."""
    import boto3
    from botocore.config import Config

    config = Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1, "mode": "standard"},
                    connect_timeout=settings.connect_timeout_s, read_timeout=settings.read_timeout_s,
                    max_pool_connections=pool or settings.pool, request_checksum_calculation="when_required",
                    response_checksum_validation="when_required")
    return boto3.client("s3", endpoint_url=settings.endpoint, region_name=settings.region, config=config,
                        aws_access_key_id=settings.access_key, aws_secret_access_key=settings.secret_key)


class ShortBody(Exception):
    """A body shorter (or longer) than its Content-Length: the connection broke mid-body."""


class S3Reader:
    """GET and LIST through a per-process client; counts its own retries (this process's)."""

    def __init__(self, settings: S3Settings, pool: int | None = None) -> None:
        self.settings = settings
        self.pool = pool or settings.pool
        self.retries = 0
        self._client: Any = None
        self._pid = 0

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None, "_pid": 0}  # a client never travels to another process

    @property
    def client(self) -> Any:
        if self._client is None or self._pid != os.getpid():
            self._client, self._pid = s3_client(self.settings, self.pool), os.getpid()
        return self._client

    def list_keys(self, suffixes: tuple[str, ...] = (".jpg", ".jpeg")) -> list[str]:
        """Every key under ``<prefix>/`` ending in one of ``suffixes``, sorted (the listing retried as a whole)."""
        def listing() -> list[str]:
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.settings.bucket,
                                                                          Prefix=f"{self.settings.prefix}/")
            return [o["Key"] for page in pages for o in page.get("Contents", []) if o["Key"].lower().endswith(suffixes)]

        return sorted(self._retrying(listing, self.settings.url(f"{self.settings.prefix}/")))

    def get(self, key: str) -> bytes:
        """The object's bytes, retried on transient failures; one-line :class:`LFWError` when it cannot be had."""
        def body() -> bytes:
            response = self.client.get_object(Bucket=self.settings.bucket, Key=key)
            data = response["Body"].read()
            if len(data) != response["ContentLength"]:
                raise ShortBody(f"{len(data)} of {response['ContentLength']} bytes")
            return data

        return self._retrying(body, self.settings.url(key))

    def _retrying(self, request: Callable[[], T], where: str) -> T:
        """``request()``, retried with backoff on transient failures, at most ``attempts`` times."""
        from botocore.exceptions import ClientError

        last = ""
        for attempt in range(self.settings.attempts):
            if attempt:
                self.retries += 1
                time.sleep(self.settings.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random()))
            try:
                return request()
            except ClientError as exc:
                code = str(exc.response.get("Error", {}).get("Code", ""))
                status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
                if code in MISSING_CODES:
                    raise LFWError(f"object not found: {where}; upload it or fix the prefix (no retry: a missing "
                                   "key is not transient)") from None
                if status < 500 and code not in TRANSIENT_CODES:
                    raise self._fatal(exc, where) from None
                last = f"HTTP {status} {code}"
            except ShortBody as exc:
                last = f"connection broke mid-body ({exc})"
            except Exception as exc:
                if not _transient(exc):
                    raise self._fatal(exc, where) from None
                last = _describe(exc)
        raise LFWError(f"cannot read {where} after {self.settings.attempts} attempts: {last}; check that the "
                       "endpoint is up and answering")

    def _fatal(self, exc: Exception, where: str) -> LFWError:
        """A failure that retrying cannot fix, as one line that says what to do."""
        from botocore.exceptions import ClientError, NoCredentialsError

        if isinstance(exc, NoCredentialsError):
            return LFWError(f"no S3 credentials for {self.settings.endpoint}: set AWS_ACCESS_KEY_ID and "
                            "AWS_SECRET_ACCESS_KEY (any values for a local test endpoint)")
        if _transient(exc):  # EndpointConnectionError among them
            return LFWError(f"cannot reach the S3 endpoint {self.settings.endpoint} ({_describe(exc)}); start it or "
                            "fix the endpoint URL")
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            return LFWError(f"S3 refused {where}: {error.get('Code', '?')} ({error.get('Message', '')}); check the "
                            "bucket, the prefix and the credentials")
        return LFWError(f"S3 request for {where} failed: {_describe(exc)}")


def _transient(exc: BaseException) -> bool:
    from botocore import exceptions as bx
    from urllib3.exceptions import ProtocolError

    return isinstance(exc, bx.ConnectionClosedError | bx.ConnectTimeoutError | bx.EndpointConnectionError
                      | bx.IncompleteReadError | bx.ReadTimeoutError | bx.ResponseStreamingError | ProtocolError
                      | ConnectionError)


def _describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
