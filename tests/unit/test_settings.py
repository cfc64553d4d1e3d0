"""Settings are read from the environment in one place, and the README's configuration table
documents each of them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from jobs.settings import PROJECT_ROOT, Settings, SettingsError

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def variable(field: str) -> str:
    return f"REPRISE_{field.upper()}"


def test_defaults():
    s = Settings.from_env({"HOME": "/home/u"})
    assert (s.warehouse, s.catalog, s.spark_master, s.delta_backend, s.batches_per_job,
            s.exchange, s.progress) == (Path("warehouse"), PROJECT_ROOT / "schemas", "local[*]",
                                        "auto", 32, "direct", False)
    assert s.spark_conf == s.delta_jars == s.delta_packages == ""


def test_every_variable_is_read():
    env = {variable(f.name): str(i + 1) for i, f in enumerate(dataclasses.fields(Settings))}
    flags = ("progress", "verbose")
    env.update({variable(f): "1" for f in flags})
    s = Settings.from_env(env)
    for f in dataclasses.fields(Settings):
        value = getattr(s, f.name)
        assert value is True if f.name in flags else str(value) == env[variable(f.name)]


def test_kernel_dir_falls_back_to_the_user_cache():
    assert Settings.from_env({"XDG_CACHE_HOME": "/c"}).kernel_dir == Path(
        "/c/reprise/qre-kernels")
    assert Settings.from_env({"REPRISE_KERNEL_DIR": "/k", "XDG_CACHE_HOME": "/c"}).kernel_dir \
        == Path("/k")


@pytest.mark.parametrize("value", ["0", "-2", "many", "65537", "99999999999999999999999"])
def test_a_bad_bucket_count_names_the_variable(value):
    # (more than 65,536: a run.json with that many buckets is refused; before, any was taken)
    with pytest.raises(SettingsError, match=f"REPRISE_BUCKETS: .*{value!r}"):
        Settings.from_env({"REPRISE_BUCKETS": value})


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_batches_per_job_names_the_variable(value):
    with pytest.raises(SettingsError, match=f"REPRISE_BATCHES_PER_JOB: .*{value!r}"):
        Settings.from_env({"REPRISE_BATCHES_PER_JOB": value})


@pytest.mark.parametrize("name", ["REPRISE_BATCHES_PER_JOB", "REPRISE_BUCKETS",
                                  "REPRISE_LOCAL_EVENTS"])
@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1.5"])
def test_a_count_that_is_not_ascii_digits_is_a_settings_error(name, value):
    # str.isdigit() accepts '²' and '٣', which int() then refuses (a traceback before)
    with pytest.raises(SettingsError, match=f"{name}: .*integer"):
        Settings.from_env({name: value})


def test_the_readme_table_documents_every_setting_with_its_default():
    section = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(REPRISE_\w+)` \|([^|]*)\|", section, re.MULTILINE))
    assert set(rows) == {variable(f.name) for f in dataclasses.fields(Settings)}
    s = Settings.from_env({})
    for name in ("spark_master", "delta_backend", "batches_per_job", "exchange"):
        assert rows[variable(name)].strip() == f"`{getattr(s, name)}`"


def test_an_unknown_backend_names_the_variable_or_the_option():
    from jobs.storage import open_driver_storage

    with pytest.raises(SettingsError, match=r"^REPRISE_DELTA_BACKEND: unknown Delta backend 'x'"):
        open_driver_storage(settings=Settings(delta_backend="x"))
    with pytest.raises(SettingsError, match=r"^--backend: unknown Delta backend 'y'"):
        open_driver_storage("y", settings=Settings(delta_backend="x"))
