"""The design card's platform/ folder must never shadow the standard library's ``platform`` module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_stdlib_platform_from_repo_root():
    out = subprocess.run(
        [sys.executable, "-c", "import platform; print(platform.system(), platform.__file__)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    system, path = out.split()
    assert system == "Linux"
    assert not path.startswith(str(ROOT)), path


def test_stdlib_platform_inside_configured_app():
    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'arg_platform.settings'); django.setup();"
        "import platform, neo4j, celery; print(platform.system()); import arg_platform; print(arg_platform.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    lines = out.split()
    assert lines[0] == "Linux"
    assert lines[1] == str(ROOT / "platform" / "arg_platform" / "__init__.py")


def test_platform_folder_is_not_a_package():
    assert not (ROOT / "platform" / "__init__.py").exists()
