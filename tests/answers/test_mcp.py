"""A real MCP client session over stdio against ``argus mcp STORE`` in a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from argusdb.api import Connection
from tests.conftest import KERNELS, ROOT


async def _session(store: str) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "argusdb", "mcp", store],
                                   cwd=str(ROOT))
    out: dict[str, Any] = {}
    with open(Path(store).with_suffix(".stderr"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["query"] = await session.call_tool("query", {
                "sql": "SELECT count(*) AS n, median(value) AS med FROM evidence "
                       "WHERE region_id = 'softmax/softmax_fwd'"})
            out["refused"] = await session.call_tool("query", {
                "sql": "SELECT region_id, median(value) AS med FROM evidence "
                       "WHERE region_id = 'matmul/matmul_kernel' GROUP BY region_id"})
            out["hostile"] = await session.call_tool("query", {"sql": "DROP TABLE run"})
            out["nan"] = await session.call_tool("query", {
                "sql": "SELECT 'nan'::DOUBLE AS a, 'inf'::DOUBLE AS b"})
            out["diff"] = await session.call_tool("diff", {
                "region": "matmul/matmul_kernel", "from_version": "variant=a",
                "to_version": "variant=b"})
            out["report"] = await session.call_tool("report", {"region": "softmax/softmax_fwd"})
            out["plan"] = await session.call_tool("observe_plan", {
                "region": "softmax/softmax_fwd", "signals": ["duration", "inst_executed"],
                "source": str(KERNELS / "softmax.py")})
            out["plan_text"] = await session.call_tool("observe_plan", {
                "region": "softmax/softmax_fwd", "signals": "duration, inst_executed",
                "source": str(KERNELS / "softmax.py")})
    return out


def _doc(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def test_mcp_client_session_over_stdio(relabelled: Connection) -> None:
    path = relabelled.store.path
    durations = relabelled.query("SELECT value FROM evidence WHERE region_id = "
                                 "'softmax/softmax_fwd'").column("value").to_pylist()
    (softmax_run,) = relabelled.query(
        "SELECT run_id FROM run WHERE artefact_name = 'softmax.cupti.jsonl' "
        "AND meta.timeline_of IS NULL").column("run_id").to_pylist()
    relabelled.close()
    out = anyio.run(_session, path)
    assert out["tools"] == ["check", "diff", "explain", "observe_plan", "query", "report",
                            "trajectory"]
    q = _doc(out["query"])
    assert not out["query"].is_error
    assert q["columns"] == ["n", "med"] and q["rows"][0][0] == len(durations) == 20
    assert q["rows"][0][1] == sorted(durations)[9] / 2 + sorted(durations)[10] / 2
    assert out["refused"].is_error
    err = json.loads(out["refused"].content[0].text)
    # variant=a and variant=b are two program versions: the checker's version rule refuses
    assert err["ok"] is False and err["errors"][0]["code"] == "AR01"
    assert err["errors"][0]["name"] == "version.mixed" and err["errors"][0]["remedy"]
    assert out["hostile"].is_error
    assert json.loads(out["hostile"].content[0].text)["errors"][0]["code"] == "AR08"
    # strict JSON in the text content (NaN / Infinity are not JSON), null in both forms
    nan = json.loads(out["nan"].content[0].text, parse_constant=lambda t: 1 / 0)
    assert nan["rows"] == [[None, None]] and _doc(out["nan"])["rows"] == [[None, None]]
    d = _doc(out["diff"])
    assert d["rows"][0]["ratio"] == 1.0 and d["rows"][0]["significant"] is False
    rep = _doc(out["report"])
    assert rep["claims"][0]["verdict"] == "sufficient" and rep["claims"][0]["n"] == 20
    plan = _doc(out["plan"])["plan"]
    actions = [t["action"] for t in plan["tasks"]]
    assert actions[0] == "find_launch" and "ncu_source" in actions
    # Clean timing of softmax is in the store already: the plan reuses that run.
    timing = next(t for t in plan["tasks"] if t["action"] == "cupti_timing")
    assert timing["reuse"]["run_id"] == softmax_run
    # the CLI's "a,b" form of the signals plans the same tasks
    assert not out["plan_text"].is_error, out["plan_text"].content
    text_plan = _doc(out["plan_text"])["plan"]
    assert [t["action"] for t in text_plan["tasks"]] == actions
