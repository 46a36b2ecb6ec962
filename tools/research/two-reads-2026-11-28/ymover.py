"""No-math movers of the y pass: x in, y_q_t (int8, transposed) and y_s_t out, several patterns, against a copy."""
import sys, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for measure.py
import torch, triton, triton.language as tl
from measure import do_bench, same_bytes_copy_us


@triton.jit
def _rows_kernel(x_ptr, yq_ptr, ys_ptr, M, H, stride_x, stride_yq, stride_ys, C: tl.constexpr, TRANS: tl.constexpr,
                 TOKENS: tl.constexpr):
    """A program: TOKENS tokens (groups of 128) x C channels, x loaded as rows (channels contiguous)."""
    tiles_h = H // C
    pid = tl.program_id(0)
    pid_h = pid % tiles_h
    pid_m = pid // tiles_h
    ch = pid_h * C + tl.arange(0, C)
    for g in range(TOKENS // 128):
        tok = pid_m * TOKENS + g * 128 + tl.arange(0, 128)
        offs = tok[:, None] * stride_x + ch[None, :]
        gate = tl.load(x_ptr + offs).to(tl.float32)
        up = tl.load(x_ptr + offs + H).to(tl.float32)
        y = (gate * up).to(tl.bfloat16).to(tl.float32)
        if TRANS:
            y_t = tl.trans(y)  # C x 128
            s = tl.max(tl.abs(y_t), axis=1) * (1.0 / 127.0) + 1e-10
            q = (y_t * (1.0 / s)[:, None]).to(tl.int8)
            tl.store(yq_ptr + ch[:, None] * stride_yq + tok[None, :], q)
        else:
            s = tl.max(tl.abs(y), axis=0) * (1.0 / 127.0) + 1e-10
            q = (y * (1.0 / s)[None, :]).to(tl.int8)
            tl.store(yq_ptr + ch[None, :] * stride_yq + tok[:, None], q)
        tl.store(ys_ptr + ch * stride_ys + pid_m * (TOKENS // 128) + g, s)


@triton.jit
def _columns_kernel(x_ptr, yq_ptr, ys_ptr, M, H, stride_x, stride_yq, stride_ys, C: tl.constexpr,
                    TOKENS: tl.constexpr):
    """The shipped y kernel's pattern: x loaded as columns (C x 128, strided along the last dimension)."""
    tiles_h = H // C
    pid = tl.program_id(0)
    pid_h = pid % tiles_h
    pid_m = pid // tiles_h
    ch = pid_h * C + tl.arange(0, C)
    for g in range(TOKENS // 128):
        tok = pid_m * TOKENS + g * 128 + tl.arange(0, 128)
        offs = tok[None, :] * stride_x + ch[:, None]
        gate = tl.load(x_ptr + offs).to(tl.float32)
        up = tl.load(x_ptr + offs + H).to(tl.float32)
        y = (gate * up).to(tl.bfloat16).to(tl.float32)
        s = tl.max(tl.abs(y), axis=1) * (1.0 / 127.0) + 1e-10
        q = (y * (1.0 / s)[:, None]).to(tl.int8)
        tl.store(yq_ptr + ch[:, None] * stride_yq + tok[None, :], q)
        tl.store(ys_ptr + ch * stride_ys + pid_m * (TOKENS // 128) + g, s)


def main():
    out = []
    for M, H in ((8192, 4096), (2048, 2560), (4096, 4096)):
        x = torch.randn(M, 2 * H, device="cuda", dtype=torch.bfloat16)
        yq = torch.empty(H, M, device="cuda", dtype=torch.int8)
        ys = torch.empty(H, M // 128, device="cuda", dtype=torch.float32)
        copy = same_bytes_copy_us(4 * M * H + M * H + H * (M // 128) * 4)
        print(f"{M}x{H}: copy {copy:.1f} us", flush=True)
        variants = []
        for C in (16, 32, 64, 128):
            for w in (2, 4, 8, 16):
                for tokens in (128, 256):
                    variants.append(("columns", C, w, tokens, None))
                    variants.append(("rows_axis0", C, w, tokens, False))
                    variants.append(("rows_trans", C, w, tokens, True))
        for name, C, w, tokens, trans in variants:
            if C * 128 // (w * 32) < 4 or C * 128 // (w * 32) > 128:
                continue
            grid = (H // C * (M // tokens),)
            args = (x, yq, ys, M, H, x.stride(0), yq.stride(0), ys.stride(0))
            opts = dict(num_warps=w, num_stages=1)
            if name == "columns":
                fn = lambda: _columns_kernel[grid](*args, C=C, TOKENS=tokens, **opts)
            else:
                fn = lambda: _rows_kernel[grid](*args, C=C, TRANS=trans, TOKENS=tokens, **opts)
            try:
                fn(); torch.cuda.synchronize()
                us = do_bench(fn)
            except Exception as exc:
                print(f"  {name} C={C} warps={w} tokens={tokens}: {type(exc).__name__}", flush=True)
                continue
            print(f"  {name} C={C} warps={w} tokens={tokens}: {us:.1f} us ({copy / us:.0%} of copy)", flush=True)
            out.append({"M": M, "H": H, "pattern": name, "C": C, "warps": w, "tokens": tokens, "us": us, "copy_us": copy})
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
