"""The installed product holds product code only: the wheel built from ``pyproject.toml`` carries no
benchmark, simulation, synthetic generator, research script or their data, and no demo pack; the bench
commands still run as ``manage.py bench_*`` from a checkout."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tarfile
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = {"arg_platform", "projects", "taxonomy", "ontology", "memory", "inference", "review"}
NOT_PRODUCT = (
    "bench/*",
    "*/bench/*",
    "*/bench_*.py",
    "*synthetic*",
    "*/simulation/*",
    "*pairs_v[6-9]*",
    "*pair_files.py",
    "*pairs_*source.py",
    "*train_comparator*",
    "*train_cross_encoder*",
    "*train_registry_comparator*",
    "*simulate_offline*",
    "*demo_handlers*",
    "packs/*",
    "tests/*",
)


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The file list of a wheel built from the project's tracked (and new, not ignored) files."""
    tmp = tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    archive = BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name in filter(None, (raw.decode() for raw in listed)):
            if (ROOT / name).is_file():
                tar.add(ROOT / name, arcname=name)
    archive.seek(0)
    with tarfile.open(fileobj=archive) as tar:
        tar.extractall(tmp / "src", filter="data")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["-w", str(tmp / "out"), str(tmp / "src")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp / "out").glob("arg_platform-*.whl")
    return zipfile.ZipFile(wheel).namelist()


def test_the_wheel_holds_the_product_packages_only(wheel_files):
    top = {name.split("/")[0] for name in wheel_files if not name.split("/")[0].endswith(".dist-info")}

    assert top == PRODUCT_PACKAGES


def test_the_wheel_holds_no_bench_code_or_data_and_no_demo_pack(wheel_files):
    found = sorted(name for name in wheel_files for pattern in NOT_PRODUCT if fnmatch.fnmatch(name, pattern))

    assert found == []


def test_the_wheel_holds_the_model_resources_the_product_reads(wheel_files):
    from memory import cross_encoder
    from memory.comparator.learned import MODEL_PATH

    needed = {MODEL_PATH, *cross_encoder.dev_paths()}

    assert {str(path.relative_to(ROOT)) for path in needed} <= set(wheel_files)


def test_manage_py_runs_bench_commands_under_the_bench_settings(tmp_path):
    def manage(*args: str) -> str:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "ARG_DATA_DIR": str(tmp_path),
            "HF_HUB_OFFLINE": "1",
        }
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    sys.path.insert(0, str(ROOT))
    try:
        from manage import settings_module
    finally:
        sys.path.remove(str(ROOT))

    assert settings_module(["manage.py", "bench_routing"]) == "bench.settings"
    assert settings_module(["manage.py", "simulate_offline"]) == "bench.settings"
    assert settings_module(["manage.py", "runserver"]) == "arg_platform.settings"
    assert settings_module(["manage.py", "__init__"]) == "arg_platform.settings"
    assert settings_module(["manage.py"]) == "arg_platform.settings"
    assert "bench_routing" not in manage("help", "--commands").split()
    assert "--clinc" in manage("bench_routing", "--help")
