"""The compile cache: a program compiled before, in any process, is loaded
from the objects saved then (``MLIR_SCAN_CACHE_DIR``) instead of being
compiled again; a damaged entry is compiled again; ``MLIR_SCAN_CACHE=0``
writes and reads nothing. Each case runs in child processes, as a user's
repeated runs of a script would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

_CHILD = textwrap.dedent("""
    import json
    import numpy as np
    import mlir_scan as theano
    from mlir_scan import tensor as T

    xs, h0, W = T.dmatrix("xs"), T.dvector("h0"), T.dmatrix("W")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(h, W) + x),
                        sequences=xs, outputs_info=h0, non_sequences=W)
    fn = theano.function([xs, h0, W], [hs, T.grad(hs.sum(), W)])
    rng = np.random.default_rng(3)
    states, grad = fn(rng.standard_normal((9, 5)), rng.standard_normal(5),
                      rng.standard_normal((5, 5)) / 3)
    print(json.dumps({"cached": fn.program._engine.cached, "states": states.tolist(),
                      "grad": grad.tolist(), "ir": fn.program.ir("llvm")}))
""")


def _run(env_updates: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLIR_SCAN_CACHE")}
    env.update(env_updates)
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_second_process_loads_what_the_first_compiled(tmp_path: Path):
    env = {"MLIR_SCAN_CACHE_DIR": str(tmp_path)}
    first, second = _run(env), _run(env)
    assert not first["cached"] and second["cached"]
    assert second["states"] == first["states"] and second["grad"] == first["grad"]
    # Program.ir still shows every stage (printed from the source on demand).
    assert second["ir"] == first["ir"]
    assert any(p.suffix == ".parts" for p in tmp_path.iterdir())


def test_a_damaged_entry_is_compiled_again(tmp_path: Path):
    env = {"MLIR_SCAN_CACHE_DIR": str(tmp_path)}
    first = _run(env)
    for path in tmp_path.glob("*.o"):
        path.write_bytes(b"not an object file")
    again = _run(env)
    assert not again["cached"]
    assert again["states"] == first["states"] and again["grad"] == first["grad"]
    assert _run(env)["cached"]  # rewritten by the second compile


def test_the_cache_can_be_turned_off(tmp_path: Path):
    env = {"MLIR_SCAN_CACHE_DIR": str(tmp_path), "MLIR_SCAN_CACHE": "0"}
    assert not _run(env)["cached"] and not _run(env)["cached"]
    assert list(tmp_path.iterdir()) == []
