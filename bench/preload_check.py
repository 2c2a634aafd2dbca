"""Can a forkserver that imported torch._dynamo still start children that use CUDA? (A import that queries CUDA in
the forkserver breaks CUDA in every child.) Prints the answer and what the import costs in a fresh child.

    python bench/preload_check.py
"""
import multiprocessing as mp
import time


def child(q):
    t0 = time.time()
    import torch
    import torch._dynamo  # noqa: F401  (already imported when preloaded)
    t1 = time.time()
    try:
        x = torch.ones(1, device="cuda")
        q.put(("cuda ok", float(x.item()), round(t1 - t0, 2)))
    except Exception as e:
        q.put(("cuda FAILED", f"{type(e).__name__}: {e}"[:200], round(t1 - t0, 2)))


if __name__ == "__main__":
    for preload in (["torch"], ["torch", "torch._dynamo"]):
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(preload)
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        print(f"preload {preload}: {q.get(timeout=120)} (status, value, s to import torch + dynamo in the child)")
        p.join()
        from multiprocessing import forkserver
        forkserver._forkserver._stop()  # the next loop starts a new forkserver with the other preload list
