"""tools/research/movers.py prices each part of the solution's data movement by leaving it out. Each ablation must
leave out what its name says and keep the rest, or its price is wrong: checked in what it compiles to for
sm_90 (no GPU needed)."""
import json
import os
import subprocess
import sys

import harness

# What each ablation keeps, in the compiled mover: tt.store sites (grad_input_q gate and up, the y slot
# or y_q_t, the read-back's y_q_t), inline scale stores, group max reductions, slot discards, and
# layout changes (y transposed on its way to the slot or to y_q_t).
EXPECTED = {
    "full": dict(stores=4, scale_stores=3, reductions=3, discards=1, layout_changes=1),
    "no discard": dict(stores=4, scale_stores=3, reductions=3, discards=0, layout_changes=1),
    "no scale stores": dict(stores=4, scale_stores=0, reductions=3, discards=1, layout_changes=1),
    "no scale stores, no reductions": dict(stores=4, scale_stores=0, reductions=0, discards=1, layout_changes=1),
    "y_q_t from each slice, no slot": dict(stores=3, scale_stores=2, reductions=2, discards=0, layout_changes=1),
    "y_q_t from each slice, no slot, no scales": dict(stores=3, scale_stores=0, reductions=2, discards=0,
                                                      layout_changes=1),
    "y_q_t from each slice untransposed, no slot, no scales": dict(stores=3, scale_stores=0, reductions=2,
                                                                   discards=0, layout_changes=0),
    "grad_input only, with scales": dict(stores=2, scale_stores=2, reductions=2, discards=0, layout_changes=0),
    "grad_input only, no scales": dict(stores=2, scale_stores=0, reductions=0, discards=0, layout_changes=0),
}


def test_each_ablation_leaves_out_what_its_name_says():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiling, not interpreting
    proc = subprocess.run([sys.executable, str(harness.ROOT / "tools" / "research" / "movers.py"), "--compiled-counts"],
                          capture_output=True, text=True, cwd=harness.ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == EXPECTED
