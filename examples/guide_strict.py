"""Scan guide: "Using shared variables - the strict flag".

With strict=True, the first OneStep (which uses W, bvis and bhid without
receiving them) raises MissingInputError; the second, which receives them
as non_sequences, builds and runs.
"""
import numpy
import mlir_scan as theano
from mlir_scan import tensor as T

rng = numpy.random.RandomState(0)
W = theano.shared(rng.normal(size=(6, 3)))
bvis = theano.shared(numpy.zeros(6))
bhid = theano.shared(numpy.zeros(3))
trng = T.shared_randomstreams.RandomStreams(1234)
sample = theano.tensor.vector()

# Same OneStep as in original example.
def OneStep(vsample) :
    hmean = T.nnet.sigmoid(theano.dot(vsample, W) + bhid)
    hsample = trng.binomial(size=hmean.shape, n=1, p=hmean)
    vmean = T.nnet.sigmoid(theano.dot(hsample, W.T) + bvis)
    return trng.binomial(size=vsample.shape, n=1, p=vmean,
                         dtype=theano.config.floatX)

# The new scan, adding strict=True to the original call.
try:
    values, updates = theano.scan(OneStep,
                                  outputs_info=sample,
                                  n_steps=10,
                                  strict=True)
except theano.MissingInputError as error:
    print("MissingInputError:", error)

# OneStep, with explicit use of the shared variables (W, bvis, bhid)
def OneStep(vsample, W, bvis, bhid) :
    hmean = T.nnet.sigmoid(theano.dot(vsample, W) + bhid)
    hsample = trng.binomial(size=hmean.shape, n=1, p=hmean)
    vmean = T.nnet.sigmoid(theano.dot(hsample, W.T) + bvis)
    return trng.binomial(size=vsample.shape, n=1, p=vmean,
                         dtype=theano.config.floatX)

# The new scan, adding strict=True to the original call, and passing
# explicitly W, bvis and bhid.
values, updates = theano.scan(OneStep,
                              outputs_info=sample,
                              non_sequences=[W, bvis, bhid],
                              n_steps=10,
                              strict=True)

gibbs10 = theano.function([sample], values[-1], updates=updates)
print(gibbs10(numpy.zeros(6)))
