"""The gradient of ``scan`` (backpropagation through time as a backward MITMOT scan).

Every kind of scan input and output against central finite differences of the
compiled cost (float64, relative tolerance 1e-6); ``truncate_gradient``
against a NumPy computation of truncated BPTT; second order against second
differences of a NumPy cost.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlir_scan as theano
from mlir_scan import tensor as T

from gradcheck import assert_close, check_grad

RNG = np.random.default_rng(11)


def _u(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def _rnn_cost(W, U, b, h0, xs):
    hs, _ = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(W, h) + T.dot(U, x) + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
    return hs.sum() + (hs[-1] ** 2).sum()


def _rnn_numpy(W, U, b, h0, xs):
    h, total = h0, 0.0
    for x in xs:
        h = np.tanh(W @ h + U @ x + b)
        total += h.sum()
    return total + (h ** 2).sum()


RNN_VALUES = [_u(4, 4) * 0.6, _u(4, 3), _u(4), _u(4), _u(6, 3)]


@pytest.mark.parametrize("mode", [None, "FAST_COMPILE"])
def test_rnn_gradient(mode):
    f = check_grad(_rnn_cost, RNN_VALUES, reference=_rnn_numpy, mode=mode, names=["W", "U", "b", "h0", "xs"])
    assert "mitmot(" in f.ir
    assert "go_backwards" in f.ir


@pytest.mark.parametrize("k", [-1, -3, 0, 4])
def test_cost_on_one_row_of_the_states(k):
    """A cost on hs[k] only: its gradient arrives at one row, which the backward step
    adds when it handles step k (no T x H array of zeros is read)."""
    def cost(W, U, b, h0, xs):
        hs, _ = theano.scan(lambda x, h, W, U, b: T.tanh(T.dot(W, h) + T.dot(U, x) + b),
                            sequences=xs, outputs_info=h0, non_sequences=[W, U, b])
        return (hs[k] * T.as_tensor_variable(np.arange(1.0, 5.0))).sum()

    def reference(W, U, b, h0, xs):
        h, rows = h0, []
        for x in xs:
            h = np.tanh(W @ h + U @ x + b)
            rows.append(h)
        return (rows[k] * np.arange(1.0, 5.0)).sum()

    check_grad(cost, RNN_VALUES, reference=reference)


def test_cost_on_a_symbolic_row_and_its_bounds():
    """hs[i] for an int input i: the gradient against finite differences for every i,
    and an i out of bounds is the IndexError of the forward indexing."""
    from gradcheck import numeric_grad

    xs, h0, W, i = T.dmatrix("xs"), T.dvector("h0"), T.dmatrix("W"), T.iscalar("i")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(W, h) + x), sequences=xs, outputs_info=h0, non_sequences=W)
    f_cost = theano.function([xs, h0, W, i], hs[i].sum())
    f_grad = theano.function([xs, h0, W, i], T.grad(hs[i].sum(), W))
    xv, hv, wv = _u(5, 3), _u(3), _u(3, 3) * 0.7
    for iv in (-5, -2, 0, 3, 4):
        want = numeric_grad(lambda w: f_cost(xv, hv, w, iv), [wv], 0)
        assert_close(f_grad(xv, hv, wv, iv), want, what=f"i = {iv}")
    for iv in (5, -6):
        with pytest.raises(IndexError):
            f_grad(xv, hv, wv, iv)


def test_rnn_gradient_ir_through_scan_opt(tmp_path):
    import subprocess

    xs, h0, W = T.dmatrix("xs"), T.dvector("h0"), T.dmatrix("W")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(W, h) + x), sequences=xs, outputs_info=h0, non_sequences=W)
    f = theano.function([xs, h0, W], T.grad(hs.sum(), W))
    path = tmp_path / "rnn_grad.mlir"
    path.write_text(f.ir)
    for flags in (["--scan-optimize"], ["--convert-scan-to-scf"], ["--scan-bufferize"], ["--scan-to-llvm"],
                  ["--scan-to-llvm=vectorize=0 checks=1"]):
        out = subprocess.run(["scan-opt", str(path), *flags], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr


def test_sitsot_scalar_with_sequence():
    def cost(xs, a0, w):
        acc, _ = theano.scan(lambda x, acc, w: acc * x * w + T.sin(acc), sequences=xs, outputs_info=a0,
                             non_sequences=w)
        return (acc ** 2).sum()
    check_grad(cost, [_u(5), np.asarray(0.4), np.asarray(0.9)])


def test_mitsot_several_taps():
    def cost(x0, us, a, c):
        xs, _ = theano.scan(lambda u, xm3, xm1, a, c: a * xm1 + c * T.tanh(xm3) + u,
                            sequences=us, outputs_info=dict(initial=x0, taps=[-3, -1]), non_sequences=[a, c])
        return (xs ** 2).sum() + xs[-1].sum()
    check_grad(cost, [_u(3, 2), _u(5, 2), np.asarray(0.7), np.asarray(-0.4)])


def test_nitsot_map_and_two_outputs():
    def cost(xs, w):
        (ys, zs), _ = theano.scan(lambda x, w: [x ** 2 * w, T.exp(x * w).sum()], sequences=xs, non_sequences=w,
                                  outputs_info=[None, None])
        return ys.sum() + (zs ** 2).sum()
    check_grad(cost, [_u(4, 3), _u(3)])


def test_sequence_past_and_future_taps():
    def cost(xs, w):
        ys, _ = theano.scan(lambda xm2, x, xp1, w: xm2 * x * w + xp1 ** 2,
                            sequences=dict(input=xs, taps=[-2, 0, 1]), non_sequences=w)
        return (ys ** 2).sum()
    check_grad(cost, [_u(8, 2), _u(2)])


def test_go_backwards_with_sequence_and_state():
    def cost(xs, h0, w):
        hs, _ = theano.scan(lambda x, h, w: T.tanh(h * w + x), sequences=xs, outputs_info=h0, non_sequences=w,
                            go_backwards=True)
        return (hs * np.arange(1.0, 6.0)[:, None]).sum()
    check_grad(cost, [_u(5, 2), _u(2), _u(2)])


def test_shared_variable_in_step():
    W = theano.shared(_u(3, 3) * 0.5, name="W")
    xs, h0 = T.dmatrix("xs"), T.dvector("h0")
    hs, _ = theano.scan(lambda x, h: T.tanh(T.dot(W, h) + x), sequences=xs, outputs_info=h0)
    cost = (hs ** 2).sum()
    gW, gh0 = T.grad(cost, [W, h0])
    f = theano.function([xs, h0], [cost, gW, gh0])
    xv, hv = _u(4, 3), _u(3)
    Wv = W.get_value()

    def numpy_cost(Wm, h):
        total = 0.0
        for x in xv:
            h = np.tanh(Wm @ h + x)
            total += (h ** 2).sum()
        return total

    from gradcheck import numeric_grad
    _, a, b = f(xv, hv)
    assert_close(a, numeric_grad(numpy_cost, [Wv, hv], 0))
    assert_close(b, numeric_grad(numpy_cost, [Wv, hv], 1))


def test_n_steps_zero():
    h0, w = T.dvector("h0"), T.dscalar("w")
    hs, _ = theano.scan(lambda h, w: h * w, outputs_info=h0, non_sequences=w, n_steps=0)
    cost = hs.sum() + (h0 ** 2).sum()
    gh0, gw = T.grad(cost, [h0, w])
    f = theano.function([h0, w], [gh0, gw])
    a, b = f(np.array([1.0, 2.0]), 3.0)
    np.testing.assert_allclose(a, [2.0, 4.0])
    np.testing.assert_allclose(b, 0.0)


def test_symbolic_n_steps_and_reduce():
    def cost(h0, w):
        k = T.constant(4, dtype="int64")
        hs, _ = theano.scan(lambda h, w: T.sin(h * w) + h, outputs_info=h0, non_sequences=w, n_steps=k)
        last, _ = theano.reduce(lambda x, acc: acc * 0.5 + x, sequences=hs, outputs_info=T.zeros_like(h0))
        return (last ** 2).sum() + hs[2].sum()
    check_grad(cost, [_u(3), _u(3)])


def test_foldr_keep_last():
    def cost(xs, a0):
        r, _ = theano.foldr(lambda x, acc: acc * T.tanh(x) + x, sequences=xs, outputs_info=a0)
        return r ** 2
    check_grad(cost, [_u(5), np.asarray(0.3)])


def test_until_gradient_over_the_steps_taken():
    # Stops when the state exceeds 3: the gradient covers only the steps that ran.
    def cost(x0, a, xs):
        hs, _ = theano.scan(lambda x, h, a: [h * a + x, theano.until(h * a + x > 3.0)], sequences=xs,
                            outputs_info=x0, non_sequences=a)
        return (hs ** 2).sum() + hs.shape[0] * 1.0
    xs = np.array([0.2, 0.4, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1])
    f = check_grad(cost, [np.asarray(0.5), np.asarray(1.3), xs])
    # Check the loop really stopped early (so the test covers `until`).
    x0, a, xv = T.dscalar(), T.dscalar(), T.dvector()
    hs, _ = theano.scan(lambda x, h, a: [h * a + x, theano.until(h * a + x > 3.0)], sequences=xv,
                        outputs_info=x0, non_sequences=a)
    assert theano.function([x0, a, xv], hs.shape[0])(0.5, 1.3, xs) < len(xs)
    del f


def _truncated_expected(w, h0, xs, k):
    """Truncated BPTT by hand: only the last k steps, the state before them a constant."""
    N = len(xs)
    hs = []
    h = h0
    for x in xs:
        h = np.tanh(w * h + x)
        hs.append(h)
    lo = max(0, N - k)
    gx, gw, gh0 = np.zeros(N), 0.0, 0.0
    delta = 0.0
    for t in range(N - 1, lo - 1, -1):
        delta = delta + 1.0  # d cost / d h_t from the cost sum(h)
        da = delta * (1 - hs[t] ** 2)
        prev = hs[t - 1] if t > 0 else h0
        gx[t] = da
        gw += da * prev
        delta = da * w
        if t == 0:
            gh0 = delta
    return gx, gw, gh0


@pytest.mark.parametrize("k", [2, 5, 9])
def test_truncate_gradient(k):
    xs, h0, w = T.dvector("xs"), T.dscalar("h0"), T.dscalar("w")
    hs, _ = theano.scan(lambda x, h, w: T.tanh(w * h + x), sequences=xs, outputs_info=h0, non_sequences=w,
                        truncate_gradient=k)
    f = theano.function([xs, h0, w], T.grad(hs.sum(), [xs, w, h0]))
    xv, hv, wv = _u(6), 0.3, 0.8
    gx, gw, gh0 = f(xv, hv, wv)
    ex, ew, eh = _truncated_expected(wv, hv, xv, k)
    assert_close(gx, ex, rtol=1e-12)
    assert_close(gw, ew, rtol=1e-12)
    assert_close(gh0, eh, rtol=1e-12)


def test_nested_scan_in_step():
    def cost(X, w, h0):
        def step(row, h, w):
            inner, _ = theano.scan(lambda x, acc, w: acc * w + T.sin(x), sequences=row, outputs_info=h,
                                   non_sequences=w)
            return inner[-1]
        hs, _ = theano.scan(step, sequences=X, outputs_info=h0, non_sequences=w)
        return (hs ** 2).sum()
    check_grad(cost, [_u(3, 4), np.asarray(0.8), np.asarray(0.2)])


def test_scan_checkpoints_same_gradient_as_scan():
    def cost_ckpt(xs, h0, w):
        hs, _ = theano.scan_checkpoints(lambda x, h, w: T.tanh(h * w + x), sequences=[xs], outputs_info=[h0],
                                        non_sequences=[w], save_every_N=3)
        return (hs[-1] ** 2).sum()

    def cost_plain(xs, h0, w):
        hs, _ = theano.scan(lambda x, h, w: T.tanh(h * w + x), sequences=xs, outputs_info=h0, non_sequences=w)
        return (hs[-1] ** 2).sum()

    values = [_u(7, 2), _u(2), _u(2)]
    f1 = check_grad(cost_ckpt, values)
    f2 = check_grad(cost_plain, values)
    for a, b in zip(f1(*values), f2(*values)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# -- Jacobian, Hessian, second order ----------------------------------------------------------------


def test_jacobian_tutorial():
    x = T.dvector("x")
    y = x ** 2
    J, updates = theano.scan(lambda i, y, x: T.grad(y[i], x), sequences=T.arange(y.shape[0]),
                             non_sequences=[y, x])
    f = theano.function([x], J, updates=updates)
    np.testing.assert_allclose(f([4, 4]), [[8.0, 0.0], [0.0, 8.0]])
    g = theano.function([x], theano.gradient.jacobian(y, x))
    np.testing.assert_allclose(g([1.0, 2.0, 3.0]), np.diag([2.0, 4.0, 6.0]))


def test_hessian_tutorial():
    x = T.dvector("x")
    cost = (x ** 2).sum()
    gy = T.grad(cost, x)
    H, updates = theano.scan(lambda i, gy, x: T.grad(gy[i], x), sequences=T.arange(gy.shape[0]),
                             non_sequences=[gy, x])
    f = theano.function([x], H, updates=updates)
    np.testing.assert_allclose(f([4, 4]), [[2.0, 0.0], [0.0, 2.0]])
    h = theano.function([x], T.hessian((x ** 3).sum() + x[0] * x[1], x))
    np.testing.assert_allclose(h([1.0, 2.0]), [[6.0, 1.0], [1.0, 12.0]])


def _second_differences(f, x, h=1e-4):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(di, dj):
                y = np.array(x, dtype=np.float64)
                y[i] += di
                y[j] += dj
                return f(y)
            H[i, j] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    return H


def test_hessian_through_a_scan():
    # Second order: the gradient of the backward scan (its MITMOT states) is a third scan.
    x = T.dvector("x")
    w = 0.7
    hs, _ = theano.scan(lambda xt, h: T.tanh(h * w + xt), sequences=x, outputs_info=T.constant(0.1))
    cost = (hs ** 2).sum()
    f = theano.function([x], T.hessian(cost, x))

    def numpy_cost(xv):
        h, total = 0.1, 0.0
        for xt in xv:
            h = np.tanh(h * w + xt)
            total += h * h
        return total

    xv = _u(4)
    assert_close(f(xv), _second_differences(numpy_cost, xv), rtol=1e-5, atol=1e-6)


def test_gradient_of_gradient_mitsot_and_nonseq():
    xs, w = T.dvector("xs"), T.dvector("w")
    hs, _ = theano.scan(lambda x, hm2, hm1, w: T.tanh(w[0] * hm1 + w[1] * hm2 + x), sequences=xs,
                        outputs_info=dict(initial=T.constant(np.array([0.1, -0.2])), taps=[-2, -1]),
                        non_sequences=w)
    cost = (hs ** 2).sum()
    f = theano.function([xs, w], T.hessian(cost, w))

    def numpy_cost(wv, xv):
        hist, total = [0.1, -0.2], 0.0
        for x in xv:
            h = np.tanh(wv[0] * hist[-1] + wv[1] * hist[-2] + x)
            hist.append(h)
            total += h * h
        return total

    xv, wv = _u(5), np.array([0.6, -0.3])
    assert_close(f(xv, wv), _second_differences(lambda v: numpy_cost(v, xv), wv), rtol=1e-5, atol=1e-6)


def _scan_headers(ir: str) -> list[str]:
    """The text of each scan.scan op up to its body."""
    return [part.split("^bb0")[0] for part in ir.split("scan.scan")[1:]]


def test_save_mem_keeps_the_states_the_backward_scan_reads():
    xs, h0, w = T.dmatrix("xs"), T.dvector("h0"), T.dvector("w")
    hs, _ = theano.scan(lambda x, h, w: T.tanh(h * w + x), sequences=xs, outputs_info=h0, non_sequences=w)
    cost = (hs[-1] ** 2).sum()
    # Alone, the cost reads one row: scan-save-mem keeps only that one.
    forward = theano.function([xs, h0, w], cost)
    assert any("keep [1]" in h for h in _scan_headers(forward.program.ir("optimized")))
    # With the gradient, the backward scan reads every forward state: nothing is dropped.
    f = check_grad(lambda xs, h0, w: (theano.scan(lambda x, h, w: T.tanh(h * w + x), sequences=xs,
                                                  outputs_info=h0, non_sequences=w)[0][-1] ** 2).sum(),
                   [_u(5, 3), _u(3), _u(3)])
    headers = _scan_headers(f.program.ir("optimized"))
    forward_scans = [h for h in headers if "go_backwards" not in h]
    assert forward_scans and all("keep" not in h for h in forward_scans), forward_scans


def test_matrix_rnn_go_backwards():
    # dW and dU as matmuls after the loop (outer-product push-out), reversed forward scan.
    def cost(W, U, h0, xs):
        hs, _ = theano.scan(lambda x, h, W, U: T.tanh(T.dot(h, W) + T.dot(x, U)), sequences=xs,
                            outputs_info=h0, non_sequences=[W, U], go_backwards=True)
        return (hs ** 2).sum()
    check_grad(cost, [_u(3, 3) * 0.7, _u(2, 3), _u(3), _u(5, 2)])


def test_matrix_rnn_truncated_against_numpy_bptt():
    k = 3
    W, U, h0, xs = T.dmatrix("W"), T.dmatrix("U"), T.dvector("h0"), T.dmatrix("xs")
    hs, _ = theano.scan(lambda x, h, W, U: T.tanh(T.dot(h, W) + T.dot(x, U)), sequences=xs, outputs_info=h0,
                        non_sequences=[W, U], truncate_gradient=k)
    f = theano.function([W, U, h0, xs], T.grad(hs.sum(), [W, U, xs]))
    Wv, Uv, hv, xv = _u(3, 3) * 0.7, _u(2, 3), _u(3), _u(6, 2)
    hist = [hv]
    for x in xv:
        hist.append(np.tanh(hist[-1] @ Wv + x @ Uv))
    gW, gU, gx = np.zeros_like(Wv), np.zeros_like(Uv), np.zeros_like(xv)
    carry = np.zeros(3)
    for t in range(len(xv) - 1, len(xv) - 1 - k, -1):
        da = (1 + carry) * (1 - hist[t + 1] ** 2)
        gW += np.outer(hist[t], da)
        gU += np.outer(xv[t], da)
        gx[t] = Uv @ da
        carry = Wv @ da
    for got, want in zip(f(Wv, Uv, hv, xv), (gW, gU, gx)):
        assert_close(got, want, rtol=1e-12)
