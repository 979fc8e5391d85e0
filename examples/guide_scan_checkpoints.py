"""Scan guide: "Reducing Scan's memory usage" (scan_checkpoints, forward behaviour).

A running sum over 10 values in chunks of save_every_N=4 steps: the outputs
are the states after steps 4, 8 and 10; the last one equals the plain scan's
last value.
"""
import numpy as np
import mlir_scan as theano
import mlir_scan.tensor as T

xs = T.vector("xs")
s0 = T.scalar("s0")
checkpoints, _ = theano.scan_checkpoints(lambda x, s: s + x, sequences=[xs], outputs_info=[s0],
                                         save_every_N=4)
plain, _ = theano.scan(lambda x, s: s + x, sequences=[xs], outputs_info=[s0])
f = theano.function([xs, s0], [checkpoints, plain[-1]])
values = np.arange(1.0, 11.0)
chunks, last = f(values, 0.0)
print(chunks)           # [10. 36. 55.]
print(last)             # 55.0
