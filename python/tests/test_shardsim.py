"""The Python face against the command's: same library, same JSON, same errors."""

import json
import os
import subprocess
import sys
import threading

import pytest

import shardsim

LLAMA8 = "examples/llama3-8b-h100x64.json"
SERVE = "examples/llama3-70b-h100x8-serve.json"


@pytest.fixture(autouse=True)
def at_root(root, monkeypatch):
    monkeypatch.chdir(root)


def test_simulate_equals_the_cli(cli):
    assert shardsim.simulate(LLAMA8, timing=False) == cli("simulate", LLAMA8, "--json", "--no-timing")


def test_simulate_with_overrides_equals_the_cli_with_set(cli):
    got = shardsim.simulate(LLAMA8, {"plan.tp": 2, "plan.dp": 32}, timing=False)
    want = cli("simulate", LLAMA8, "--set", "plan.tp=2", "--set", "plan.dp=32", "--json", "--no-timing")
    assert got == want
    assert got["step_time_s"] > 0


def test_a_dict_scenario_is_the_file_scenario():
    with open(LLAMA8) as f:
        scenario = json.load(f)
    from_dict = shardsim.simulate(scenario, timing=False)
    from_file = shardsim.simulate(LLAMA8, timing=False)
    assert from_dict["scenario"] == "<dict>"
    for key in ("step_time_s", "mfu", "memory", "breakdown", "scenario_hash"):
        assert from_dict[key] == from_file[key]


def test_a_bad_plan_raises_scenario_error_with_file_and_path():
    with pytest.raises(ValueError) as info:
        shardsim.simulate(LLAMA8, {"plan.tp": 3})
    err = info.value
    assert isinstance(err, shardsim.ScenarioError)
    assert err.file == LLAMA8
    assert err.path == "/plan/tp"
    assert str(err).startswith(LLAMA8 + ": error: /plan/tp: ")


def test_the_message_is_the_clis(root):
    exe = os.environ.get("SHARDSIM_CLI") or os.path.join(root, "build", "cli", "shardsim")
    if not os.access(exe, os.X_OK):
        pytest.skip("the shardsim command is not built")
    cli = subprocess.run([exe, "simulate", LLAMA8, "--set", "plan.tp=3"], capture_output=True, text=True)
    assert cli.returncode == 2
    with pytest.raises(shardsim.ScenarioError) as info:
        shardsim.simulate(LLAMA8, {"plan.tp": 3})
    assert cli.stderr.strip() == str(info.value)


def test_bad_arguments_raise():
    with pytest.raises(shardsim.ScenarioError):
        shardsim.simulate("no-such-file.json")
    with pytest.raises(ValueError, match="replica_shortcut"):
        shardsim.simulate(LLAMA8, replica_shortcut="sometimes")
    with pytest.raises(shardsim.ScenarioError) as info:
        shardsim.simulate({"model": "llama3-8b"})
    assert info.value.file == "<dict>"
    with pytest.raises(TypeError):
        shardsim.simulate(42)
    with pytest.raises(TypeError):
        shardsim.simulate(LLAMA8, ["plan.tp", 2])


def test_trace_writes_a_chrome_trace(tmp_path):
    out = tmp_path / "step.json"
    r = shardsim.trace(LLAMA8, out, devices=[0, 1])
    events = json.loads(out.read_text())["traceEvents"]
    assert r["step_time_s"] > 0 and len(events) > 10
    with pytest.raises(ValueError, match="cannot write"):
        shardsim.trace(LLAMA8, tmp_path / "missing-dir" / "t.json")
    with pytest.raises(ValueError, match="trace_devices"):
        shardsim.trace(LLAMA8, out, devices=[64])


def test_serve_equals_the_cli(cli):
    assert shardsim.serve(SERVE, timing=False) == cli("serve", SERVE, "--json", "--no-timing")


def test_serve_speculation_and_prefix_caching_through_overrides():
    # A draft head proposing 3 tokens at acceptance 0.7 makes about (1 - 0.7^4) / 0.3 = 2.53
    # tokens per step; a shared prefix is found in the cache by every request but each group's first.
    spec = shardsim.serve(SERVE, {"serving.requests": 60, "serving.speculative": {"tokens": 3, "acceptance": 0.7}})
    assert spec["speculative"]["draft_tokens"] == 3
    assert abs(spec["speculative"]["tokens_per_step"] - 2.533) < 0.1
    shared = shardsim.serve(
        SERVE, {"serving.requests": 60, "serving.engine": "vllm", "serving.shared_prefix": {"tokens": 1024, "groups": 2}}
    )
    assert shared["prefix_cache"]["enabled"]
    assert 0 < shared["prefix_cache"]["hit_tokens"] <= 58 * 1024


def test_serve_needs_a_serving_object():
    with pytest.raises(shardsim.ScenarioError) as info:
        shardsim.serve("examples/llama3-70b-h100x8-decode.json")
    assert info.value.path == "/serving"


def test_collective_equals_the_cli(cli):
    got = shardsim.collective("dgx-h100-superpod", "all-reduce", sweep=("1MB", "64MB"), group=8)
    want = cli("collective", "dgx-h100-superpod", "--op", "all-reduce", "--sweep", "1MB:64MB", "--group", "8", "--json")
    assert got == want
    # A sweep whose maximum is not a power of the factor: the same sizes as the CLI.
    odd = shardsim.collective("dgx-h100-superpod", "all-gather", sweep=("3KB", "1MB"), factor=3, group=8)
    assert odd == cli(
        "collective", "dgx-h100-superpod", "--op", "all-gather", "--sweep", "3KB:1MB", "--factor", "3", "--group",
        "8", "--json"
    )
    with pytest.raises(ValueError, match="--factor"):
        shardsim.collective("dgx-h100-superpod", "all-gather", sweep=("1KB", "1MB"), factor=1)
    one = shardsim.collective("dgx-h100-superpod", "all-gather", bytes="256MiB", group=8)
    assert one == cli(
        "collective", "dgx-h100-superpod", "--op", "all-gather", "--bytes", "256MiB", "--group", "8", "--json"
    )
    with pytest.raises(ValueError, match="--op"):
        shardsim.collective("dgx-h100-superpod", "all-shuffle", bytes=1024)
    with pytest.raises(ValueError, match="--group"):
        shardsim.collective("dgx-h100-superpod", "all-reduce", bytes=1024, group=3)


def test_collective_nccl_table_equals_the_cli(cli):
    # Four nodes of the SuperPOD with NCCL's multi-node model: its tuning table.
    sets = {"fabric.nccl_across_nodes": True}
    got = shardsim.collective(
        "dgx-h100-superpod", "all-reduce", bytes="64MiB", group=32, overrides=sets, nccl_table=True
    )
    want = cli(
        "collective", "dgx-h100-superpod", "--op", "all-reduce", "--bytes", "64MiB", "--group", "32",
        "--set", "fabric.nccl_across_nodes=true", "--nccl-table", "--json"
    )
    assert got == want
    assert got["nccl_table"]["nodes"] == 4
    entries = {(e["algorithm"], e["protocol"]) for e in got["nccl_table"]["entries"]}
    assert entries >= {("tree", "LL"), ("nvls-tree", "Simple")}
    # Across nodes without it, the plan is not NCCL's: no table.
    assert shardsim.collective("dgx-h100-superpod", "all-reduce", bytes="64MiB", group=32, nccl_table=True)[
        "nccl_table"
    ] is None


def test_collective_on_a_scenario_dict_uses_its_plan():
    with open(LLAMA8) as f:
        scenario = json.load(f)
    r = shardsim.collective(scenario, "all-reduce", bytes=1 << 20, group="tp")
    assert r["group_size"] == scenario["plan"].get("tp", 1)


def test_search_equals_the_cli(cli):
    scenario = "tests/golden/commands/search_two_nodes.scenario.json"
    got = shardsim.search(scenario, max_simulations=8, jobs=2, top=5, timing=False)
    want = cli("search", scenario, "--max-simulations", "8", "--jobs", "1", "--top", "5", "--json", "--no-timing")
    assert got == want
    assert got["ranked"]


def test_sweep_rows_are_flat_ordered_and_deterministic():
    grid = {"plan.tp": [1, 2, 3, 4], "plan.pp": [1, 2]}
    rows = shardsim.sweep(LLAMA8, grid, jobs=2)
    assert [(r["plan.tp"], r["plan.pp"]) for r in rows] == [(t, p) for t in grid["plan.tp"] for p in grid["plan.pp"]]
    assert rows == shardsim.sweep(LLAMA8, grid, jobs=1)
    for r in rows:
        assert all(not isinstance(v, (dict, list)) for v in r.values())
        if r["plan.tp"] == 3:  # 3 divides neither heads nor the cluster
            assert r["error"] and r["step_time_s"] is None
        else:
            assert r["error"] is None and r["step_time_s"] > 0
    # A point equals the same scenario simulated alone (dp fills the cluster).
    alone = shardsim.simulate(LLAMA8, {"plan.tp": 2, "plan.pp": 2, "plan.dp": 16}, timing=False)
    row = next(r for r in rows if r["plan.tp"] == 2 and r["plan.pp"] == 2)
    assert row["step_time_s"] == alone["step_time_s"] and row["mfu"] == alone["mfu"]


def test_sweep_rows_make_a_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(shardsim.sweep(LLAMA8, {"plan.tp": [1, 2]}))
    assert list(df["plan.tp"]) == [1, 2] and df["step_time_s"].notna().all()


def test_simulate_releases_the_gil():
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("r", shardsim.simulate(LLAMA8)))
    ticks = 0
    worker.start()
    while worker.is_alive():
        ticks += 1
    worker.join()
    assert result["r"]["step_time_s"] > 0
    # With the GIL held for the whole simulation the loop above would barely run.
    assert ticks > 1000


def test_presets_and_preset_equal_the_cli(cli):
    names = shardsim.presets()
    assert "h100-sxm" in names["chip"] and "llama3-70b" in names["model"]
    assert shardsim.preset("h100-sxm") == cli("presets", "show", "h100-sxm")
    with pytest.raises(ValueError, match="unknown preset"):
        shardsim.preset("no-such-chip")


def test_validate_equals_the_cli(cli, tmp_path, root):
    folder = tmp_path / "published"
    folder.mkdir()
    for name in ("megatron-t1-gpt-1.7b.json", "megatron-t2-ptdp-384.json"):
        src = os.path.join(root, "examples", "validation", name)
        (folder / name).write_text(open(src).read())
    got = shardsim.validate(folder)
    assert got == cli("validate", str(folder), "--json")
    assert len(got["rows"]) == 2
    with pytest.raises(ValueError, match="not a directory"):
        shardsim.validate(tmp_path / "none")


def test_the_example_sweep_script_draws_its_plots(root, tmp_path):
    script = os.path.join(root, "examples", "python", "sweep_tp_pp.py")
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg")
    subprocess.run(
        [sys.executable, script, "--tp", "4,8", "--pp", "1,2", "--out", str(tmp_path)], check=True, env=env, cwd=root
    )
    for name in ("mfu_heatmap.png", "step_time_vs_memory.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_equals_the_cli(cli):
    pred = "tests/golden/commands/compare_predicted.json"
    meas = "tests/golden/commands/compare_measured.json"
    got = shardsim.compare(pred, meas)
    assert got == cli("compare", pred, meas, "--json")
    with open(pred) as f:
        assert shardsim.compare(json.load(f), meas) == got


def test_compare_names_the_side_that_is_wrong():
    meas = "tests/golden/commands/compare_measured.json"
    with pytest.raises(shardsim.ScenarioError) as info:
        shardsim.compare({"step_time_s": 1.0}, meas)
    assert info.value.file == "<predicted>"
    assert info.value.path == "/critical_device/compute_by_kind_s"


def test_evidence_equals_the_cli(cli):
    got = shardsim.evidence(LLAMA8, {"plan.framework": "megatron-core"})
    assert got == cli("evidence", LLAMA8, "--set", "plan.framework=megatron-core", "--json")
    assert got["closest"] == "framework, chip and precision"
    record = "tests/golden/commands/evidence.record.json"
    small = shardsim.evidence("tests/golden/commands/evidence.scenario.json", record=record)
    assert [g["rows"] for g in small["groups"]][:2] == [2, 1]
    with pytest.raises(shardsim.ScenarioError, match="cannot read the accuracy record"):
        shardsim.evidence(LLAMA8, record="no-such-record.json")


def test_whatif_equals_the_cli_and_ranks_levers(cli):
    r = shardsim.whatif(LLAMA8, speedups={"matmul": 2, "net:nic": 1.5})
    assert r == cli("whatif", LLAMA8, "--speedup", "matmul=2", "--speedup", "net:nic=1.5", "--json")
    gains = [lever["gain_s"] for lever in r["levers"]]
    assert gains == sorted(gains, reverse=True)
    assert r["together"]["step_time_s"] < min(lever["step_time_s"] for lever in r["levers"])
    everything = shardsim.whatif(LLAMA8, factor=1.5, jobs=1)
    assert {"matmul", "attention", "net:nvlink"} <= {lever["lever"] for lever in everything["levers"]}
    assert everything["together"] is None
    with pytest.raises(shardsim.ScenarioError, match="/simulator/speedup/warp"):
        shardsim.whatif(LLAMA8, speedups={"warp": 2})


def test_export_chakra_then_simulate_the_directory(cli, tmp_path):
    # A 2-rank pipeline exported as a Chakra trace simulates as its scenario,
    # from Python and from the command alike; a second export into the same
    # directory is refused.
    scenario = "examples/realexec/tiny-gpt-cpu2-pp2.json"
    out = tmp_path / "trace"
    summary = shardsim.export_chakra(scenario, out)
    assert summary["ranks"] == 2 and summary["nodes"] > 0 and summary["dir"] == str(out)
    assert sorted(p.name for p in out.iterdir()) == ["comm_groups.json", "scenario.json", "shardsim.0.et", "shardsim.1.et"]
    direct = shardsim.simulate(scenario, timing=False)
    back = shardsim.simulate(out, timing=False)
    assert back["step_time_s"] == pytest.approx(direct["step_time_s"], rel=1e-9)
    assert back["memory"]["peak_bytes_per_device"] == direct["memory"]["peak_bytes_per_device"]
    assert back == cli("simulate", str(out), "--json", "--no-timing")
    with pytest.raises(ValueError, match="not an empty directory"):
        shardsim.export_chakra(scenario, out)


def test_topology_equals_the_cli_and_a_graph_file_its_fabric(cli, tmp_path):
    # The preset's built-in fat tree, the same fabric written as GraphML and
    # read back, and the committed example file: one summary (but the name).
    got = shardsim.topology("dgx-h100-64", dot=tmp_path / "f.dot", graphml=tmp_path / "f.graphml")
    assert got == cli("topology", "dgx-h100-64", "--json")
    assert got["devices"] == 64 and got["nvlink_domains"] == 8 and got["largest_domain_devices"] == 8
    assert got["one_way_links"] == sum(c["count"] for c in got["links"])
    assert "fabric {" in (tmp_path / "f.dot").read_text()
    back = shardsim.topology(tmp_path / "f.graphml")
    assert {**back, "fabric": ""} == {**got, "fabric": ""}
    committed = shardsim.topology("examples/fabrics/dgx-h100-64.graphml")
    assert {**committed, "fabric": ""} == {**got, "fabric": ""}


def test_topology_of_a_dict_and_its_errors():
    with open(LLAMA8) as f:
        scenario = json.load(f)
    from_scenario = shardsim.topology(scenario)
    assert from_scenario["fabric"] == "<dict>"
    assert from_scenario["devices"] == 64
    cluster = shardsim.preset("dgx-h100-64")
    assert {**shardsim.topology(cluster), "fabric": ""} == {**from_scenario, "fabric": ""}
    with pytest.raises(shardsim.ScenarioError) as info:
        shardsim.topology({**cluster, "devices": -8})
    assert info.value.path.startswith("/devices")
    with pytest.raises(ValueError, match="no-such-cluster"):
        shardsim.topology("no-such-cluster")
    with pytest.raises(TypeError):
        shardsim.topology(64)


def test_report_writes_the_page(tmp_path):
    out = tmp_path / "step.html"
    assert shardsim.report(LLAMA8, out, {"plan.tp": 2, "plan.dp": 32}) == str(out)
    page = out.read_text()
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert "<title>shardsim report: " in page and " on 64 x h100-sxm" in page
    with pytest.raises(ValueError):
        shardsim.report(LLAMA8, tmp_path / "no-such-dir" / "step.html")
