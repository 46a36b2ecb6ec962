"""What check.py, bench.py and the tests share: shapes, inputs, the reference, the comparison."""
import datetime
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent
GROUP_SIZE = 128
OUTPUT_NAMES = ("grad_input_q", "grad_input_s", "y_q_t", "y_s_t")
# The judge's tolerances (torch.testing semantics: |a - e| <= atol + rtol * |e|).
SCALE_TOL = {"atol": 1e-4, "rtol": 1e-5}
DEQUANT_TOL = {"atol": 0.25, "rtol": 0.25}
POISON_Q = -128  # no int8 the quantizer can produce (it clamps to +-127)
FAMILIES = ("randn", "zeros", "large", "tiny", "heavy")


def use_interpreter_if_no_gpu():
    """Without a GPU, Triton kernels can only run under the interpreter; set it before triton is imported."""
    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
        return "cpu"
    return "cuda"


def load_solution(path, name=None):
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no solution file at {path}")
    name = name or f"solution_under_test_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "silu_dot_fwd_bwd_quant_fuse", None)
    if not callable(fn):
        raise AttributeError(f"{path} defines no function silu_dot_fwd_bwd_quant_fuse")
    return fn


def reference_fn():
    return load_solution(ROOT / "reference.py", name="reference_for_harness")


def min_bytes(M, H):
    """Each input read once, each output written once."""
    return 2 * M * 2 * H + 2 * M * H + M * 2 * H + 4 * M * (2 * H // GROUP_SIZE) + H * M + 4 * H * (M // GROUP_SIZE)


# ---------------------------------------------------------------- shapes

def load_shapes(group):
    """group: 'benchmark', 'hidden_like', 'cpu_small', 'MxH', or a benchmark label 'ExTxH' (M = E*T).
    Returns [(label, M, H)]."""
    parts = group.split("x")
    if len(parts) in (2, 3) and all(p.isdigit() for p in parts):
        *m_factors, H = (int(p) for p in parts)
        return [(group, m_factors[0] * (m_factors[1] if len(m_factors) == 2 else 1), H)]
    spec = json.loads((ROOT / "shapes.json").read_text())
    if group not in spec or group.startswith("_"):
        names = [k for k in spec if not k.startswith("_")]
        raise ValueError(f"unknown shape group {group!r}; expected one of {names}, MxH like 1024x2560 "
                         f"or ExTxH like 8x128x2560")
    shapes = []
    for s in spec[group]:
        if "num_experts" in s:
            M = s["num_experts"] * s["tokens_per_expert"]
            label = f"{s['num_experts']}x{s['tokens_per_expert']}x{s['H']}"
        else:
            M = s["M"]
            label = f"{M}x{s['H']}"
        shapes.append((label, M, s["H"]))
    return shapes


def expand_shape_args(args_shapes, default_groups):
    shapes = []
    for group in (args_shapes or default_groups):
        for shape in load_shapes(group):
            if shape not in shapes:
                shapes.append(shape)
    return shapes


# ---------------------------------------------------------------- inputs and outputs

def _powers_of_two(z):
    """2**round(1.5*z), clamped to 2**-8..2**8, built from the exponent bits so it is exact."""
    k = torch.round(1.5 * z).clamp_(-8, 8).to(torch.int32)
    return ((k + 127) << 23).view(torch.float32)


def make_inputs(M, H, seed, family="randn", device="cpu"):
    """Seeded bf16 inputs (x [M, 2H], grad_y [M, H]) of one family."""
    if family not in FAMILIES:
        raise ValueError(f"unknown input family {family!r}; expected one of {FAMILIES}")
    gen = torch.Generator(device=device)
    gen.manual_seed(seed * 1_000_003 + FAMILIES.index(family) * 7919 + M * 31 + H)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    x, gy = randn(M, 2 * H), randn(M, H)
    if family == "zeros":
        gy[: min(8, M)] = 0.0                  # whole grad_input rows: every group zero
        x[:, :GROUP_SIZE] = 0.0                # gate = 0 on channels 0..127
        x[:, H:H + GROUP_SIZE] = 0.0           # up = 0 there: y and d_up groups zero
        x[-GROUP_SIZE:, H - GROUP_SIZE:H] = 0.0  # one more zero y group (gate only)
    elif family == "large":
        x, gy = x * 64.0, gy * 16.0            # exp overflow/underflow, int8 at full range
    elif family == "tiny":
        x, gy = x * 2.0**-10, gy * 2.0**-10     # grad scales hit the 1e-10 floor
    elif family == "heavy":
        # Log-normal-like spread by exact powers of two. torch.exp on the CPU
        # (MKL VML / SLEEF) is not bit-reproducible from call to call, which
        # made the "same seed, same inputs" guarantee fail on CI once.
        x = x * _powers_of_two(randn(M, 2 * H))
        gy = gy * _powers_of_two(randn(M, H))
    return x.to(torch.bfloat16), gy.to(torch.bfloat16)


def new_outputs(M, H, device="cpu"):
    """Output buffers filled with poison, so anything left unwritten shows."""
    return (
        torch.full((M, 2 * H), POISON_Q, dtype=torch.int8, device=device),
        torch.full((M, 2 * H // GROUP_SIZE), float("nan"), dtype=torch.float32, device=device),
        torch.full((H, M), POISON_Q, dtype=torch.int8, device=device),
        torch.full((H, M // GROUP_SIZE), float("nan"), dtype=torch.float32, device=device),
    )


def poison_(outputs):
    outputs[0].fill_(POISON_Q)
    outputs[1].fill_(float("nan"))
    outputs[2].fill_(POISON_Q)
    outputs[3].fill_(float("nan"))


def run_reference(x, grad_y, reference=None):
    reference = reference or reference_fn()
    M, H = x.shape[0], x.shape[1] // 2
    outputs = new_outputs(M, H, x.device)
    reference(x, grad_y, *outputs)
    return outputs


# ---------------------------------------------------------------- comparison

def unwritten(outputs):
    """Elements still holding the poison: int8 -128 or NaN scales."""
    return {
        "grad_input_q": int((outputs[0] == POISON_Q).sum()),
        "grad_input_s": int(torch.isnan(outputs[1]).sum()),
        "y_q_t": int((outputs[2] == POISON_Q).sum()),
        "y_s_t": int(torch.isnan(outputs[3]).sum()),
    }


def differing_bytes(actual, expected):
    """Bytes that differ between two tensors of one shape and dtype."""
    a = actual.contiguous().view(torch.uint8)
    e = expected.contiguous().view(torch.uint8)
    return int((a != e).sum())


def quantize_like_reference(values, absmax):
    """The reference quantizer's arithmetic (reference._quantize_groups) for values whose group absmax is
    given and broadcasts against them: tools/exhaustive_exactness.py feeds it (value, absmax) pairs.
    tests/test_harness.py shows it equal to the reference's own function."""
    scales = torch.clamp(absmax / 127.0, min=1e-10)
    return torch.clamp(values / scales, -127.0, 127.0).to(torch.int8), scales


def dequantize(q, scales):
    return q.float() * scales.repeat_interleave(GROUP_SIZE, dim=1)


def _first_failures(actual, expected, bad, limit=3):
    idx = bad.nonzero()[:limit]
    return [{"index": [int(i) for i in row], "actual": float(actual[tuple(row)]),
             "expected": float(expected[tuple(row)])} for row in idx]


def _judge(name, actual, expected, tol):
    actual, expected = actual.float(), expected.float()
    close = torch.isclose(actual, expected, **tol)
    bad = ~close
    diff = (actual - expected).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    used = diff / (tol["atol"] + tol["rtol"] * expected.abs())
    try:
        torch.testing.assert_close(actual, expected, **tol)
        passed = True
    except AssertionError:
        passed = False
    return {
        "name": name,
        "passed": passed,
        "mismatches": int(bad.sum()),
        "max_abs_err": float(diff.max()) if diff.numel() else 0.0,
        "tol_used": float(used.max()) if used.numel() else 0.0,
        "first_failures": _first_failures(actual, expected, bad) if not passed else [],
    }


def compare(outputs, ref_outputs):
    """The judge's two comparisons per quantized output, plus exactness figures."""
    gq, gs, yq, ys = outputs
    rgq, rgs, ryq, rys = ref_outputs
    checks = [
        _judge("grad_input_s", gs, rgs, SCALE_TOL),
        _judge("y_s_t", ys, rys, SCALE_TOL),
        _judge("grad_input_dequant", dequantize(gq, gs), dequantize(rgq, rgs), DEQUANT_TOL),
        _judge("y_dequant", dequantize(yq, ys), dequantize(ryq, rys), DEQUANT_TOL),
    ]
    return {
        "passed": all(c["passed"] for c in checks),
        "checks": checks,
        "differing_bytes": {n: differing_bytes(a, e) for n, a, e in zip(OUTPUT_NAMES, outputs, ref_outputs)},
        "scale_tol_used": max(checks[0]["tol_used"], checks[1]["tol_used"]),
    }


# ---------------------------------------------------------------- environment for records

def environment(device):
    import triton
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "interpreter": os.environ.get("TRITON_INTERPRET") == "1",
    }
    return env
