"""shardsim: predict how a Transformer training or inference step runs on a cluster.

A thin face on shardsim's application library, the same one the ``shardsim``
command calls: results are the dicts the command prints with ``--json``.

    import shardsim
    r = shardsim.simulate("examples/llama3-8b-h100x64.json", {"plan.tp": 2, "plan.dp": 32})
    r["step_time_s"], r["mfu"], r["memory"]["fits"]
    rows = shardsim.sweep("examples/llama3-70b-h100x64.json", {"plan.tp": [1, 2, 4, 8], "plan.pp": [1, 2, 4]})
    pandas.DataFrame(rows)

A scenario is a path (str or os.PathLike) or a dict with the scenario file's
content (docs/scenario.md). Overrides are a dict of dotted paths to values,
``{"plan.tp": 4, "cluster": "dgx-h100-superpod"}``, as ``--set`` takes them.
Bad input raises ``ScenarioError`` (a ValueError whose ``file`` and ``path``
name the file and the JSON path) or ``ValueError``, with the CLI's message.
The library releases the GIL while it works.
"""

import itertools
import json
import os

from . import _shardsim

ScenarioError = _shardsim.ScenarioError
__version__ = _shardsim.__version__

__all__ = [
    "ScenarioError",
    "simulate",
    "trace",
    "serve",
    "search",
    "collective",
    "sweep",
    "whatif",
    "export_chakra",
    "report",
    "topology",
    "validate",
    "compare",
    "evidence",
    "presets",
    "preset",
]


def _scenario(scenario):
    """(text or path, is_path) of a scenario given as a path or a dict."""
    if isinstance(scenario, (str, os.PathLike)):
        return os.fspath(scenario), True
    if isinstance(scenario, dict):
        return json.dumps(scenario), False
    raise TypeError("scenario: expected a path or a dict, got " + type(scenario).__name__)


def _overrides(overrides):
    """[(path, JSON text)] of a dict of dotted paths to values."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        raise TypeError("overrides: expected a dict of dotted paths to values, got " + type(overrides).__name__)
    out = []
    for path, value in overrides.items():
        if not isinstance(path, str) or not path:
            raise TypeError("overrides: keys are dotted paths such as 'plan.tp', got " + repr(path))
        out.append((path, json.dumps(value)))
    return out


def simulate(scenario, overrides=None, *, replica_shortcut="auto", timing=True):
    """Simulates one step; returns the dict of ``shardsim simulate --json``.

    replica_shortcut: "auto" (one data-parallel replica from 2048 devices up,
    or where a replica is one NVSwitch node and that is exact), "on" or "off". timing=False zeroes the wall time (byte-identical results).
    """
    text, is_path = _scenario(scenario)
    return json.loads(_shardsim.simulate(text, is_path, _overrides(overrides), "", [], replica_shortcut, timing))


def trace(scenario, file, overrides=None, *, devices=(0,), replica_shortcut="auto", timing=True):
    """Simulates one step and writes its Chrome trace (Perfetto) to ``file``;
    returns the result dict. ``devices``: the devices whose spans are traced."""
    text, is_path = _scenario(scenario)
    return json.loads(
        _shardsim.simulate(
            text, is_path, _overrides(overrides), os.fspath(file), list(devices), replica_shortcut, timing
        )
    )


def serve(scenario, overrides=None, *, trace=None, timing=True):
    """Serves the scenario's request stream (its "serving" object); returns the
    dict of ``shardsim serve --json``. ``trace``: a Chrome trace file of the
    iterations."""
    text, is_path = _scenario(scenario)
    return json.loads(_shardsim.serve(text, is_path, _overrides(overrides), os.fspath(trace or ""), timing))


def search(
    scenario,
    overrides=None,
    *,
    objective="step_time",
    max_simulations=None,
    jobs=0,
    top=10,
    max_ttft_p99_s=0.0,
    max_tpot_p99_s=0.0,
    timing=True,
):
    """Searches the plans of the scenario's model and cluster; returns the dict
    of ``shardsim search --json`` (training: objective step_time, mfu or cost;
    inference with a serving object: replica layouts by output tokens/s per
    device under the latency limits). jobs=0: every core; max_simulations
    None: the library's default cap (the search stops sooner where it proves
    its best)."""
    text, is_path = _scenario(scenario)
    return json.loads(
        _shardsim.search(
            text,
            is_path,
            _overrides(overrides),
            objective,
            -1 if max_simulations is None else int(max_simulations),
            int(jobs),
            int(top),
            float(max_ttft_p99_s),
            float(max_tpot_p99_s),
            timing,
        )
    )


_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _cluster(x, name, expected):
    """(text, kind) of a cluster given as a preset name or path (kind 0), a
    scenario dict (1) or a cluster dict (2), as the library takes it."""
    if isinstance(x, dict):
        return json.dumps(x), (1 if "plan" in x else 2)
    if isinstance(x, (str, os.PathLike)):
        return os.fspath(x), 0
    raise TypeError(name + ": expected " + expected + ", got " + type(x).__name__)


def _bytes(x):
    if isinstance(x, bool):
        raise TypeError("bytes: expected an integer or a size such as '256MiB'")
    if isinstance(x, int):
        return x
    if isinstance(x, str):
        s = x.strip()
        digits = len(s) - len(s.lstrip("0123456789."))
        num, unit = s[:digits], s[digits:].strip().upper()
        if num and unit in _UNITS:
            return int(float(num) * _UNITS[unit])
    raise ValueError("bytes: expected an integer or a size such as '256MiB' or '1GB', got " + repr(x))


def collective(
    cluster, op, *, bytes=None, sweep=None, factor=2.0, group="all", concurrent=False, overrides=None, nccl_table=False
):
    """Times one collective alone on a fabric (nccl-tests' algbw and busbw);
    returns the dict of ``shardsim collective --json``.

    cluster: a cluster preset name, a scenario or cluster file, or a dict (a
    scenario, or a cluster object). Give ``bytes`` (an int or "256MiB") or
    ``sweep=(min, max)`` with ``factor``. group: "all", "tp", "dp" (a
    scenario's plan) or a device count. nccl_table: also return NCCL's
    tuning table for the group under "nccl_table" (None where the group's
    plan does not come from NCCL's model), as ``--nccl-table``.
    """
    if (bytes is None) == (sweep is None):
        raise ValueError("collective: give bytes=SIZE or sweep=(MIN, MAX)")
    if sweep is not None:
        lo, hi = sweep
        sizes = _shardsim.sweep_sizes(_bytes(lo), _bytes(hi), float(factor))
    else:
        sizes = [_bytes(bytes)]
    text, kind = _cluster(cluster, "cluster", "a preset name, a path or a dict")
    return json.loads(
        _shardsim.collective(
            text,
            kind,
            _overrides(overrides),
            op,
            sizes,
            str(group),
            bool(concurrent),
            sweep is not None,
            bool(nccl_table),
        )
    )


def sweep(scenario, grid, overrides=None, *, jobs=0):
    """Simulates the scenario at every point of ``grid`` (a dict of dotted
    paths to lists of values; the product of the lists, in order) on ``jobs``
    native threads (0: every core). Returns one flat dict per point, in grid
    order whatever ``jobs``: the point's values, step_time_s, mfu, hfu,
    tokens_per_s, model_tflops_per_device, compute_s, exposed_comm_s,
    bubble_s, other_s, peak_bytes_per_device, fits, binding, and error (None,
    or why the point could not be simulated). ``pandas.DataFrame(rows)``
    takes them as they are."""
    text, is_path = _scenario(scenario)
    if not isinstance(grid, dict) or not grid:
        raise TypeError("grid: expected a dict of dotted paths to lists of values")
    keys = list(grid)
    values = []
    for k in keys:
        v = grid[k]
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise TypeError("grid[" + repr(k) + "]: expected a list of values")
        values.append(list(v))
    points = [[(k, json.dumps(x)) for k, x in zip(keys, combo)] for combo in itertools.product(*values)]
    return json.loads(_shardsim.sweep(text, is_path, _overrides(overrides), points, int(jobs)))


def whatif(scenario, overrides=None, *, speedups=None, factor=2.0, jobs=0):
    """How much shorter the step would be with one part of it faster; returns
    the dict of ``shardsim whatif --json``: base_step_time_s, the base
    critical path's time by category, and ``levers`` ranked by the step time
    they save (lever, factor, step_time_s, gain_s, path_share). ``speedups``:
    a dict of levers to factors ({"matmul": 2, "net:nic": 1.5}) tried each
    alone and together; None: every lever of the step at ``factor``. Levers
    are the keys of a scenario's simulator.speedup (docs/analysis.md)."""
    text, is_path = _scenario(scenario)
    pairs = []
    if speedups is not None:
        if not isinstance(speedups, dict):
            raise TypeError("speedups: expected a dict of levers to factors, got " + type(speedups).__name__)
        pairs = [(str(k), float(v)) for k, v in speedups.items()]
    return json.loads(_shardsim.whatif(text, is_path, _overrides(overrides), pairs, float(factor), int(jobs)))


def evidence(scenario, overrides=None, *, record=None):
    """How shardsim did on the published runs most like ``scenario``; returns
    the dict of ``shardsim evidence --json``: the scenario's framework (or
    serving engine), chip and precision, and ``groups`` of the accuracy
    record's rows that share them (then fewer of them), each side of the
    protocol apart, with ``closest``, the level that stands for it.
    ``record``: a record file (``shardsim validate --record``); None: the
    record embedded at build time (docs/validation.md)."""
    text, is_path = _scenario(scenario)
    return json.loads(_shardsim.evidence(text, is_path, _overrides(overrides), os.fspath(record) if record else ""))


def export_chakra(scenario, out, overrides=None, *, prefix="shardsim"):
    """Writes the scenario's step as a Chakra execution trace into the new
    directory ``out``: ``PREFIX.<rank>.et`` for every device,
    comm_groups.json (ASTRA-sim's) and scenario.json, which
    ``simulate(out)`` runs (docs/chakra.md). Returns the dict of
    ``shardsim export chakra --json`` (dir, prefix, ranks, nodes, groups,
    bytes, wall_s). ``simulate`` and the other calls take such a directory,
    or any scenario whose "workload" is a trace, like a scenario file."""
    text, is_path = _scenario(scenario)
    return json.loads(_shardsim.export_chakra(text, is_path, _overrides(overrides), os.fspath(out), str(prefix)))


def report(scenario, out, overrides=None):
    """Writes one self-contained HTML page about the scenario's step to
    ``out`` (how far to trust it, the time breakdown, a timeline, memory, the
    roofline), as ``shardsim report --out``; returns ``out``."""
    text, is_path = _scenario(scenario)
    return _shardsim.report(text, is_path, _overrides(overrides), os.fspath(out))


def topology(fabric, overrides=None, *, dot=None, graphml=None):
    """The graph of a fabric, checked and summarised: returns the dict of
    ``shardsim topology --json`` (devices, switches, one-way links by kind and
    line rate, NVLink domains, the longest route from device 0).

    fabric: a graph file (GraphML or DOT), a cluster preset name, a scenario
    or cluster file, or a dict (a scenario, or a cluster object). dot,
    graphml: paths to write the graph to, as ``--dot`` and ``--graphml``.
    """
    text, kind = _cluster(fabric, "fabric", "a graph file, a preset name, a path or a dict")
    dot = os.fspath(dot) if dot is not None else ""
    graphml = os.fspath(graphml) if graphml is not None else ""
    return json.loads(_shardsim.topology(text, kind, _overrides(overrides), dot, graphml))


def validate(directory, *, split=None, threads=0):
    """Simulates every scenario with published figures under ``directory``
    and compares; returns the dict of ``shardsim validate --json``. split:
    "development", "held_out" or "in_sample" to simulate one side only."""
    return json.loads(_shardsim.validate(os.fspath(directory), split or "", int(threads)))


def _result_text(result, name):
    """(JSON text, name in errors) of a result given as a path or a dict."""
    if isinstance(result, (str, os.PathLike)):
        with open(result, encoding="utf-8") as f:
            return f.read(), os.fspath(result)
    if isinstance(result, dict):
        return json.dumps(result), "<" + name + ">"
    raise TypeError(name + ": expected a path or a dict, got " + type(result).__name__)


def compare(predicted, measured):
    """Predicted against measured: ``predicted`` is what ``simulate`` returns
    (or ``shardsim simulate --json`` wrote), ``measured`` what ``shardsim run
    --json`` wrote (a dict or a path). Returns the dict of ``shardsim compare
    --json``: step times, their error, compute time per op kind."""
    p_text, p_name = _result_text(predicted, "predicted")
    m_text, m_name = _result_text(measured, "measured")
    return json.loads(_shardsim.compare(p_text, p_name, m_text, m_name))


def presets():
    """The preset names by kind: {"chip": [...], "model": [...], "cluster": [...]}."""
    return _shardsim.presets()


def preset(name):
    """A preset's JSON object, as ``shardsim presets show NAME`` prints it."""
    return json.loads(_shardsim.preset(name))
