"""tools/research/dram_bytes.py reads DRAM bytes and instructions per call from Nsight Compute's CSV: each call's kernels summed, in
launch order, thousands separators read, the units row skipped, and a profile that lists other kernels than the calls
launched refused. The profile itself needs a GPU; its parsing is checked here on a profile's text."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import harness

spec = importlib.util.spec_from_file_location("dram_bytes", harness.ROOT / "tools" / "research" / "dram_bytes.py")
dram_bytes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dram_bytes)

HEADER = ('"ID","Process ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum",'
          '"smsp__inst_executed.sum"')
UNITS = '"","","","byte","byte","nsecond","inst"'


def _manifest(shape, route, kernels):
    return "MANIFEST " + json.dumps({"shape": shape, "route": route, "solution": "s.py", "label": route,
                                     "kernels": kernels, "triton": "3.1.0", "elements": 8192 * 4096})


def _row(i, name, read, written, ns, inst="1,048,576"):
    return f'"{i}","1","{name}","{read}","{written}","{ns}","{inst}"'


def test_each_calls_kernels_are_summed_in_launch_order():
    stdout = "\n".join([
        _manifest("8192x4096", "nvidia", 1), _manifest("8192x4096", "plain", 2),
        "==PROF== some line of ncu's", HEADER, UNITS,
        _row(0, "_silu_mul_quant_kernel", "201,545,472", "78,300,000", "138,600"),
        _row(1, "_grad_rows_kernel", "200,000,000", "70,000,000", "100,000"),
        _row(2, "_y_columns_kernel", "135,600,000", "12,700,000", "121,600", "74,448,896")])
    first, second = dram_bytes.records_from(stdout)
    assert (first["route"], first["read_mb"], first["written_mb"], first["kernel_us"]) == ("nvidia", 201.55, 78.3,
                                                                                           138.6)
    assert (second["route"], second["read_mb"], second["written_mb"], second["kernel_us"]) == ("plain", 335.6,
                                                                                               82.7, 221.6)
    assert second["kernel_names"] == ["_grad_rows_kernel", "_y_columns_kernel"]
    # warp instructions x 32 over M x H: 1,048,576 -> 1.0; (1,048,576 + 74,448,896) -> 72.0
    assert (first["inst_per_element"], second["inst_per_element"], first["triton"]) == (1.0, 72.0, "3.1.0")


def test_a_profile_with_other_kernels_than_the_calls_is_refused():
    stdout = "\n".join([_manifest("8192x4096", "plain", 2), HEADER, UNITS, _row(0, "_grad_rows_kernel", "1", "1", "1")])
    with pytest.raises(ValueError, match="lists 1 kernels, the calls launched 2"):
        dram_bytes.records_from(stdout)


@pytest.mark.parametrize("variants", ['[{"route": "nvidia", "num_warp": 4}]', '[{"num_warps": 4}]', '[{route',
                                      '[{"route": "nvidia", "num_warps": 4}]', '["nvidia"]', '{"route": "nvidia"}',
                                      '[{"route": "nvidia", "num_warps": "4", "chunk": 32, "y_chunk": 64}]'])
def test_a_mistaken_variant_is_one_line_and_exit_code_2(variants):
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "research" / "dram_bytes.py"), "--variants",
                           variants], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("dram_bytes.py: error: --variants")


def test_a_machine_without_ncu_is_one_line_and_exit_code_1(tmp_path):
    env = {**os.environ, "NCU": str(tmp_path / "no-ncu")}
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "research" / "dram_bytes.py"), "--variants",
                           '[{"route": "nvidia"}]'], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("dram_bytes.py: cannot run Nsight Compute")
