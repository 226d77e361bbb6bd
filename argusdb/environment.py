"""Every ``ARGUS_*`` environment variable argusdb reads or sets: its name, who sets it and
what it means, in one place (``docs/environment.md`` is generated from :data:`VARIABLES`).

Three kinds: ``user`` variables a person or a script sets; ``internal`` ones that argusdb sets
for the child processes it starts (a launcher's bootstrap, a torchrun rank), which a person
sets only to run such a process by hand; ``tests`` ones that the test suite and ``.ci/run``
read. Code reads a variable as ``environment.REPLAY.get()`` and names it to a child as
``{environment.DIST_OUT.name: folder}``, never by a string of its own (a test greps for one).
The one exception is the launcher's bootstrap (``argusdb/observe/launch/boot``), which
checks ``ARGUS_LAUNCH_SPEC`` before it imports anything of argusdb: it runs in every process
of the user's command.

Example:
    >>> LOCK_TIMEOUT.get({"ARGUS_LOCK_TIMEOUT": "5"})
    '5'
    >>> STEP_MARK.get({}) is None
    True
    >>> sorted({v.kind for v in VARIABLES})
    ['internal', 'tests', 'user']
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    """One environment variable."""

    #: The variable's name, ``ARGUS_...``.
    name: str
    #: ``user``, ``internal`` (parent to child process) or ``tests``.
    kind: str
    #: What it means, with its unit and what happens when it is unset.
    meaning: str

    def get(self, env: Mapping[str, str] | None = None) -> str | None:
        """The value in ``env`` (default: this process's environment), None when unset."""
        return (os.environ if env is None else env).get(self.name)


STORE = Variable("ARGUS_STORE", "user",
                 "The store a command that takes STORE first uses when STORE is left out.")
LOCK_TIMEOUT = Variable("ARGUS_LOCK_TIMEOUT", "user",
                        "Seconds a writer waits for another process's lock on a store (an "
                        "embedded file's or a shared store's writers' lock); unset: 120.")
CACHE_DIR = Variable("ARGUS_CACHE_DIR", "user",
                     "Folder of checks kept across processes (read-only questions); 'off' or "
                     "empty: none kept; unset: the user's cache folder.")
INGEST_WORKERS = Variable("ARGUS_INGEST_WORKERS", "user",
                          "Worker processes that parse small files of one 'argus ingest' "
                          "(0 or 1: parse in place); unset: decided from the idle cores.")
REPLAY = Variable("ARGUS_REPLAY", "user",
                  "Folder of recorded task bundles that 'argus observe' answers collections "
                  "from, on a machine without a GPU.")
DIST_REPLAY = Variable("ARGUS_DIST_REPLAY", "user",
                       "Folder of recorded torchrun launches (one folder per mode) that a "
                       "torchrun observation is answered from instead of launching.")
DIST_TIMEOUT_S = Variable("ARGUS_DIST_TIMEOUT_S", "user",
                          "Seconds one torchrun launch of an observation may run before it is "
                          "stopped with its ranks; unset: the plan's limit.")
GPU_SITE = Variable("ARGUS_GPU_SITE", "user",
                    "A folder put first on the GPU workers' and the launched command's "
                    "PYTHONPATH (where cupti-python is installed apart from the environment).")
LIBCUPTI = Variable("ARGUS_LIBCUPTI", "user",
                    "A libcupti.so the profiler_host passes load before the ones found beside "
                    "cupti-python and CUDA.")
STEP_MARK = Variable("ARGUS_STEP_MARK", "user",
                     "Name of the profiler ranges (torch.profiler.record_function) that mark "
                     "one training step in a distributed recording; unset: 'step'.")
DIST_MODE = Variable("ARGUS_DIST_MODE", "internal",
                     "What a torchrun rank records (events, forced, cupti, profiler; see "
                     "argusdb.observe.launch.recorder); unset: events. Set per launch by "
                     "'argus observe' for torchrun, or by hand for 'argus launch'.")
DIST_OUT = Variable("ARGUS_DIST_OUT", "internal",
                    "Folder a torchrun rank writes its records to; unset: the working folder.")
DIST_STEM = Variable("ARGUS_DIST_STEM", "internal",
                     "File-name stem of a rank's records; unset: the program's stem.")
LAUNCH_GROUP = Variable("ARGUS_LAUNCH_GROUP", "internal",
                        "The launch group every rank of one launch records (what 'argus "
                        "ingest --launch-group' joins on); unset: torchrun's run id.")
LAUNCH_SPEC = Variable("ARGUS_LAUNCH_SPEC", "internal",
                       "The spec file (JSON) the launcher's bootstrap reads in every process "
                       "of an observed command: the kernel, the mode, the output folder.")
TEST_PG = Variable("ARGUS_TEST_PG", "tests",
                   "libpq connection string of the PostgreSQL server the shared-store tests "
                   "use ('.ci/postgres start DIR' prints one); unset: a local default, and "
                   "those tests skip when no server answers.")
REQUIRE_PG = Variable("ARGUS_REQUIRE_PG", "tests",
                      "1: the shared-store tests fail, not skip, when ARGUS_TEST_PG does not "
                      "answer (CI sets it).")
TRACE_PROCESSOR = Variable("ARGUS_TRACE_PROCESSOR", "tests",
                           "Perfetto's trace_processor_shell, to load exported traces in the "
                           "export tests; unset: that test is skipped.")
CONCURRENCY_RUNS = Variable("ARGUS_CONCURRENCY_RUNS", "tests",
                            "Distinct recordings each writer of the concurrency tests ingests; "
                            "unset: 2.")
CONCURRENCY_BOUND_S = Variable("ARGUS_CONCURRENCY_BOUND_S", "tests",
                               "Seconds the concurrency tests allow their writers; unset: 900.")
KILLS = Variable("ARGUS_KILLS", "tests",
                 "How many shared-store ingests the kill test stops with SIGKILL; unset: 3.")
WRITE_GOLDEN = Variable("ARGUS_WRITE_GOLDEN", "tests",
                        "1: the golden-output tests (tests/answers/test_golden.py) write their "
                        "golden files anew instead of comparing, after a deliberate change of an "
                        "answer's text; unset: they compare.")

#: Every variable, in the order of the generated page.
VARIABLES: tuple[Variable, ...] = (
    STORE, LOCK_TIMEOUT, CACHE_DIR, INGEST_WORKERS, REPLAY, DIST_REPLAY, DIST_TIMEOUT_S,
    GPU_SITE, LIBCUPTI, STEP_MARK, DIST_MODE, DIST_OUT, DIST_STEM, LAUNCH_GROUP, LAUNCH_SPEC,
    TEST_PG, REQUIRE_PG, TRACE_PROCESSOR, CONCURRENCY_RUNS, CONCURRENCY_BOUND_S, KILLS,
    WRITE_GOLDEN)
