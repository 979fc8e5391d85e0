"""Scan guide: "Multiple outputs, several taps values - Recurrent Neural Network with Scan".

x(n) = tanh(W x(n-1) + W_in_1 u(n) + W_in_2 u(n-4) + W_feedback y(n-1)),
y(n) = W_out x(n-3): sequence taps [-4, 0], output taps [-3, -1] and [-1].
Runs the guide's code on random weights and compares with a NumPy loop.
"""
import numpy as np
import mlir_scan as theano
import mlir_scan.tensor as T

def oneStep(u_tm4, u_t, x_tm3, x_tm1, y_tm1, W, W_in_1, W_in_2,  W_feedback, W_out):

  x_t = T.tanh(theano.dot(x_tm1, W) + \
               theano.dot(u_t,   W_in_1) + \
               theano.dot(u_tm4, W_in_2) + \
               theano.dot(y_tm1, W_feedback))
  y_t = theano.dot(x_tm3, W_out)

  return [x_t, y_t]

W = T.matrix()
W_in_1 = T.matrix()
W_in_2 = T.matrix()
W_feedback = T.matrix()
W_out = T.matrix()

u = T.matrix() # it is a sequence of vectors
x0 = T.matrix() # initial state of x has to be a matrix, since
                # it has to cover x[-3]
y0 = T.vector() # y0 is just a vector since scan has only to provide
                # y[-1]


([x_vals, y_vals], updates) = theano.scan(fn=oneStep,
                                          sequences=dict(input=u, taps=[-4,-0]),
                                          outputs_info=[dict(initial=x0, taps=[-3,-1]), y0],
                                          non_sequences=[W, W_in_1, W_in_2, W_feedback, W_out],
                                          strict=True)
     # for second input y, scan adds -1 in output_taps by default

rnn = theano.function([u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out], [x_vals, y_vals])


def numpy_rnn(u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out):
    """The same recurrence as a plain NumPy loop (u[0] plays u[-4])."""
    xs, ys = list(x0), [y0]
    for t in range(4, len(u)):
        xs.append(np.tanh(xs[-1] @ W + u[t] @ W_in_1 + u[t - 4] @ W_in_2 + ys[-1] @ W_feedback))
        ys.append(xs[-4] @ W_out)
    return np.array(xs[3:]), np.array(ys[1:])


rng = np.random.RandomState(0)
n_in, n_x, n_y, length = 3, 5, 2, 9     # uvals has 9 rows: 5 steps
args = [rng.normal(size=(length, n_in)), rng.normal(size=(3, n_x)), rng.normal(size=n_y),
        0.5 * rng.normal(size=(n_x, n_x)), rng.normal(size=(n_in, n_x)), rng.normal(size=(n_in, n_x)),
        rng.normal(size=(n_y, n_x)), rng.normal(size=(n_x, n_y))]
x_run, y_run = rnn(*args)
x_ref, y_ref = numpy_rnn(*args)
print("x_vals:", x_run.shape)
print(x_run)
print("y_vals:", y_run.shape)
print(y_run)
print("max |difference| to the NumPy loop:", max(abs(x_run - x_ref).max(), abs(y_run - y_ref).max()))
