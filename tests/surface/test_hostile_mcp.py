"""The hostile corpus through ``argus mcp`` with a real MCP client, malformed JSON-RPC on the
raw wire, source roots of observe_plan, and a long-lived server's threads and memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import argusdb
from tests.conftest import KERNELS, ROOT
from tests.surface.conftest import fingerprint
from tests.surface.corpus import SLOW_OPERATOR, corpus

TIMEOUT_S = 2.0
BOUND_S = TIMEOUT_S + 1.0
#: A call right after one that ended its worker may wait for the replacement to start.
RESTART_S = 60.0


def _params(store: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "argusdb", "mcp", store, *extra],
                                 cwd=str(ROOT), env={**os.environ})


def _doc(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _server_pid(store: str) -> int:
    """The `argus mcp STORE` process among this process's children."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"mcp" in cmd and store.encode() in cmd:
            return int(pid)
    raise AssertionError("no argus mcp process found")


def _status(pid: int) -> tuple[int, int]:
    """Threads and resident KiB of a process."""
    fields = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0])


async def _corpus(store: str, errlog: Path) -> tuple[list[str], list[tuple[float, str]]]:
    bad: list[str] = []
    times: list[tuple[float, str]] = []
    with errlog.open("w") as err:
        async with stdio_client(_params(store, "--timeout", str(TIMEOUT_S)),
                                errlog=err) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            restarted = True  # the first call may wait for the worker's start
            # The mcp client cannot send lone surrogates (its serializer refuses them):
            # test_malformed_json_rpc_gets_json_rpc_errors sends them on the raw wire.
            cases = [c for c in corpus() if _utf8(c.sql)]
            calls = [("query", c.sql) for c in cases] + [("query", q) for q in SLOW_OPERATOR]
            calls += [(tool, c.sql) for c in cases if c.family == "write"
                      for tool in ("check", "explain")]
            for tool, sql in calls:
                t0 = time.monotonic()
                res = await session.call_tool(tool, {"sql": sql})
                took = time.monotonic() - t0
                try:
                    doc = _doc(res)
                except (ValueError, IndexError, AttributeError):
                    bad.append(f"{tool} {sql[:60]!r}: not a JSON answer: {res}")
                    continue
                if res.is_error and not (doc.get("ok") is False and doc["errors"][0]["code"]):
                    bad.append(f"{tool} {sql[:60]!r}: error without the envelope: {doc}")
                if any(e.get("code") == "E999" for e in doc.get("errors", [])):
                    bad.append(f"{tool} {sql[:60]!r}: internal error {doc}")
                if not restarted:
                    times.append((took, sql))
                elif took > RESTART_S:
                    bad.append(f"{tool} {sql[:60]!r}: {took:.1f} s after a restart")
                restarted = "the call ran longer" in json.dumps(doc)
    return bad, times


@pytest.mark.slow
def test_mcp_corpus_writes_nothing_and_stays_in_time(hostile_store: str,
                                                    tmp_path: Path) -> None:
    before = fingerprint(hostile_store)
    bad, times = anyio.run(_corpus, hostile_store, tmp_path / "stderr")
    assert bad == []
    slowest = max(times)
    print(f"\n{len(times)} timed MCP calls, slowest {slowest[0]:.2f} s: {slowest[1][:60]!r}")
    assert slowest[0] <= BOUND_S, f"slowest {slowest[0]:.2f} s: {slowest[1][:80]!r}"
    assert fingerprint(hostile_store) == before
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def _raw(store: str, lines: list[bytes], n_answers: int) -> list[dict[str, Any]]:
    """Send raw lines to `argus mcp` and read ``n_answers`` JSON lines back."""
    proc = subprocess.Popen([sys.executable, "-m", "argusdb", "mcp", store], cwd=str(ROOT),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for line in lines:
            proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        out = [json.loads(proc.stdout.readline()) for _ in range(n_answers)]
    finally:
        proc.stdin.close()
        proc.wait(60)
    return out


def _req(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    doc: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        doc["params"] = params
    return json.dumps(doc).encode()


def test_malformed_json_rpc_gets_json_rpc_errors(hostile_store: str) -> None:
    init = _req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "0"}})
    call = {"name": "query", "arguments": {"sql": "SELECT '\\ud800' AS x"}}
    lines = [b"{not json", b"\xff\xfe{}", b"[1, 2]", b"42", b'{"jsonrpc": "1.0", "id": 3}',
             b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": '
             + json.dumps(call).encode().replace(b"\\\\ud800", b"\\ud800") + b"}",
             init, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
             _req(5, "tools/call", {"name": "query", "arguments": {"sql": 123}}),
             _req(6, "tools/call", {"name": "query", "arguments": {"sql": ["x"],
                                                                   "max_rows": "many"}}),
             _req(7, "tools/call", {"name": "no_such_tool", "arguments": {}}),
             _req(8, "tools/call", {"name": "query", "arguments": {
                 "sql": "SELECT count(*) AS n FROM run"}})]
    out = _raw(hostile_store, lines, 11)
    codes = [(o.get("id"), o.get("error", {}).get("code")) for o in out]
    assert codes[:6] == [(None, -32700), (None, -32700), (None, -32600), (None, -32600),
                         (3, -32600), (4, -32602)]
    assert out[6]["id"] == 1 and "result" in out[6]
    by_id = {o["id"]: o["result"] for o in out[7:]}
    for rid in (5, 6, 7):
        assert by_id[rid]["isError"]
        doc = json.loads(by_id[rid]["content"][0]["text"])
        assert doc["ok"] is False and doc["errors"][0]["code"] == "E001", doc
        assert "pydantic" not in json.dumps(doc) and "validation error" not in json.dumps(doc)
    assert "sql" in json.loads(by_id[5]["content"][0]["text"])["errors"][0]["message"]
    with argusdb.connect(hostile_store, read_only=True) as db:
        runs = db.query("SELECT count(*) AS n FROM run").column("n")[0].as_py()
    assert json.loads(by_id[8]["content"][0]["text"])["rows"][0][0] == runs


async def _sources(store: str, root: Path, paths: list[str]) -> list[Any]:
    out = []
    async with stdio_client(_params(store, "--source-root", str(root)),
                            errlog=open(os.devnull, "w")) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        for p in paths:
            out.append(await session.call_tool("observe_plan", {
                "region": "softmax/softmax_fwd", "signals": ["duration"], "source": p}))
    return out


def test_observe_plan_reads_sources_under_its_roots_only(hostile_store: str,
                                                         tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "softmax.py").write_text((KERNELS / "softmax.py").read_text())
    (root / "big.py").write_text("#" * (2**20 + 1))
    (root / "link.py").symlink_to("/etc/passwd")
    outside = ["/etc/passwd", "/dev/zero", "/no/such/file.py", "/etc", str(root / "big.py"),
               str(root / "link.py"), f"{root}/../../../../etc/passwd", str(KERNELS /
                                                                          "softmax.py")]
    res = anyio.run(_sources, hostile_store, root, [str(root / "softmax.py"), *outside])
    assert not res[0].is_error and _doc(res[0])["plan"]["tasks"]
    texts = {r.content[0].text for r in res[1:]}
    assert all(r.is_error for r in res[1:])
    assert len(texts) == 1  # one text for every refused path: no existence or parse oracle
    text = texts.pop()
    assert "passwd" not in text
    assert str(root) not in text and str(tmp_path) not in text   # no server path echoed
    assert "src/" in text   # the root by its folder name


def test_errors_never_show_the_servers_paths(tmp_path: Path) -> None:
    from argusdb.agent.server import _redact, _redactions

    home = os.path.expanduser("~")
    store = tmp_path / "data" / "s.duckdb"
    rules = _redactions(str(store), [str(tmp_path / "kernels")])
    doc = {"ok": False, "errors": [{"message": f"{store}: locked; see {home}/.cache/x and "
                                               f"{tmp_path / 'kernels'}/a.py"}]}
    text = json.dumps(_redact(doc, rules))
    assert str(tmp_path) not in text and (home == "/" or home not in text), text
    assert "<store folder>/s.duckdb" in text and "<source root kernels>/a.py" in text


async def _long_lived(store: str, n: int) -> dict[str, Any]:
    sample: dict[str, Any] = {}
    calls = [("query", {"sql": "SELECT count(*) AS n FROM run"}),
             ("check", {"sql": "SELECT median(value) FROM evidence"}),
             ("explain", {"sql": "SELECT count(*) FROM evidence WHERE region_id = "
                                 "'softmax/softmax_fwd'"}),
             ("query", {"sql": "SELECT * FROM range(30000000)", "max_rows": 50}),
             ("report", {"region": "softmax/softmax_fwd"}),
             ("query", {"sql": "SELECT nextval('run_seq_gen') AS n"})]
    async with stdio_client(_params(store), errlog=open(os.devnull, "w")) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        pid = _server_pid(store)
        t0 = time.monotonic()
        for i in range(n):
            tool, args = calls[i % len(calls)]
            await session.call_tool(tool, args)
            if i + 1 in (200, n):
                sample[i + 1] = _status(pid)
        sample["seconds"] = time.monotonic() - t0
        # Idle: the worker lets go of the store, so a writer gets in while the server runs.
        time.sleep(3)
        with argusdb.connect(store) as db:
            sample["writer"] = db.store.read_only is False
    return sample


@pytest.mark.slow
def test_long_lived_server_keeps_threads_and_memory_flat(hostile_store: str) -> None:
    n = 2000
    s = anyio.run(_long_lived, hostile_store, n)
    (t200, rss200), (tn, rssn) = s[200], s[n]
    print(f"\n{n} MCP calls in {s['seconds']:.1f} s; server threads {t200} -> {tn}, "
          f"RSS {rss200 / 1024:.1f} -> {rssn / 1024:.1f} MiB")
    assert tn <= t200
    assert rssn - rss200 < 16 * 1024  # KiB
    assert s["writer"]
