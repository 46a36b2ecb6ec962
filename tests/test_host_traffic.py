"""check.py's triton_only, on what passes between the host and the device during a call: each way of reading the
call's data to the host and of moving host data into its outputs fails, naming it; what the proofs need passes.

On the meta device, which stands in for a GPU where only the device type is read (a copy to the host is seen before
it fails there: meta tensors hold no data); under the interpreter, where host and device are one, with real launches.
"""
import pickle
import types

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import check
import harness

import re

M, H = 128, 128  # outputs: grad_input_q 128 x 256, grad_input_s 128 x 2, y_q_t 128 x 128, y_s_t 128 x 1


def _call_tensors(device):
    x = torch.empty(M, 2 * H, dtype=torch.bfloat16, device=device)
    grad_y = torch.empty(M, H, dtype=torch.bfloat16, device=device)
    if device == "cpu":
        x, grad_y = harness.make_inputs(M, H, seed=3)
    outputs = tuple(torch.zeros(shape, dtype=dtype, device=device) if device == "cpu" else
                    torch.empty(shape, dtype=dtype, device=device) for shape, dtype in harness.output_shapes(M, H))
    return x, grad_y, outputs


def _watched(device, act):
    """The watch's host problems and compute ops after act(x, grad_y, outputs) in a watched call; an act that raises
    (a copy out of a meta tensor, which holds no data) has been seen first."""
    x, grad_y, outputs = _call_tensors(device)
    with check.watch_compute((x, grad_y), outputs) as watch:
        try:
            act(x, grad_y, outputs)
        except (NotImplementedError, RuntimeError):
            assert device == "meta"
    return watch.host, sorted(set(watch.ops))


# form: (what it does, the problem it must give: its start)
META_FORMS = {
    ".cpu()": (lambda x, gy, out: x.cpu(), "aten::_to_copy read x to the host"),
    ".to('cpu')": (lambda x, gy, out: gy.to("cpu"), "aten::_to_copy read grad_y to the host"),
    ".tolist()": (lambda x, gy, out: x.tolist(), "aten::_to_copy read x to the host"),
    ".item()": (lambda x, gy, out: x[1, 7].item(), "aten::_local_scalar_dense read x to the host"),
    "a view's .cpu()": (lambda x, gy, out: x[:, H:].cpu(), "aten::_to_copy read x to the host"),
    "a copy that keeps the dtype": (lambda x, gy, out: torch.empty(x.shape, dtype=x.dtype).copy_(x),
                                    "aten::copy_ read x to the host"),
    "a copy that changes it": (lambda x, gy, out: x.to("cpu", torch.float32), "aten::_to_copy read x to the host"),
    "a whole output's .cpu()": (lambda x, gy, out: out[3].cpu(), "aten::_to_copy read 128 elements of y_s_t to the "
                                                                "host (an output may be read one element at a time"),
    "out.copy_(host)": (lambda x, gy, out: out[0].copy_(torch.from_numpy(np.ones(out[0].shape, np.int8))),
                        "aten::copy_ copied host data into grad_input_q"),
    "out[...] = host": (lambda x, gy, out: out[1].__setitem__(slice(None), torch.tensor(np.ones(out[1].shape,
                                                                                               np.float32))),
                        "aten::copy_ copied host data into grad_input_s"),
    "x.copy_(host)": (lambda x, gy, out: x.copy_(torch.from_numpy(np.zeros(x.shape, np.int16)).view(torch.bfloat16)),
                      "aten::copy_ copied host data into x"),
    "out.data = ...": (lambda x, gy, out: setattr(out[2], "data", torch.empty_like(out[2])),
                       "y_q_t's memory was replaced during the call"),
}


@pytest.mark.parametrize("form", sorted(META_FORMS))
def test_a_read_to_the_host_or_a_host_write_into_the_call_fails_on_a_device(form):
    act, problem = META_FORMS[form]
    host, ops = _watched("meta", act)
    assert len(host) == 1 and host[0].startswith(problem), host
    # A copy that keeps its dtype computes nothing; one that changes it computes too.
    assert ops == (["aten::_to_copy"] if form == "a copy that changes it" else [])


def _tried(read):
    """A read of a meta tensor, which holds no data: the watch sees it before it fails."""
    try:
        read()
    except (NotImplementedError, RuntimeError):
        pass


def test_what_holds_none_of_the_inputs_may_be_read_back_and_uploads_fill_fresh_tensors_on_a_device():
    def act(x, gy, out):
        _tried(lambda: torch.empty(16, dtype=torch.int32, device="meta").cpu())  # a proof's record
        _tried(lambda: out[0][1:2, 5:6].cpu())  # the arbiter's element
        _tried(lambda: out[1][0, 0].item())
        uploaded = torch.tensor([1.0, 2.0]).to("meta")
        made = torch.tensor([1, 2], device="meta")
        assert watch_of[0].from_host.find(check._footprint(uploaded)) == "host data (aten::_to_copy)"
        assert watch_of[0].from_host.find(check._footprint(made)) == "host data (torch.tensor)"
        assert watch_of[0].from_host.find(check._footprint(out[0])) is None

    x, grad_y, outputs = _call_tensors("meta")
    with check.watch_compute((x, grad_y), outputs) as watch:
        watch_of = [watch]
        act(x, grad_y, outputs)
    assert watch.host == [] and watch.ops == []


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs))


@triton.jit
def _sum_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    """Reads a and b, writes their sum into out: reads an output and writes a fresh tensor, as the witness's check
    kernel does."""
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(a_ptr + offs).to(tl.float32) + tl.load(b_ptr + offs).to(tl.float32))


def _copy(src, dst):
    _copy_kernel[(1,)](src, dst, src.numel())


INTERPRETED_FORMS = {
    ".numpy()": (lambda x, gy, out: x.numpy() if x.dtype != torch.bfloat16 else x.view(torch.int16).numpy(),
                 ".numpy() read x to the host"),
    ".tolist()": (lambda x, gy, out: gy.tolist(), ".tolist() read grad_y to the host"),
    "__array__": (lambda x, gy, out: np.asarray(x.view(torch.int16)), ".__array__() read x to the host"),
    ".item()": (lambda x, gy, out: gy[0, 1].item(), "aten::_local_scalar_dense read grad_y to the host"),
    "dlpack": (lambda x, gy, out: np.from_dlpack(x.view(torch.int16)), ".__dlpack__() read x to the host"),
    "pickle": (lambda x, gy, out: pickle.dumps(gy), ".__reduce_ex__() read grad_y to the host"),
    "through a launch": (lambda x, gy, out: _launder(x).tolist(),
                         ".tolist() read a tensor that _copy_kernel took with x to the host"),
    "an output after a launch handed x": (lambda x, gy, out: (_copy(x.view(torch.int16)[:, :1], out[3]),
                                                              out[3][0, 0].item()),
                                          "aten::_local_scalar_dense read y_s_t (which _copy_kernel took with x) "
                                          "to the host"),
    "out.copy_(host)": (lambda x, gy, out: out[0].copy_(torch.from_numpy(np.ones(out[0].shape, dtype=np.int8))),
                        "aten::copy_ copied host data into grad_input_q"),
    "from_numpy, then a launch": (lambda x, gy, out: _copy(torch.from_numpy(np.ones(128, np.float32)), out[3]),
                                  r"_copy_kernel, handed host data \(torch.from_numpy\), changed 256 bytes of y_s_t"),
    "torch.tensor, then a launch": (lambda x, gy, out: _copy(torch.tensor([1] * 256, dtype=torch.int8), out[0]),
                                    r"_copy_kernel, handed host data \(torch.tensor\), changed 256 bytes of "
                                    "grad_input_q"),
    "frombuffer, then a launch": (lambda x, gy, out: _copy(torch.frombuffer(bytearray(b"\1" * 8), dtype=torch.float32),
                                                           out[1]),
                                  r"_copy_kernel, handed host data \(torch.frombuffer\), changed 8 bytes of "
                                  "grad_input_s"),
    "host data through two launches": (lambda x, gy, out: _copy(_launder(torch.tensor([2.0] * 128)), out[3]),
                                       r"_copy_kernel, handed host data \(torch.tensor\), changed 128 bytes of "
                                       "y_s_t"),
    "x in a nested tuple": (lambda x, gy, out: _nested_copy(x.view(torch.int16)[:1], _fresh_int16()).tolist(),
                            ".tolist() read a tensor that _nested_copy_kernel took with x to the host"),
    "host data in a nested tuple": (lambda x, gy, out: _nested_copy(torch.tensor([7] * 128, dtype=torch.int16),
                                                                   out[3].view(torch.int16)[:1, :128]),
                                    r"_nested_copy_kernel, handed host data \(torch.tensor\), changed \d+ bytes of "
                                    "y_s_t"),
    "a writable view of one output element": (lambda x, gy, out: out[3][0:1, 0:1].numpy(),
                                              ".numpy() handed the host a writable view of y_s_t"),
}


@triton.jit
def _nested_copy_kernel(pair, dst_ptr, N: tl.constexpr):
    """Copies pair[0][0] into dst: its source reaches it inside a tuple of a tuple (Triton 3.3+ takes those)."""
    offs = tl.arange(0, N)
    tl.store(dst_ptr + offs, tl.load(pair[0][0] + offs))


def _nested_copy(src, dst):
    _nested_copy_kernel[(1,)](((src,),), dst, 128)
    return dst


def _fresh_int16():
    return torch.empty(1, 128, dtype=torch.int16)


def _launder(t):
    """A copy of t made by a Triton kernel, in a fresh tensor."""
    fresh = torch.empty(t.shape, dtype=t.dtype)
    _copy(t.view(torch.int16) if t.dtype == torch.bfloat16 else t, fresh.view(torch.int16) if t.dtype ==
          torch.bfloat16 else fresh)
    return fresh


@pytest.mark.parametrize("form", sorted(INTERPRETED_FORMS))
def test_a_read_to_the_host_or_host_data_into_the_outputs_fails_under_the_interpreter(form):
    act, problem = INTERPRETED_FORMS[form]
    host, _ = _watched("cpu", act)
    assert any(p.startswith(problem) or re.fullmatch(problem, p) for p in host), host


def test_the_witness_pattern_passes_under_the_interpreter():
    """An upload (the expectations) handed with the outputs to a kernel that reads them and writes a fresh record, the
    record read back, and one element of an output read before a launch handed x takes it: no problem. The outputs'
    bytes were compared around the launch handed host data, and the record it wrote holds host data."""
    x, grad_y, outputs = _call_tensors("cpu")
    with check.watch_compute((x, grad_y), outputs) as watch:
        expected = torch.tensor([3.0] * 128)
        record = torch.empty(128)
        _sum_kernel[(1,)](outputs[3], expected, record, 128)
        assert record.tolist() == [3.0] * 128
        assert outputs[0][2:3, 9:10].flatten().tolist() == [0]  # the arbiter's element
        _copy_kernel[(1,)](x, outputs[0], 256)  # the call's own kernel, last
    assert watch.host == [] and watch.ops == [] and watch.launches == 2
    assert watch.compared_launches == 1
    assert watch.from_host.find(check._footprint(record)) == "host data (torch.tensor)"


def test_the_watch_follows_addresses_handed_as_integers():
    """A compiled kernel's launcher takes an integer for a pointer: an output and host data handed by their addresses
    are found as if handed as tensors (the output's bytes compared around the launch, a change named), and an output
    handed with x's address is marked as holding the inputs' data."""
    x, grad_y, outputs = _call_tensors("cpu")
    with check.watch_compute((x, grad_y), outputs) as watch:
        host = torch.tensor([1.0] * 4)
        handed = check._launch_arguments((host.data_ptr(), (outputs[3].data_ptr(), M), H), {})
        before = watch.before_launch(handed)
        with watch.own():  # the kernel's write
            outputs[3].fill_(5.0)
        watch.after_launch("a kernel", handed, before)
        handed = check._launch_arguments((x.data_ptr() + 64, outputs[0].data_ptr()), {})
        watch.after_launch("another kernel", handed, watch.before_launch(handed))
    assert watch.compared_launches == 1
    assert watch.host == ["a kernel, handed host data (torch.tensor), changed 256 bytes of y_s_t"], watch.host
    assert watch.from_inputs.find(check._footprint(outputs[0])).startswith("grad_input_q (which another kernel took")


def test_the_watch_counts_a_launcher_called_without_its_runner(monkeypatch):
    """A compiled kernel's launcher called as its runner calls it (solution.py's launch with no hook set): the launch is
    counted, once however nested, and an output handed with x's address is marked; the class is restored after."""
    import triton.runtime

    class StandInLauncher:
        def __call__(self, grid_x, grid_y, grid_z, stream, function, *args):
            pass

    monkeypatch.setenv("TRITON_INTERPRET", "0")  # interpreted, no launcher is watched (none runs)
    monkeypatch.setattr(triton.runtime, "driver", types.SimpleNamespace(
        active=types.SimpleNamespace(launcher_cls=StandInLauncher)))
    call = StandInLauncher.__dict__["__call__"]
    x, grad_y, outputs = _call_tensors("cpu")
    with check.watch_compute((x, grad_y), outputs) as watch:
        StandInLauncher()(1, 1, 1, 7, 9, (0, 0), None, None, None, x.data_ptr(), outputs[0].data_ptr(), M)
    assert watch.launches == 1
    assert watch.from_inputs.find(check._footprint(outputs[0])).startswith("grad_input_q (which a compiled kernel")
    assert StandInLauncher.__dict__["__call__"] is call


def test_the_watch_restores_what_it_wrapped():
    wrapped = ([(torch.Tensor, name) for name in check.HOST_METHODS]
               + [(torch, name) for name in check.HOST_CONSTRUCTORS])
    before = {(owner, name): owner.__dict__.get(name) for owner, name in wrapped}
    with check.watch_compute():
        assert all(owner.__dict__.get(name) is not before[owner, name] for owner, name in wrapped)
    assert {(owner, name): owner.__dict__.get(name) for owner, name in wrapped} == before
