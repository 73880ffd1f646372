"""Paths the tests share: the project root and the shardsim command CTest built."""

import os
import subprocess
import json

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """Runs the shardsim command (SHARDSIM_CLI, set by CTest) and returns its
    parsed --json output."""
    exe = os.environ.get("SHARDSIM_CLI") or os.path.join(ROOT, "build", "cli", "shardsim")
    if not os.access(exe, os.X_OK):
        pytest.skip("the shardsim command is not built (" + exe + ")")

    def run(*args):
        out = subprocess.run([exe, *args], cwd=ROOT, check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    return run
