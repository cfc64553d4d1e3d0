"""An object-store warehouse's connection: a boto3 client of the standard AWS settings
(:mod:`jobs.aws_settings`), the Delta backend it takes, and a cheap probe that a command makes
before Spark starts.

pyarrow's S3 file system and delta-rs read the same variables from the environment, so a
process that has them reaches the warehouse's objects and Delta tables by their ``s3://`` URIs.
Secrets never appear in a message (:func:`probe` names the setting, never its value)."""

from __future__ import annotations

from collections.abc import Mapping

from jobs.aws_settings import storage_options
from jobs.warehouse_uri import WarehouseError, WarehouseUri, parse_warehouse

#: Seconds the probe waits for the store to connect and to answer.
PROBE_TIMEOUT = 5


def s3_client(env: Mapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT,
              attempts: int = 1):
    """A boto3 S3 client of the AWS settings in ``env``, giving up after ``timeout`` seconds
    and ``attempts`` tries (default: no retry)."""
    import boto3
    from botocore.config import Config

    options = storage_options(env)
    return boto3.client(
        "s3", endpoint_url=options.get("AWS_ENDPOINT_URL"),
        region_name=options.get("AWS_REGION") or "us-east-1",
        aws_access_key_id=options.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=options.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=options.get("AWS_SESSION_TOKEN"),
        config=Config(connect_timeout=timeout, read_timeout=timeout,
                      retries={"max_attempts": attempts, "mode": "standard"}))


#: Seconds a conditional put of a log entry waits for the store (it is never retried).
PUT_TIMEOUT = 60

#: The clients :func:`shared_client` made, by the AWS settings and timeout they were made with.
_CLIENTS: dict[tuple, object] = {}


def shared_client(timeout: float = PROBE_TIMEOUT, attempts: int = 1):
    """:func:`s3_client` of this process's AWS settings, ``timeout`` and ``attempts``, made once
    per process (making one costs tens of milliseconds; a client is safe to share between
    threads)."""
    key = (*storage_options().items(), timeout, attempts)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = s3_client(timeout=timeout, attempts=attempts)
    return client


#: Tries of a read (:func:`read_object`): a read is safe to repeat.
READ_ATTEMPTS = 3


def read_object(uri: str) -> bytes:
    """The whole object ``uri`` (``s3://BUCKET/KEY``) in one GET (pyarrow's S3 file system
    asks for its size first: two requests); FileNotFoundError when there is none, OSError when
    the store refuses it."""
    from botocore.exceptions import ClientError

    bucket, key = uri[len("s3://"):].split("/", 1)
    try:
        got = shared_client(PUT_TIMEOUT, READ_ATTEMPTS).get_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 404:
            raise FileNotFoundError(uri) from None
        raise OSError(f"cannot read {uri}: HTTP {status}") from exc
    return got["Body"].read()


def create_object(uri: str, data: bytes) -> bool:
    """Write the object ``uri`` (``s3://BUCKET/KEY``) whole if there is none yet: one
    conditional put (``If-None-Match: *``); False when the store refuses it because there is
    one. Of several processes creating the same object, exactly one succeeds. The put is not
    retried: a retry of a put that went through would be refused by its own object."""
    from botocore.exceptions import ClientError

    client = shared_client(PUT_TIMEOUT)
    bucket, key = uri[len("s3://"):].split("/", 1)
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        # 412: the object exists; 409: another put of it is under way (one of them wins)
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412):
            return False
        raise
    return True


def remote_backend(warehouse: str, backend: str) -> str:
    """The Delta backend of an object-store warehouse: delta-rs (for ``auto`` too); delta-spark
    would need the ``hadoop-aws`` jars on Spark's class path (WarehouseError)."""
    if backend == "delta-spark":
        raise WarehouseError(f"warehouse {warehouse}: the delta-spark backend does not reach an "
                             "object store (Spark has no hadoop-aws jars here); use "
                             "REPRISE_DELTA_BACKEND=delta-rs or auto")
    return "delta-rs"


def probe(warehouse: str | WarehouseUri, env: Mapping[str, str] | None = None) -> None:
    """Check that an object-store warehouse can be reached: its endpoint answers, the
    credentials are accepted and the bucket exists (one HEAD request); WarehouseError naming the
    warehouse and the problem otherwise. A local warehouse is not probed."""
    uri = warehouse if isinstance(warehouse, WarehouseUri) else parse_warehouse(warehouse)
    if not uri.remote:
        return
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
    )

    def refuse(problem: str) -> WarehouseError:
        return WarehouseError(f"warehouse {uri}: {problem}")

    options = storage_options(env)
    endpoint = options.get("AWS_ENDPOINT_URL", "the AWS S3 endpoint")
    try:
        client = s3_client(env)
    except ValueError:
        raise refuse(f"AWS_ENDPOINT_URL {endpoint!r} is not a URL") from None
    try:
        client.head_bucket(Bucket=uri.bucket)
    except NoCredentialsError:
        raise refuse("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") from None
    except EndpointConnectionError:
        raise refuse(f"cannot reach {endpoint} (AWS_ENDPOINT_URL)") from None
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 404:
            raise refuse(f"bucket {uri.bucket!r} does not exist at {endpoint}") from None
        if status in (400, 401, 403):
            raise refuse(f"access to bucket {uri.bucket!r} denied at {endpoint} (HTTP "
                         f"{status}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
                         "AWS_REGION") from None
        raise refuse(f"bucket {uri.bucket!r} at {endpoint}: HTTP {status}") from None
    except BotoCoreError as exc:
        raise refuse(f"cannot reach {endpoint}: {type(exc).__name__}") from None
