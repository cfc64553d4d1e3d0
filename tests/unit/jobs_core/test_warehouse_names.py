"""Names that become warehouse paths (recordings, run ids) cannot lead outside the warehouse."""

from __future__ import annotations

import pytest

from engine.errors import RepriseError
from jobs.warehouse import Warehouse, WarehouseError
from jobs.warehouse_names import check_name

ESCAPES = ["../../x", "../x", "/tmp/x", "a/../../b", "a/b", "..", ".", "", ".hidden", "x\0y",
           "-rf", "a\\..\\b", "x" * 300]


@pytest.mark.parametrize("name", ESCAPES)
def test_every_path_builder_refuses_names_that_are_not_one_safe_component(tmp_path, name):
    wh = Warehouse(tmp_path / "wh")
    for build, what in ((wh.recording, "recording name"), (wh.quarantine, "recording name"),
                        (wh.run_dir, "run id"), (lambda n: wh.run_table(n, "output"), "run id")):
        with pytest.raises(RepriseError) as info:
            build(name)
        assert what in str(info.value) and repr(name) in str(info.value)


@pytest.mark.parametrize("name", ["vitals", "vitals_hr_1m-v9-commit-abc123", "run.2", "A1"])
def test_ordinary_names_give_paths_under_their_directory(tmp_path, name):
    wh = Warehouse(tmp_path / "wh")
    assert wh.recording(name) == str(tmp_path / "wh" / "recordings" / name)
    assert wh.quarantine(name) == str(tmp_path / "wh" / "quarantine" / name)
    assert wh.run_dir(name) == tmp_path / "wh" / "runs" / name
    assert check_name("run id", name) == name


def test_a_symbolic_link_inside_the_warehouse_cannot_lead_out(tmp_path):
    (tmp_path / "wh" / "runs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "wh" / "runs" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RepriseError, match="outside the warehouse"):
        Warehouse(tmp_path / "wh").run_dir("link")


@pytest.mark.parametrize("name", ["wh%41", "a%2fb", "x%zz%4a"])
def test_a_warehouse_path_with_a_percent_escape_is_refused_naming_it(tmp_path, name):
    # (delta-rs decodes '%41' in a local path: `generate` into wh%41 failed looking in whA)
    with pytest.raises(WarehouseError, match=r"warehouse .*: delta-rs reads '%[0-9a-fA-F]{2}'"):
        Warehouse.at(tmp_path / name)


@pytest.mark.parametrize("name", ["wh%", "100%zz", "a b#c"])
def test_a_warehouse_path_with_other_percent_signs_is_fine(tmp_path, name):
    assert Warehouse.at(tmp_path / name).root == (tmp_path / name).resolve()
