"""bench/gpu/README.md states the H200 figures recorded in tests/data/gpu: keep them in sync."""

from __future__ import annotations

import json

from tests.conftest import DATA, ROOT

README = (ROOT / "bench" / "gpu" / "README.md").read_text()
GPU = DATA / "gpu"


def report(name: str) -> dict:
    return json.loads((GPU / "observe" / f"{name}.json").read_text().strip().splitlines()[-1])


def test_tracing_overhead_figures() -> None:
    ov = json.loads((GPU / "timing.json").read_text())["overhead"]
    for mode in ("off_before_init", "off", "kernel", "kernel+runtime"):
        assert f"| {ov['median_us'][mode]:.2f} |" in README
    assert f"**+{ov['overhead_pct_vs_off']['kernel+runtime']:.2f} %**" in README
    assert ov["overhead_pct_vs_off"]["kernel+runtime"] < 3.0


def test_forced_wait_probe_totals() -> None:
    probes = json.loads((GPU / "probes.json").read_text())
    for mode in ("sequential_cold", "batched_cold", "batched_warm_cache"):
        assert f"{probes[mode]['total_s']:.2f} s" in README
        assert len(probes[mode]["probes"]) == 8
        assert all(p["rel_err_vs_parent"] == 0.0 for p in probes[mode]["probes"])
    assert probes["batched_cold"]["total_s"] < 4.0


def test_observe_task_costs() -> None:
    for name in ("softmax.load", "matmul.mainloop", "attention.load_k", "softmax.softmax_fwd"):
        rep = report(name)
        assert f"{rep['wall_s']:.2f} s / {rep['gpu_s']:.2f} s |" in README
        for t in rep["tasks"]:
            if t["gpu_s"]:
                assert f"{t['wall_s']:.2f} / {t['gpu_s']:.2f}" in README
    statuses = [t["status"] for t in report("softmax.softmax_fwd")["tasks"]]
    assert statuses == ["done", "reused"]
