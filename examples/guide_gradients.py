"""Theano's gradient tutorial ("Derivatives in Theano") and an RNN trained with SGD.

Only the imports differ from Theano. Prints the tutorial's numbers, then the
loss of a small RNN over a few SGD steps (it goes down): the gradient of the
RNN is a backward scan (backpropagation through time, MITMOT states).
"""

import numpy as np

import mlir_scan as theano
from mlir_scan import tensor as T

# -- Computing gradients -----------------------------------------------------------------
x = T.dscalar("x")
y = x ** 2
gy = T.grad(y, x)
f = theano.function([x], gy)
print(f(4))  # 8.0
print(np.allclose(f(94.2), 188.4))  # True

x = T.dmatrix("x")
s = T.sum(1 / (1 + T.exp(-x)))
gs = T.grad(s, x)
dlogistic = theano.function([x], gs)
print(dlogistic([[0, 1], [-1, -2]]))  # [[0.25 0.19661193] [0.19661193 0.10499359]]

# -- Computing the Jacobian ------------------------------------------------------------------
x = T.dvector("x")
y = x ** 2
J, updates = theano.scan(lambda i, y, x: T.grad(y[i], x), sequences=T.arange(y.shape[0]), non_sequences=[y, x])
f = theano.function([x], J, updates=updates)
print(f([4, 4]))  # [[8. 0.] [0. 8.]]

# -- Computing the Hessian -------------------------------------------------------------------
x = T.dvector("x")
y = x ** 2
cost = y.sum()
gy = T.grad(cost, x)
H, updates = theano.scan(lambda i, gy, x: T.grad(gy[i], x), sequences=T.arange(gy.shape[0]),
                         non_sequences=[gy, x])
f = theano.function([x], H, updates=updates)
print(f([4, 4]))  # [[2. 0.] [0. 2.]]

# ... and with the helpers.
print(theano.function([x], theano.gradient.jacobian(y, x))([1, 2]))  # [[2. 0.] [0. 4.]]
print(theano.function([x], T.hessian((x ** 3).sum(), x))([1, 2]))  # [[ 6.  0.] [ 0. 12.]]

# -- An RNN trained by backpropagation through time --------------------------------------------
rng = np.random.default_rng(0)
n_in, n_hid, n_steps = 3, 8, 20
W = theano.shared(rng.normal(0, 0.3, (n_hid, n_hid)), name="W")
U = theano.shared(rng.normal(0, 0.3, (n_hid, n_in)), name="U")
b = theano.shared(np.zeros(n_hid), name="b")
V = theano.shared(rng.normal(0, 0.3, n_hid), name="V")
xs = T.dmatrix("xs")
targets = T.dvector("targets")
h0 = T.zeros((n_hid,))
hs, _ = theano.scan(lambda x_t, h: T.tanh(T.dot(W, h) + T.dot(U, x_t) + b), sequences=xs, outputs_info=h0)
loss = T.mean((T.dot(hs, V) - targets) ** 2)
params = [W, U, b, V]
grads = T.grad(loss, params)
lr = 0.1
train = theano.function([xs, targets], loss, updates=[(p, p - lr * g) for p, g in zip(params, grads)])

data = rng.normal(0, 1, (n_steps, n_in))
goal = np.sin(np.cumsum(data[:, 0]) * 0.5)
losses = [float(train(data, goal)) for _ in range(30)]
print(" ".join(f"{v:.4f}" for v in losses[::5]))
print("loss went down:", losses[-1] < 0.5 * losses[0])
