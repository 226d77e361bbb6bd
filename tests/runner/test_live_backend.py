"""The live backend's process handling, with a stand-in for the packaged worker (no GPU needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.observe.runner.backends import Job, LiveBackend
from tests.conftest import GPU_KERNELS

WORKER = '''
import json, os, sys
from pathlib import Path

def handle(args):
    opts = dict(zip(args[1::2], args[2::2]))
    if "fail" in opts["--params"]:
        raise RuntimeError("kernel failed")
    Path(opts["--out"], "result.json").write_text(json.dumps(
        {"files": [], "gpu_s": 0.5, "pid": os.getpid(), "action": args[0]}))

if sys.argv[1] == "serve":
    for line in sys.stdin:
        print("output of the kernel itself", flush=True)
        try:
            handle(json.loads(line))
            print("ARGUS-RESULT " + json.dumps({"ok": True}), flush=True)
        except Exception as exc:
            print("ARGUS-RESULT " + json.dumps({"ok": False, "error": repr(exc)}), flush=True)
else:
    handle(sys.argv[1:])
'''


def job(tmp: Path, action: str, name: str, params: dict | None = None) -> Job:
    src = ProgramSource.from_path(GPU_KERNELS / "softmax.py")
    return Job(action, src, None, None, "default", {}, params or {}, tmp / name)


def test_checks_and_timings_share_one_resident_worker(tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    be = LiveBackend(worker=worker)
    a = be.run(job(tmp_path, "find_launch", "a"))
    b = be.run(job(tmp_path, "cupti_timing", "b"))
    c = be.run(job(tmp_path, "ncu_source", "c"))
    assert a.detail["pid"] == b.detail["pid"] != c.detail["pid"]
    assert a.gpu_s == 0.5 and b.detail["action"] == "cupti_timing"
    # the kernels' own output goes to the job's log, not into the protocol
    assert (tmp_path / "b" / "worker.log").read_text() == "output of the kernel itself\n"
    with pytest.raises(InputError, match="kernel failed"):
        be.run(job(tmp_path, "cupti_timing", "d", {"fail": 1}))
    e = be.run(job(tmp_path, "cupti_timing", "e"))  # the worker keeps serving
    assert e.detail["pid"] == a.detail["pid"]
    proc = be._proc
    be.close()
    assert proc is not None and proc.returncode == 0 and be._proc is None
    assert json.loads((tmp_path / "e" / "result.json").read_text())["action"] == "cupti_timing"


def test_without_residency_every_job_is_a_process(tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    be = LiveBackend(worker=worker, resident=False)
    pids = {be.run(job(tmp_path, "cupti_timing", n)).detail["pid"] for n in "ab"}
    assert len(pids) == 2


def test_the_real_worker_starts_serving_and_checks_its_arguments() -> None:
    import subprocess
    import sys

    served = subprocess.run([sys.executable, "-m", "argusdb.observe.runner.worker", "serve"],
    input="",
                            capture_output=True, text=True, timeout=60)
    assert served.returncode == 0, served.stderr
    bad = subprocess.run([sys.executable, "-m", "argusdb.observe.runner.worker", "cupti_timing"],
                         capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "needs --source and --config" in bad.stderr


def test_the_kernel_folder_is_on_the_worker_path_for_sibling_imports(tmp_path: Path) -> None:
    backend = LiveBackend()
    backend.source_dir = tmp_path / "kernels"
    assert str(tmp_path / "kernels") in backend._env()["PYTHONPATH"].split(os.pathsep)


def test_the_worker_refuses_an_autotuned_harness_kernel(tmp_path: Path) -> None:
    import subprocess
    import sys

    pytest.importorskip("triton")
    src = tmp_path / "tuned.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.autotune(configs=[triton.Config({}, num_warps=1), "
        "triton.Config({}, num_warps=2)], key=['n'])\n@triton.jit\n"
        "def k(x_ptr, n):\n    pass\n\n\nKERNEL = 'k'\nCONFIGS = {'default': {}}\n")
    p = subprocess.run([sys.executable, "-m", "argusdb.observe.runner.worker", "child", "--source",
                        str(src), "--config", "default"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert p.returncode != 0 and "k is an @triton.autotune kernel" in p.stderr
    assert "argus observe --region ... -- COMMAND" in p.stderr
