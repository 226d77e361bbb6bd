"""A built wheel works outside the checkout: ``argus demo`` and ``argus observe --dry-run``.

The wheel is built from this checkout (``pip wheel --no-deps``), installed into a fresh venv in
a temporary folder (``--without-pip``; its dependencies are borrowed from the running
interpreter's site-packages through a ``.pth`` file, so nothing is downloaded), and run from a
folder that is not the checkout, with no PYTHONPATH. Whatever a command needs at run time must
therefore be in the wheel (the worker, the launcher's bootstrap, SQL modules, demo data).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    # build from a copy of what the wheel is made of, so no build/ folder lands in the checkout
    src = tmp / "src"
    for name in ("argusdb",):
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    if build.returncode != 0 and "No module named pip" in build.stderr:
        pytest.skip("pip is not installed in this interpreter")
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("argusdb-*.whl")
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    purelib = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig."
                                   "get_paths()['purelib'])"], capture_output=True, text=True,
                                  check=True).stdout.strip())
    # the dependencies (duckdb, pyarrow, click, ...) of the running interpreter, never argusdb
    deps = [p for p in {*site.getsitepackages(), sysconfig.get_paths()["purelib"]}
            if Path(p).is_dir()]
    (purelib / "_argus_test_deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(purelib), str(wheel)], check=True, timeout=600)
    return env_dir


def run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ARGUS_REPLAY")}
    return subprocess.run([str(venv / "bin" / "python"), "-m", "argusdb", *args], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=600)


def test_the_installed_package_is_the_wheel(venv: Path, tmp_path: Path) -> None:
    p = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import argusdb, argusdb.observe.runner.worker, "
                        "argusdb.observe.runner.replay; "
                        "from argusdb.observe import launch; print(argusdb.__file__); "
                        "print(launch.boot_dir())"], cwd=tmp_path,
                       capture_output=True, text=True, check=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    where, boot = p.stdout.split()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(ROOT)
    assert (Path(boot) / "sitecustomize.py").is_file()


def test_demo_runs_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    p = run(venv, tmp_path, "demo", str(tmp_path / "demo.duckdb"))
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ingested" in p.stderr and "softmax" in p.stdout


def test_observe_dry_run_of_a_command_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    prog = tmp_path / "model"
    shutil.copytree(ROOT / "tests" / "data" / "programs" / "model", prog)
    p = run(venv, prog, "observe", "--region", "fused_norm/layernorm_fwd/load", "--signals",
            "duration,inst_executed,warp_stall_samples,exposed_latency", "--dry-run", "--json",
            "--", "python", "model.py")
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["request"]["command"] == ["python", "model.py"]
    assert doc["tasks"][0]["action"] == "find_launch"
    # with replay: the program runs once, the parent is also timed on replays
    assert len(doc["tasks"]) == 10
    assert "proton_instr" in [t["action"] for t in doc["tasks"]]
    assert sum(1 for t in doc["tasks"] if t["runs_program"]) == 1
