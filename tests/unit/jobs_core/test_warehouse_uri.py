"""The warehouse setting read as a URI: local paths and ``file://`` stay local, ``s3://`` is the
object store, anything else is one error naming the warehouse and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.storage.object_paths import ObjectPath
from jobs.warehouse import Warehouse
from jobs.warehouse_uri import WarehouseError, parse_warehouse


def test_local_paths_and_file_uris_stay_local(tmp_path):
    assert parse_warehouse(str(tmp_path / "wh")).path == tmp_path / "wh"
    assert parse_warehouse(f"file://{tmp_path}/wh").path == tmp_path / "wh"
    assert parse_warehouse("relative/wh").path == Path.cwd() / "relative" / "wh"
    assert not parse_warehouse("dir:with-colon").remote  # (a scheme needs '://')
    assert Warehouse.at(f"file://{tmp_path}/wh").root == tmp_path / "wh"


def test_an_s3_uri_is_the_object_store_and_its_tables_are_uris():
    wh = Warehouse.at("s3://my-bucket/team/wh/")
    assert wh.remote and wh.root == "s3://my-bucket/team/wh"
    assert wh.recording("vitals") == "s3://my-bucket/team/wh/recordings/vitals"
    assert wh.quarantine("vitals") == "s3://my-bucket/team/wh/quarantine/vitals"
    assert wh.run_table("r1", "output") == "s3://my-bucket/team/wh/runs/r1/output"
    assert Warehouse.at("s3://my-bucket").root == "s3://my-bucket"


@pytest.mark.parametrize(("uri", "problem"), [
    ("gs://bucket/wh", "scheme gs:// is not supported"),
    ("abfss://c@acct.dfs.core.windows.net/wh", "credentials do not belong"),
    ("s3a://bucket/wh", "write s3://"),
    ("s3:///wh", "no bucket"),
    ("s3://Not_A_Bucket/wh", "not a valid bucket name"),
    ("s3://bucket/a//b", "empty, '.' or '..' component"),
    ("s3://bucket/wh?versionId=3", "no query"),
    ("file://otherhost/wh", "not one on host 'otherhost'"),
])
def test_other_uris_are_one_error_naming_the_warehouse(uri, problem):
    with pytest.raises(WarehouseError) as caught:
        Warehouse.at(uri)
    message = str(caught.value)
    assert message.startswith("warehouse ") and problem in message
    assert "\n" not in message


def test_credentials_in_the_uri_are_refused_without_showing_them():
    with pytest.raises(WarehouseError) as caught:
        parse_warehouse("s3://AKIAXXX:very-secret@bucket/wh")
    assert "very-secret" not in str(caught.value) and "AKIAXXX" not in str(caught.value)


def test_a_run_directory_on_an_object_store_is_an_object_prefix():
    run_dir = Warehouse.at("s3://bucket/wh").run_dir("r1")
    assert isinstance(run_dir, ObjectPath)
    assert (run_dir / "run.json").uri == "s3://bucket/wh/runs/r1/run.json"
    assert (run_dir / "run.json").parent.name == "r1"
    with pytest.raises(TypeError):  # (no local file can be made of it by mistake)
        open(run_dir / "run.json", "w")  # noqa: SIM115


@given(st.from_regex(r"[a-z0-9][a-z0-9-]{1,20}[a-z0-9]", fullmatch=True),
       st.lists(st.from_regex(r"[A-Za-z0-9_=-]{1,8}", fullmatch=True), max_size=3))
def test_an_s3_location_reads_back_as_written(bucket, parts):
    text = "/".join([f"s3://{bucket}", *parts])
    uri = parse_warehouse(text)
    assert (uri.bucket, uri.prefix) == (bucket, "/".join(parts))
    assert str(uri) == text
