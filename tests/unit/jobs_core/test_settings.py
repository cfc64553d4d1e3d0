"""Settings are read from the environment in one place, the reference page documents each of
them, and the catalog is found from the current directory."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from jobs.settings import (
    BUNDLED_CATALOG,
    PROJECT_ROOT,
    Settings,
    SettingsError,
    catalog_notice,
    find_catalog,
)

SETTINGS_PAGE = (PROJECT_ROOT / "docs" / "reference" / "settings.md").read_text()


def variable(field: str) -> str:
    return f"REPRISE_{field.upper()}"


def test_defaults(tmp_path):
    s = Settings.from_env({"HOME": "/home/u"}, cwd=tmp_path)
    assert (s.warehouse, s.catalog, s.spark_master, s.delta_backend, s.batches_per_job,
            s.exchange, s.progress) == ("warehouse", PROJECT_ROOT / "schemas", "local[*]",
                                        "auto", 32, "direct", False)
    assert s.spark_conf == s.delta_jars == s.delta_packages == ""


def test_every_variable_is_read():
    env = {variable(f.name): str(i + 1) for i, f in enumerate(dataclasses.fields(Settings))}
    flags = ("progress", "verbose")
    env.update({variable(f): "1" for f in flags})
    env.update(REPRISE_DELTA_BACKEND="delta-rs", REPRISE_EXCHANGE="spark",
               REPRISE_ENGINE="driver")  # (not defaults)
    s = Settings.from_env(env)
    for f in dataclasses.fields(Settings):
        value = getattr(s, f.name)
        assert value is True if f.name in flags else str(value) == env[variable(f.name)]


def test_kernel_dir_falls_back_to_the_user_cache():
    assert Settings.from_env({"XDG_CACHE_HOME": "/c"}).kernel_dir == Path(
        "/c/reprise/qre-kernels")
    assert Settings.from_env({"REPRISE_KERNEL_DIR": "/k", "XDG_CACHE_HOME": "/c"}).kernel_dir \
        == Path("/k")


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_bucket_count_names_the_variable(value):
    with pytest.raises(SettingsError, match=f"REPRISE_BUCKETS: .*{value!r}"):
        Settings.from_env({"REPRISE_BUCKETS": value})


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_batches_per_job_names_the_variable(value):
    with pytest.raises(SettingsError, match=f"REPRISE_BATCHES_PER_JOB: .*{value!r}"):
        Settings.from_env({"REPRISE_BATCHES_PER_JOB": value})


@pytest.mark.parametrize("name", ["REPRISE_BATCHES_PER_JOB", "REPRISE_BUCKETS"])
@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1.5"])
def test_a_count_that_is_not_ascii_digits_is_a_settings_error(name, value):
    # str.isdigit() accepts '²' and '٣', which int() then refuses (a traceback before)
    with pytest.raises(SettingsError, match=f"{name}: .*integer"):
        Settings.from_env({name: value})


def test_the_reference_table_documents_every_setting_with_its_default():
    rows = dict(re.findall(r"^\| `(REPRISE_\w+)` \|([^|]*)\|", SETTINGS_PAGE, re.MULTILINE))
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


@pytest.mark.parametrize(("name", "value"), [("REPRISE_DELTA_BACKEND", "bogus"),
                                             ("REPRISE_EXCHANGE", "shuffle"),
                                             ("REPRISE_ENGINE", "gpu")])
def test_a_value_outside_its_choices_fails_when_the_settings_are_read(name, value):
    # (before, only the commands that used it noticed: `reprise runs` went on silently)
    with pytest.raises(SettingsError, match=f"^{name}: unknown value {value!r}; expected one of"):
        Settings.from_env({name: value})


@pytest.mark.parametrize("value", ["10001", "1000000000000", "99999999999999999999999"])
def test_a_bucket_count_beyond_the_limit_names_the_variable(value):
    # (a huge count made a run whose every replay ended in an OverflowError or MemoryError)
    with pytest.raises(SettingsError, match=r"^REPRISE_BUCKETS: at most 10,000"):
        Settings.from_env({"REPRISE_BUCKETS": value})
    assert Settings.from_env({"REPRISE_BUCKETS": "10000"}).buckets == 10_000


@pytest.mark.parametrize("name", ["REPRISE_VERBOSE", "REPRISE_PROGRESS"])
def test_on_off_variables_read_the_same_words_and_refuse_others(name):
    field = name.removeprefix("REPRISE_").lower()
    for text, on in [("1", True), ("true", True), ("Yes", True), ("on", True), ("", False),
                     ("0", False), ("false", False), ("NO", False), ("off", False)]:
        assert getattr(Settings.from_env({name: text}), field) is on, text
    # (before, REPRISE_VERBOSE=false turned the JVM log on and REPRISE_PROGRESS=true left the
    # bars off)
    for text in ("abc", "2", "enabled"):
        with pytest.raises(SettingsError, match=f"^{name}: expected 1 or 0"):
            Settings.from_env({name: text})


def test_a_kernel_directory_others_can_write_to_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)  # like /tmp
    for path in (shared, Path("/tmp")):
        with pytest.raises(SettingsError, match=r"^REPRISE_KERNEL_DIR: .* can be written by "
                                                r"other users"):
            Settings.from_env({"REPRISE_KERNEL_DIR": str(path)})
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    assert Settings.from_env({"REPRISE_KERNEL_DIR": str(own)}).kernel_dir == own
    # one that does not exist yet is made later (mode 700) by the kernel cache
    assert Settings.from_env({"REPRISE_KERNEL_DIR": str(own / "a" / "b")}).kernel_dir \
        == own / "a" / "b"


def test_a_kernel_directory_that_cannot_be_a_directory_is_refused(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(SettingsError, match=r"^REPRISE_KERNEL_DIR: .*afile is not a directory$"):
        Settings.from_env({"REPRISE_KERNEL_DIR": str(afile)})
    with pytest.raises(SettingsError, match=r"afile is not a directory, so .*sub cannot be made"):
        Settings.from_env({"REPRISE_KERNEL_DIR": str(afile / "sub")})


def test_the_kernel_cache_never_imports_from_a_directory_others_can_write_to(tmp_path):
    from engine.qre import kernel_cache

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    source = "def kernel():\n    return 42\n"
    before = kernel_cache.cache_dir()
    kernel_cache.configure_cache(shared)
    try:
        assert kernel_cache._write_source("reprise_qre_kernel_probe", source) is None
        assert not list(shared.iterdir())  # nothing written, nothing imported
        shared.chmod(0o700)
        written = kernel_cache._write_source("reprise_qre_kernel_probe", source)
        assert written == shared / "reprise_qre_kernel_probe.py"
    finally:
        kernel_cache.configure_cache(before)


def test_the_catalog_is_the_environment_s_then_the_project_s_then_the_bundled_one(tmp_path):
    assert find_catalog({}, tmp_path).path == BUNDLED_CATALOG
    assert find_catalog({}, tmp_path).bundled
    (tmp_path / "schemas").mkdir()
    assert find_catalog({}, tmp_path).path == tmp_path / "schemas"
    (tmp_path / "reprise.yaml").write_text("catalog: my-catalog\n")
    assert find_catalog({}, tmp_path).path == tmp_path / "my-catalog"
    (tmp_path / "reprise.yaml").write_text("# no catalog: the default\n")
    assert find_catalog({}, tmp_path).path == tmp_path / "schemas"
    chosen = find_catalog({"REPRISE_CATALOG": "/elsewhere"}, tmp_path)
    assert (chosen.path, chosen.origin) == (Path("/elsewhere"), "REPRISE_CATALOG")
    assert Settings.from_env({}, cwd=tmp_path).catalog == tmp_path / "schemas"


@pytest.mark.parametrize("text", ["catalog: [a, b]\n", "- a list\n", "catalog: {\n"])
def test_a_malformed_project_file_is_one_error_naming_it(tmp_path, text):
    (tmp_path / "reprise.yaml").write_text(text)
    with pytest.raises(SettingsError, match=r"reprise\.yaml: ") as caught:
        Settings.from_env({}, cwd=tmp_path)
    assert "\n" not in str(caught.value)


def test_only_the_fallback_to_the_bundled_catalog_is_announced(tmp_path):
    notice = catalog_notice({}, tmp_path)
    assert notice is not None and str(BUNDLED_CATALOG) in notice
    assert catalog_notice({"REPRISE_CATALOG": str(tmp_path)}, tmp_path) is None
    assert catalog_notice({}, PROJECT_ROOT) is None  # the checkout's own catalog
    (tmp_path / "schemas").mkdir()
    assert catalog_notice({}, tmp_path) is None
