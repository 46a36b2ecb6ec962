"""Copies of solution.py that put the H100 in another chip's place, for the GPU records.

    python tools/solution_copies.py OUTDIR [--solution PATH]

Writes into OUTDIR:
  portable.py             NVIDIA's ladder replaced by the portable one (native rungs first, each proven by
                          its probe at first use): what Hygon, Iluvatar, MetaX, Moore Threads and T-Head take.
  mthreads_settings.py    portable.py whose NVIDIA entry launches as Moore Threads' does (its warps a
                          program and thread cap), the device still recognised as NVIDIA.
  flushing_division.py    portable.py with the sigmoid table off (as where tl.gather is missing) and the
                          native sigmoid's reciprocal (reciprocal_native) flushed to zero where subnormal, as
                          a backend whose multiply flushes subnormal products would make it (and as Triton
                          3.0-3.5's div.rn.ftz.f32 on NVIDIA did to the unscaled division it once was).
  fault_bf16_truncation.py  portable.py whose native fp32 -> bf16 conversion truncates.
  fault_fma_split.py      portable.py whose every tl.fma is a multiply and an add, each rounded.
  fault_nan_int8.py       portable.py whose native fp32 -> int8 conversion makes NaN -128, not 0.
  fault_sigmoid_ulp.py    portable.py with the sigmoid table off and the native sigmoid's division one ulp
                          off for divisors in (1.5, 1.75).
Each fault copy stands in for a chip whose toolchain has that one flaw: the probe should turn that one
feature IEEE (solution.IEEE_FEATURES) and keep the rest native.
The structural fault copies are solution.py itself (not portable.py) with one fault that no probe sees, in one
kernel family; the witness should leave each rung that runs it, and the next rung that passes give its bytes:
  fault_fused_y_swapped.py      the fused kernel stores y_q_t with adjacent tokens swapped (a misplaced element).
  fault_grad_scale_neighbour.py the exact two-pass grad kernel stores each row's scales at its neighbour's row;
                                its ladders start with their exact two-pass rungs, so that the fault runs.
  fault_y_tail_unwritten.py     the exact two-pass y kernels never write the last token group's scales (an
                                unwritten tail); its ladders too start with their exact two-pass rungs.
  fault_y_not_kept.py           the two-pass grad kernel keeps y in the scratch for every row of a tile but its
                                first (a handoff with a hole: the y kernel quantizes whatever the scratch held);
                                its ladders too start with their exact two-pass rungs.
The copies of faults that values chosen for their known outputs (powers of two, sigmoids of 0 or 1) cannot show,
or that show only under a race:
  fault_slot_barrier_removed.py the fused rungs' slot barrier (_slot_barrier, the helper) is gone: on a GPU a race
                                between a program's warps; the ordering check should leave every fused rung at once.
  fault_fused_barrier_call.py   the fused kernel's own barrier call between parking y and reading it back is gone,
                                the helper intact (the ordering check's kernel keeps it): the witness's runs, inputs
                                out of L2, should differ, and every fused rung be left at once.
  fault_fused_flaky.py          every other JIT launch of the fused kernel writes one byte of y_q_t wrong (a race
                                made deterministic, keyed on a launch count): the witness's runs differ, and every
                                fused rung is left at once. For the interpreter, where every launch is a JIT launch
                                (on a GPU a compiled kernel is launched directly after its first launch).
  fault_ordering_check.py       the ordering check's program 1 expects the next round's values: it reports a
                                violation where there is none, and every rung relying on the ordering is left.
  fault_real_values.py          the fused kernel's grad and y math (not the probe's) scales its sigmoid by 1 + 2**-7
                                for gates in (-3, -1); the witness should leave the fused rungs that run it (the
                                interpreter's generic_per_element, the H100's nvidia) and no other.
  fault_later_tokens.py         the same, only past the first token group (rows from 128 on).
  fault_later_channels.py       the same, only past the first 512 channels.
  fault_later_tiles.py          portable.py whose fused kernel scales y by 1 + 2**-7 for gates in (-3, -1), only in a
                                persistent program's second tile on (the native rung's walk, on a GPU).
  fault_mixed_signs.py          the fused kernel's grad_input math (_grad_rows_quant: every fused rung's) scales d_gate's
                                scale by 1 + 2**-7 in rows whose 128 gates hold both signs, as every row of randn data
                                does: the witness should leave every fused rung (a region whose groups each hold one
                                sign would not show it).
  fault_many_binades.py         the same on d_up's scale, in rows whose gates' exponents span more than 4 binades, as
                                a row of randn data's do (a region whose groups each hold a few neighbouring exponents
                                would not show it).
  fault_mixed_signs_portable.py, fault_many_binades_portable.py  the same two faults in portable.py (the native rungs).
  fault_witness_expectation.py  the witness's expected y is computed 1 + 2**-6 too large: no rung is wrong, and
                                none may be left for it (the arbiter lays the difference at the witness's door).
The copies whose proof reads a record its check kernel never wrote: each proof runs twice where it runs (as when a
shape is proven again, for another specialization or after a rung is left), its check kernel's launches after the
first do not run, and its record is the last one of its size, handed back untouched as a caching allocator hands
back a freed block; the first run's passing record is what the second reads. The proof should not pass on it, but
warn that it cannot judge, and no rung be left:
  fault_witness_record_stale.py   the witness's check kernel and record.
  fault_ordering_record_stale.py  the ordering check's.
Each change is appended to the solution's text or replaces a line of it (once; every tl.fma for
fault_fma_split.py): a change that no longer applies stops the tool with a one-line error rather than
writing a copy that is not what its name says.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PORTABLE = '''

# solution_copies.py: NVIDIA takes the portable ladder.
BACKENDS["nvidia"] = BACKENDS["nvidia"]._replace(routes=BACKENDS["unknown"].routes)
'''
MTHREADS_SETTINGS = '''
# solution_copies.py: NVIDIA launches as Moore Threads does.
BACKENDS["nvidia"] = BACKENDS["nvidia"]._replace(**{field: getattr(BACKENDS["mthreads"], field) for field in (
    "warps", "max_threads", "max_chunk", "max_y_chunk", "options")})
'''
TABLE_OFF = '''
# solution_copies.py: the sigmoid per element, as on a Triton without tl.gather.
_SIGMOID_TABLE = False
'''
FLUSH = '''

@triton.jit
def _flushed(q):
    """What a flushing division makes of a subnormal quotient (solution_copies.py)."""
    return tl.where(tl.abs(q) < 1.1754943508222875e-38, 0.0, q)
'''
NATIVE_DIVISION = ("    return tl.math.div_rn(1.0, tl.fma(e, _TWO_POW_MINUS_24, _TWO_POW_MINUS_24)) * "
                   "_TWO_POW_MINUS_24\n")
SPLIT_FMA = '''

@triton.jit
def _split_fma(a, b, c):
    """fma as a multiply and an add, each rounded (solution_copies.py)."""
    return a * b + c
'''
SIGMOID_LOOKUP = "    sig = sigmoid_lookup(gate, table_ptr, N_ELEM, NO_LIBDEVICE, SIGMOID_TABLE, IEEE, CUDA_ARCH)\n"
FUSED_BARRIER_CALL = "    _slot_barrier()  # every slice's y is in the slot before any thread reads it back\n"
PARKED = "        _park_slice(slot, y, local, tokens)\n"
GRAD_SCALES = "    s_up = group_scale(absmax_up)\n    q_gate = quantize("
# Faults that only a real row's pattern of values shows: (the copy's name, the text inserted before q_gate).
REAL_ROWS = {
    "fault_mixed_signs.py": (
        "    # solution_copies.py: a fault only in rows whose gates hold both signs\n"
        "    s_gate = tl.where((tl.min(gate, 1) < 0.0) & (tl.max(gate, 1) > 0.0), s_gate * 1.0078125, s_gate)\n"),
    "fault_many_binades.py": (
        "    # solution_copies.py: a fault only in rows whose gates span more than 4 binades\n"
        "    binades = (gate.to(tl.int32, bitcast=True) >> 23) & 0xFF\n"
        "    s_up = tl.where(tl.max(binades, 1) - tl.min(binades, 1) > 4, s_up * 1.0078125, s_up)\n"),
}
# name: ([(old text, new text, how many times old must appear (None: at least once))], text appended): each copy
# is portable.py with the native forms' lines edited.
EDITED = {
    "flushing_division.py": (
        [(NATIVE_DIVISION, "    return _flushed(" + NATIVE_DIVISION.strip()[len("return "):] + ")\n", 1)],
        TABLE_OFF + FLUSH),
    "fault_bf16_truncation.py": (
        [("        return v.to(tl.bfloat16).to(tl.float32)\n",
          "        return (v.to(tl.int32, bitcast=True) & -65536).to(tl.float32, bitcast=True)\n", 1),
         ("    if IEEE_BF16 & IEEE:\n        y = bf16_round(y, IEEE)",
          "    if True:  # solution_copies.py: y through the native rounding too\n        y = bf16_round(y, IEEE)", 1)],
        ""),
    "fault_fma_split.py": ([("tl.fma(", "_split_fma(", None)], SPLIT_FMA),
    "fault_nan_int8.py": (
        [("        return q.to(tl.int8)\n", "        return tl.where(_is_nan(q), -128.0, q).to(tl.int8)\n", 1)], ""),
    "fault_later_tiles.py": (
        [(PARKED, "        if pid_m * (H // GROUP) + pid_h != slot_index:  # solution_copies.py: a later tile of a "
                  "persistent walk\n"
                  "            later = (slice_gate.to(tl.float32) > -3.0) & (slice_gate.to(tl.float32) < -1.0)\n"
                  "            y = tl.where(later, (y.to(tl.float32) * 1.0078125).to(tl.bfloat16), y)\n" + PARKED, 1)],
        ""),
    **{name[:-3] + "_portable.py": ([(GRAD_SCALES, GRAD_SCALES.replace("    q_gate", inserted + "    q_gate"), 1)], "")
       for name, inserted in REAL_ROWS.items()},
    "fault_sigmoid_ulp.py": (
        [(NATIVE_DIVISION, "    r = " + NATIVE_DIVISION.strip()[len("return "):] + "\n    return tl.where((e > 0.5) & "
                           "(e < 0.75), (r.to(tl.int32, bitcast=True) + 1).to(tl.float32, bitcast=True), r)\n", 1)],
         TABLE_OFF),
}

TWO_PASS_LADDERS = '''

# solution_copies.py: every backend's ladder starts with its exact two-pass rungs, where the two-pass kernels run.
for _copy_name, _copy_backend in list(BACKENDS.items()):
    _copy_first = tuple(r for r in _copy_backend.routes if ROUTE_TABLE[r].two_pass and ROUTE_TABLE[r].exact)
    BACKENDS[_copy_name] = _copy_backend._replace(
        routes=_copy_first + tuple(r for r in _copy_backend.routes if r not in _copy_first))
'''
FLAKY = '''

# solution_copies.py: every other launch of the fused kernel writes y_q_t[0, 0] wrong (a race, made deterministic).
class _FlakyKernel:
    def __init__(self, kernel):
        self.kernel, self.launches = kernel, 0

    def __getattr__(self, name):
        return getattr(self.kernel, name)

    def __getitem__(self, grid):
        def launched(*args, **kwargs):
            result = self.kernel[grid](*args, **kwargs)
            self.launches += 1
            if self.launches % 2 == 0:
                args[4][0, 0] = 1 - args[4][0, 0]  # y_q_t
            return result
        return launched


_silu_mul_quant_kernel = _FlakyKernel(_silu_mul_quant_kernel)
'''
STALE_RECORDS = '''

# solution_copies.py: a check kernel whose launches after the first do not run, a record buffer handed back untouched,
# and a proof run twice where it runs.
class _FirstLaunchOnly:
    def __init__(self, kernel):
        self.kernel, self.launched = kernel, False

    def __getattr__(self, name):
        return getattr(self.kernel, name)

    def __getitem__(self, grid):
        def launched(*args, **kwargs):
            if not self.launched:
                self.launched = True
                return self.kernel[grid](*args, **kwargs)
        return launched


_HANDED_BACK = {}


def _handed_back(size, device):
    if (size, str(device)) not in _HANDED_BACK:
        _HANDED_BACK[size, str(device)] = torch.empty(size, dtype=torch.int32, device=device)
    return _HANDED_BACK[size, str(device)]


def _twice(verdict_of):
    def proven_twice(*args):
        first = verdict_of(*args)
        return first if first.leave or first.unjudged else verdict_of(*args)
    return proven_twice
'''
Y_SCALES_STORE = "        tl.store(y_s_ptr + channels[:, None] * stride_ys + first_group + groups[None, :], s_y)\n"
# name: ([(old, new, times)], text appended), made from solution.py itself: one structural fault each.
STRUCTURAL = {
    "fault_fused_y_swapped.py": (
        [("(pid_m * GROUP + local)[None, :]", "(pid_m * GROUP + (local ^ 1))[None, :]", 1)], ""),
    "fault_grad_scale_neighbour.py": (
        [("        s_offs = tokens[:, None] * stride_gs + first_group + groups[None, :]\n",
          "        s_offs = tokens[:, None] * stride_gs + first_group + groups[None, :]\n"
          "        if EXACT:  # solution_copies.py: each row's scales at its neighbour's row\n"
          "            s_offs = (tokens ^ 1)[:, None] * stride_gs + first_group + groups[None, :]\n", 1)],
        TWO_PASS_LADDERS),
    "fault_y_tail_unwritten.py": (
        [(Y_SCALES_STORE,
          "        if EXACT:  # solution_copies.py: the last token group's scales are never written\n"
          "            tl.store(y_s_ptr + channels[:, None] * stride_ys + first_group + groups[None, :], s_y,\n"
          "                     mask=first_group + groups[None, :] < M // GROUP - 1)\n"
          "        else:\n    " + Y_SCALES_STORE, 1)],
        TWO_PASS_LADDERS),
    "fault_y_not_kept.py": (
        [("                tl.store(scratch_ptr + tokens[:, None] * H + cols[None, :], y)\n",
          "                tl.store(scratch_ptr + tokens[:, None] * H + cols[None, :], y,  # solution_copies.py: a hole\n"
          "                         mask=(tokens % ROWS != 0)[:, None])\n", 1)],
        TWO_PASS_LADDERS),
    "fault_slot_barrier_removed.py": (
        [("    tl.debug_barrier()\n", "    pass  # solution_copies.py: no barrier\n", 1)], ""),
    "fault_fused_flaky.py": ([], FLAKY),
    "fault_ordering_check.py": (
        [("            expected = _ordering_value(program, r, local[None, :], h[:, None])\n",
          "            expected = _ordering_value(program, r + (program == 1), local[None, :], h[:, None])\n", 1)], ""),
    **{name: ([(SIGMOID_LOOKUP, SIGMOID_LOOKUP + "    # solution_copies.py: a fault only real values show\n"
                                                   "    sig = tl.where((gate > -3.0) & (gate < -1.0)"
                                                   + where + ", sig * 1.0078125, sig)\n", 1)], "")
       for name, where in (("fault_real_values.py", ""), ("fault_later_tokens.py", " & (rows[:, None] >= 128)"),
                           ("fault_later_channels.py", " & (cols[None, :] >= 512)"))},
    **{name: ([(GRAD_SCALES, GRAD_SCALES.replace("    q_gate", inserted + "    q_gate"), 1)], "")
       for name, inserted in REAL_ROWS.items()},
    "fault_fused_barrier_call.py": (
        [(FUSED_BARRIER_CALL, "    pass  # solution_copies.py: no barrier between parking y and reading it back\n",
          1)], ""),
    "fault_witness_record_stale.py": (
        [("torch.empty(check.grid[0] * 16, dtype=torch.int32, device=device.table.device)",
          "_handed_back(check.grid[0] * 16, device.table.device)", 1)],
        STALE_RECORDS + "\n\n_witness_check_kernel = _FirstLaunchOnly(_witness_check_kernel)\n"
                        "_PROOF_RUNS[\"witness\"] = _twice(_PROOF_RUNS[\"witness\"])\n"),
    "fault_ordering_record_stale.py": (
        [("    record = torch.empty(4 * programs, dtype=torch.int32, device=args[0].device)\n",
          "    record = _handed_back(4 * programs, args[0].device)\n", 1)],
        STALE_RECORDS + "\n\n_ordering_check_kernel = _FirstLaunchOnly(_ordering_check_kernel)\n"
                        "_PROOF_RUNS[\"ordering\"] = _twice(_PROOF_RUNS[\"ordering\"])\n"),
    "fault_witness_expectation.py": (
        [("    y = _round_bf16(_round_f32([a * u for a, u in zip(silu, up)]))\n",
          "    y = _round_bf16(_round_f32([a * u * 1.015625 for a, u in zip(silu, up)]))\n", 1)], ""),
}


def replaced_once(text, old, new, what, times=1):
    """text with old replaced by new, old expected `times` times (None: at least once)."""
    found = text.count(old)
    if (found != times) if times is not None else not found:
        expected = "once" if times == 1 else f"{times} times" if times is not None else "at least once"
        sys.exit(f"solution_copies.py: cannot make {what}: expected {old.strip()!r} {expected} in the solution, "
                 f"found it {found} times")
    return text.replace(old, new)


def copies(solution_text):
    """{file name: text} of every copy."""
    portable = solution_text + PORTABLE
    made = {"portable.py": portable, "mthreads_settings.py": portable + MTHREADS_SETTINGS}
    for base, table in ((portable, EDITED), (solution_text, STRUCTURAL)):
        for name, (edits, appended) in table.items():
            text = base
            for old, new, times in edits:
                text = replaced_once(text, old, new, name, times)
            made[name] = text + appended
    return made


def write_copies(description, make):
    """The command line of a tool that writes copies of a solution: OUTDIR [--solution PATH], each copy that
    make(solution text) returns ({file name: text}) written into OUTDIR and its path printed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("outdir")
    parser.add_argument("--solution", default=str(ROOT / "solution.py"))
    args = parser.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in make(Path(args.solution).read_text()).items():
        (out / name).write_text(text)
        print(out / name)


def main():
    write_copies(__doc__.splitlines()[0], copies)


if __name__ == "__main__":
    main()
