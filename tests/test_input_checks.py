"""Arguments the shape, dtype and stride checks let through: outputs that share memory with an input or with each
other, and CPU tensors outside the interpreter. Each is one line of ValueError before any kernel runs."""
import os
import subprocess
import sys
import timeit

import pytest
import torch

import harness
import solution

M = H = 128  # grad_input_q (M x 2H) is twice the size of y_q_t (H x M) and of grad_y (M x H)
NAMES = ("x", "grad_y", "grad_input_q", "grad_input_s", "y_q_t", "y_s_t")


def _valid():
    x, gy = harness.make_inputs(M, H, seed=0)
    return [x, gy, *harness.new_outputs(M, H)]


def _with(args, **replaced):
    return [replaced.get(name, t) for name, t in zip(NAMES, args)]


def _on_storage_of(t, offset, shape, dtype):
    """A contiguous tensor on t's storage, `offset` elements of dtype in."""
    return torch.empty(0, dtype=dtype).set_(t.untyped_storage(), offset, shape, (shape[1], 1))


def _one_buffer(args, y_q_t_start):
    """args with grad_input_q and y_q_t on one int8 buffer: grad_input_q first, y_q_t from y_q_t_start on."""
    buffer = torch.zeros(y_q_t_start + H * M, dtype=torch.int8)
    return _with(args, grad_input_q=buffer[:M * 2 * H].view(M, 2 * H), y_q_t=buffer[y_q_t_start:].view(H, M))


def _interleaved(args):
    """grad_input_q and y_q_t as the left and right columns of one buffer: no element shared, the spans are."""
    buffer = torch.zeros(M, 2 * H + M, dtype=torch.int8)
    return _with(args, grad_input_q=buffer[:, :2 * H], y_q_t=buffer[:, 2 * H:])


# case: (the arguments made of valid ones, the output named, the tensor it shares memory with)
OVERLAPS = {
    "grad_input_q a view of x": (lambda a: _with(a, grad_input_q=a[0].view(torch.int8)[:, :2 * H]),
                                 "grad_input_q", "x"),
    "y_q_t a view of grad_y": (lambda a: _with(a, y_q_t=a[1].view(torch.int8)[:, :M]), "y_q_t", "grad_y"),
    "y_s_t a slice of grad_input_s": (lambda a: _with(a, y_s_t=a[3][:, 1:]), "y_s_t", "grad_input_s"),
    "y_q_t on grad_y's storage at an odd offset": (
        lambda a: _with(a, y_q_t=_on_storage_of(a[1], 4097, (H, M), torch.int8)), "y_q_t", "grad_y"),
    "grad_input_s as_strided into x": (
        lambda a: _with(a, grad_input_s=a[0].view(torch.float32).as_strided((M, 2), (2, 1), 300)),
        "grad_input_s", "x"),
    "y_q_t inside grad_input_q": (lambda a: _with(a, y_q_t=a[2][:, :M]), "y_q_t", "grad_input_q"),
    "y_q_t from grad_input_q's last byte": (lambda a: _one_buffer(a, M * 2 * H - 1), "y_q_t", "grad_input_q"),
    # Rows that only interleave share no element, but their spans meet: refused, as the message says.
    "interleaved rows": (_interleaved, "y_q_t", "grad_input_q"),
}


@pytest.mark.parametrize("case", sorted(OVERLAPS))
def test_an_output_sharing_memory_is_one_line_naming_both_and_nothing_is_written(case):
    make, output, other = OVERLAPS[case]
    args = make(_valid())
    before = [t.clone() for t in args]
    with pytest.raises(ValueError) as raised:
        solution.silu_dot_fwd_bwd_quant_fuse(*args)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{output} shares memory with {other}: every output must have memory of its own, "
                              "shared with no input and no other output"), message
    assert "the gaps between strided rows included" in message
    assert all(torch.equal(t.view(torch.int8), b.view(torch.int8)) for t, b in zip(args, before))


def test_outputs_apart_are_accepted_even_byte_to_byte_and_inputs_may_share():
    args = _one_buffer(_valid(), M * 2 * H)  # y_q_t starts on the byte after grad_input_q's last
    assert solution._check_inputs(*args, 128)[:2] == (M, H)
    args[1] = args[0][:, H:]  # grad_y is x's up half: both are only read
    assert solution._check_inputs(*args, 128)[:2] == (M, H)
    assert solution._check_inputs(*_valid(), 128)[:2] == (M, H)


def test_inputs_that_share_memory_give_the_bytes_of_separate_ones():
    x, _ = harness.make_inputs(M, H, seed=3)
    gy = x[:, :H]  # grad_y is the gate half of x
    expected = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy.clone(), *expected)
    out = harness.new_outputs(M, H)
    solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out)
    assert [harness.differing_bytes(o, e) for o, e in zip(out, expected)] == [0, 0, 0, 0]


def test_the_argument_checks_cost_microseconds():
    args = _valid()
    per_call = min(timeit.repeat(lambda: solution._check_inputs(*args, 128), number=200, repeat=5)) / 200
    assert per_call < 1e-3, per_call  # loose for a shared CI machine: measured at 10-15 microseconds


_CPU_WITHOUT_INTERPRETER = """
import warnings
warnings.simplefilter("always")
import harness, solution
x, gy = harness.make_inputs(128, 128, seed=0)
out = harness.new_outputs(128, 128)
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    for call in (lambda: solution.silu_dot_fwd_bwd_quant_fuse(x, gy, *out), lambda: solution.route_for("cpu")):
        try:
            call()
            print("no error")
        except ValueError as exc:
            print(f"ValueError: {exc}")
print("warnings:", [str(w.message) for w in said if issubclass(w.category, RuntimeWarning)])
print("unwritten:", all(n == t.numel() for n, t in zip(harness.unwritten(out).values(), out)))
"""


def test_cpu_tensors_without_the_interpreter_are_one_line_that_says_to_set_it():
    """The module reads TRITON_INTERPRET at import: a process of its own, without it."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _CPU_WITHOUT_INTERPRETER], capture_output=True, text=True,
                          cwd=harness.ROOT, env=env, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 4, (proc.stdout, proc.stderr[-2000:])
    expected = ("ValueError: the tensors are on the CPU, where Triton runs kernels only in its interpreter: set "
                "TRITON_INTERPRET=1 before triton is imported, or move the tensors to a GPU")
    assert lines[:2] == [expected, expected]  # the call, and route_for("cpu")
    assert lines[2:] == ["warnings: []", "unwritten: True"]
    assert "active drivers" not in proc.stderr
