"""How the kit times things on the GPU, in one place: bench.py and the tools under tools/ use it.

Every time is triton.testing.do_bench with the settings below; do_bench clears L2 before every
timed call by writing a buffer of L2_CLEAR_BYTES. Importing this module needs no GPU (triton is
imported inside the functions that time).
"""
import statistics
import time

import torch

WARMUP_MS = 25
REP_MS = 100
RETURN_MODE = "median"
# The buffer triton.testing.do_bench writes before each timed call (its driver's
# get_empty_cache_for_benchmark); the tools that clear L2 themselves use the same size.
L2_CLEAR_BYTES = 256 * 1024 * 1024


def settings_text():
    return f"do_bench warmup={WARMUP_MS} ms rep={REP_MS} ms, {RETURN_MODE}, L2 cleared before each call"


def settings_record():
    return {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "return_mode": RETURN_MODE, "cold_l2": True}


def do_bench(fn):
    """Time of one call of fn in microseconds."""
    import triton.testing
    return triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode=RETURN_MODE) * 1e3


def same_bytes_copy_us(n_bytes):
    """do_bench time of a device-to-device copy that reads n_bytes / 2 and writes n_bytes / 2."""
    src = torch.empty(n_bytes // 2, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    us = do_bench(lambda: dst.copy_(src))
    del src, dst
    return us


def copy_bandwidth_gbps():
    """GB/s of a 1 GiB device-to-device copy, bytes read plus bytes written."""
    n_bytes = 2 * 2**30
    return n_bytes / (same_bytes_copy_us(n_bytes) * 1e-6) / 1e9


def l2_clear_us(reps=20, n_bytes=L2_CLEAR_BYTES, device="cuda"):
    """Device time in microseconds of do_bench's L2 clear: zero_() of an int32 buffer of n_bytes, as triton's
    driver clears its benchmark buffer before every timed call; the median of reps clears, each between two
    CUDA events, after one untimed clear. bench.py compares a call's host time with it: do_bench records its
    start event right after queueing the clear, so a call whose host path outlasts the clear launches its
    kernel after the start event has fired, and the GPU's wait for it is timed."""
    buffer = torch.empty(n_bytes // 4, dtype=torch.int32, device=device)
    buffer.zero_()
    pairs = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        buffer.zero_()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    us = statistics.median(start.elapsed_time(end) * 1e3 for start, end in pairs)
    del buffer
    return us


def device_activity(events):
    """Summed duration in microseconds and count of the profiler events that ran on a CUDA device
    (kernels, copies, memsets); (None, 0) when there are none."""
    from torch.autograd import DeviceType
    durations = [e.time_range.elapsed_us() for e in events if e.device_type == DeviceType.CUDA]
    if not durations:
        return None, 0
    return sum(durations), len(durations)


def device_time_us(fn):
    """Device time of the kernels one call of fn runs, summed, and how many ran: one call under
    torch.profiler, after a warm call and an L2 clear like do_bench's. Unlike a do_bench time, this
    leaves out the gaps in which the GPU waits for the host to launch the next kernel.
    Returns (None, 0) when the profiler saw no device activity (no CUPTI, for one)."""
    from torch.profiler import ProfilerActivity, profile
    l2_buffer = torch.empty(L2_CLEAR_BYTES // 4, dtype=torch.int32, device="cuda")
    fn()
    l2_buffer.zero_()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    del l2_buffer
    return device_activity(prof.events())


def host_us(call, calls):
    """Host time of one call (launch path only): calls calls back to back, no synchronisation between, the
    clock stopped before the device is waited for. Where the device is the slower, the launch queue can fill
    and the host then waits for the device too."""
    call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6
