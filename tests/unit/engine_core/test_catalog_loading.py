"""Loading a catalog directory: every problem of a file is a CatalogError naming the file and
the field, a broken file does not hide the others, and unknown names say which catalog was
read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.catalog import load_catalog
from engine.errors import RepriseError
from engine.specs import CatalogError, UnknownName

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
SPJ = "name: j\nkind: spj\nquery: SELECT a.k FROM a\n"


@pytest.fixture
def schemas(tmp_path: Path) -> Path:
    root = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, root)
    return root


def broken(schemas: Path, name: str, data: bytes, folder: str = "queries") -> CatalogError:
    """The error of ``folder/name.yaml`` holding ``data``; the rest of the catalog still loads."""
    (schemas / folder / f"{name}.yaml").write_bytes(data)
    catalog = load_catalog(schemas)
    assert catalog.recording("vitals").name == "vitals"
    assert catalog.query("vitals_tachy_count").kind == "qre"
    with pytest.raises(CatalogError) as err:
        (catalog.query if folder == "queries" else catalog.recording)(name)
    assert err.value.source.endswith(f"{name}.yaml")
    return err.value


def test_a_non_utf8_byte_names_the_file_and_line(schemas):
    text = (schemas / "queries" / "vitals_hr_1m.yaml").read_bytes()
    first_line = text.index(b"\n") + 1
    err = broken(schemas, "vitals_hr_1m", text[:first_line] + b"\xff" + text[first_line:])
    assert "not UTF-8" in err.problem and "0xff on line 2" in err.problem


def test_a_yaml_error_names_the_file_and_position(schemas):
    err = broken(schemas, "ads_10s", b"name: ads_10s\nkind: [window\n")
    assert err.field == "<document>" and "not valid YAML (line 3" in err.problem


def test_an_invalid_date_is_a_yaml_error(schemas):
    err = broken(schemas, "ads_10s", b"name: ads_10s\nlateness: 2026-02-30\n")
    assert "not valid YAML" in err.problem


@pytest.mark.parametrize(("text", "field", "problem"), [
    (SPJ + "inputs: {}\n", "inputs", "at least one stream"),
    (SPJ + "inputs: {v: {}}\n", "inputs.v", "expected a recording name"),
    (SPJ + "inputs: {[a]: vitals}\n", "<document>", "not valid YAML"),
    (SPJ + "inputs: {3: vitals}\n", "inputs.3", "identifier"),
    ("name: q\nkind: qre\ninput: vitals\nquery: eps(0)\nkey: []\n", "key", "column name"),
    ("name: q\nkind: qre\ninput: vitals\nquery: eps(0)\ntime: {}\n", "time", "column name"),
    ("name: q\nkind: qre\ninput: [vitals]\nquery: eps(0)\n", "input", "expected str"),
    ("name: q\nkind: qre\ninput: vitals\nquery: eps(0)\n1: x\nz: y\n", "1", "unknown field"),
    ("name: q\nkind: qre\ninput: vitals\nquery: eps(0)\n"
     "derive: {d: {sql: \"'a\", type: string}}\n", "derive.d.sql", "not a Spark SQL"),
    ("name: q\nkind: qre\ninput: vitals\nquery: eps(0)\n"
     "derive: {d: {sql: a, type: [int]}}\n", "derive.d.type", "expected one of"),
])
def test_wrong_field_types_name_the_field(schemas, text, field, problem):
    err = broken(schemas, "q", text.encode())
    assert err.field == field and problem in err.problem, err


@pytest.mark.parametrize(("text", "field"), [
    ("name: r\nkey: k\ntime: ts\ncolumns: {k: [string], ts: timestamp}\n", "columns.k"),
    ("name: r\nkey: k\ntime: ts\ncolumns: {1: string, k: string, ts: timestamp}\n", "columns.1"),
    ("name: r\nkey: k\ntime: ts\ncolumns: {k: string, ts: timestamp}\n7: x\n", "7"),
])
def test_wrong_recording_field_types_name_the_field(schemas, text, field):
    assert broken(schemas, "r", text.encode(), "recordings").field == field


def test_a_query_of_a_broken_recording_names_the_recording_error(schemas):
    (schemas / "recordings" / "vitals.yaml").write_bytes(b"name: vitals\ncolumns: 3\n")
    catalog = load_catalog(schemas)
    with pytest.raises(CatalogError, match=r"recording 'vitals' failed to load: .*vitals\.yaml: "
                                           r"field 'columns'"):
        catalog.query("vitals_hr_1m")
    assert catalog.query("ads_10s").input == "ads"


@pytest.mark.parametrize(("folder", "original"), [("recordings", "vitals"),
                                                  ("queries", "ads_10s")])
def test_a_name_other_than_the_file_name_fails_that_file(schemas, folder, original):
    text = (schemas / folder / f"{original}.yaml").read_text()
    assert f"name: {original}\n" in text
    err = broken(schemas, "tst2", text.replace(f"name: {original}\n", "name: zzz\n").encode(),
                 folder)
    assert str(err) == (f"{schemas / folder / 'tst2.yaml'}: field 'name': 'zzz' is not the "
                        "file's name 'tst2'")
    catalog = load_catalog(schemas)
    lookup = catalog.recording if folder == "recordings" else catalog.query
    with pytest.raises(UnknownName, match=r"unknown \w+ 'zzz' .*files that failed to load: "
                                          r"tst2\)"):
        lookup("zzz")
    with pytest.raises(CatalogError, match=r"tst2\.yaml: field 'name'"):
        catalog.check()


def test_a_query_of_a_recording_whose_file_has_another_name_lists_the_failed_files(schemas):
    (schemas / "recordings" / "vitals.yaml").rename(schemas / "recordings" / "tst2.yaml")
    catalog = load_catalog(schemas)
    with pytest.raises(CatalogError) as info:
        catalog.query("vitals_hr_1m")
    assert info.value.field == "input" and info.value.problem == (
        "unknown recording 'vitals' (known: ad_campaigns, ads, ticks; files that failed to "
        "load: tst2)")


def test_unknown_names_say_which_catalog_was_read(tmp_path, schemas):
    with pytest.raises(UnknownName, match=rf"catalog directory {tmp_path / 'none'} does not "
                                          "exist"):
        load_catalog(tmp_path / "none").query("q")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UnknownName, match=r"has no query files \(.*queries/\*\.yaml\)"):
        load_catalog(tmp_path / "empty").query("q")
    with pytest.raises(UnknownName, match=rf"unknown recording 'nope' in the catalog {schemas} "
                                          r"\(known: ad_campaigns, ads, ticks, vitals\)"):
        load_catalog(schemas).recording("nope")


def test_every_catalog_error_is_a_reprise_error():
    assert issubclass(CatalogError, RepriseError) and issubclass(UnknownName, RepriseError)
    assert not issubclass(CatalogError, ValueError)
    load_catalog(SCHEMAS).check()  # the project's catalog loads whole
