"""AR13 device.mixed: do not combine evidence measured on different devices as one."""

from __future__ import annotations

from argusdb.checker.context import Combination
from argusdb.checker.rules import MixingRule


class DeviceMixed(MixingRule):
    """Aggregates, windows and joins must not put together values measured on different
    devices (``run.device``: an H200 and an A100, two models of one family) unless a key
    keeps them apart (``device``, ``device_info`` or ``run_id``: a run is on one device).
    A median over two GPUs describes neither; a ratio across devices is a comparison and
    must say so by keying on the device. Runs whose device is not recorded are not counted
    as a device of their own.

    Anti-pattern::

        SELECT median(e.value) FROM evidence e
        WHERE e.signal = 'duration' AND e.region_id = 'softmax/softmax_fwd'
        -- runs on an H200 and an A100

    Best practice::

        SELECT r.device, median(e.value) FROM evidence e JOIN run r USING (run_id)
        WHERE e.signal = 'duration' AND e.region_id = 'softmax/softmax_fwd'
        GROUP BY r.device, e.program_version
    """

    code = "AR13"
    name = "device.mixed"
    properties = (("device", "devices", "devices"),)

    def explain(self, prop: str, c: Combination, values: list[str]) -> tuple[str, str]:
        return (f"{c.what()} combines evidence measured on {len(values)} devices "
                f"({', '.join(values[:4])}) as if from one",
                "group or join by device (JOIN run r USING (run_id) ... GROUP BY r.device) or "
                "by run_id, or filter one device (WHERE r.device = '...')")
