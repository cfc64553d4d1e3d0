"""The standard AWS settings an ``s3://`` warehouse is reached with, as this process has them
(read by delta-rs, pyarrow and boto3 themselves; handed on where an environment is not
inherited: Spark executors on other hosts, delta-rs ``storage_options``)."""

from __future__ import annotations

import os
from collections.abc import Mapping

#: The standard AWS settings of an S3 warehouse (``AWS_ENDPOINT_URL`` and ``AWS_ALLOW_HTTP``
#: for an S3-compatible server without TLS).
AWS_SETTINGS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                "AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP")


def storage_options(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The AWS settings set in ``env`` (default: this process's environment), as delta-rs
    ``storage_options``."""
    env = os.environ if env is None else env
    return {name: env[name] for name in AWS_SETTINGS if env.get(name)}
