"""Does a 7 us reference's level move between the candidates of one session? (issue 20; bench/RESULTS.md §5)

    PYTHONPATH=. python3 bench/session_probe.py   # on a CUDA machine, ~80-150 s

8 copies of tests/corpus/honest/cuda_add_mul.py against cpu/add_mul in one evaluate_many batch (its sessions: a
reference worker each, two in flight), then 4 with a session each (evaluate); per evaluation the charged us of both
sides and the first and last timed calls' events."""
import statistics
import sys

sys.path.insert(0, "bench")
import evaluator as E  # noqa: E402
from gpu_evaluator import CORPUS, header, task_src  # noqa: E402


def show(tag, rs):
    for r in rs:
        s = r.samples or {"ref": [], "cand": []}
        ref = [round(1e3 * x[0], 2) for x in s["ref"]]
        cand = [round(1e3 * x[0], 2) for x in s["cand"]]
        print(f"{tag}: {r.status} ratio {r.speedup or 0:.3f} ref {1e3 * (r.ref_ms or 0):.2f} cand "
              f"{1e3 * (r.cand_ms or 0):.2f} us, {len(ref)} rounds; ref first/last 4 {ref[:4]} {ref[-4:]}; "
              f"cand first/last 4 {cand[:4]} {cand[-4:]}", flush=True)
    sp = [r.speedup for r in rs if r.speedup]
    rm = [r.ref_ms for r in rs if r.ref_ms]
    print(f"{tag}: speedup CV {100 * statistics.stdev(sp) / statistics.mean(sp):.1f}%, ref CV "
          f"{100 * statistics.stdev(rm) / statistics.mean(rm):.1f}%\n", flush=True)


if __name__ == "__main__":
    f = CORPUS / "honest" / "cuda_add_mul.py"
    ref, cand = task_src(header(f)[0]), f.read_text()
    E.build_all([cand], "cuda", progress=False)
    show("one batch", E.evaluate_many([(ref, cand)] * 8, "cuda", keep_samples=True, progress=False))
    show("a session each", [E.evaluate(ref, cand, "cuda", keep_samples=True) for _ in range(4)])
