"""Scan guide: "Using shared variables - Gibbs sampling".

Both versions of the guide's code: the shared variables found by scan, then
passed explicitly as non_sequences. The guide assumes W_values, bvis_values
and bhid_values exist; they are made up here. Prints three 10-step chains of
each version: 0/1 visible vectors, different on every call (the random
streams' states are updated), identical for the same seed.
"""
import numpy
import mlir_scan as theano
from mlir_scan import tensor as T

rng = numpy.random.RandomState(42)
n_visible, n_hidden = 8, 5
W_values = rng.normal(0, 1, size=(n_visible, n_hidden))
bvis_values = rng.normal(0, 0.1, size=n_visible)
bhid_values = rng.normal(0, 0.1, size=n_hidden)

W = theano.shared(W_values) # we assume that ``W_values`` contains the
                            # initial values of your weight matrix

bvis = theano.shared(bvis_values)
bhid = theano.shared(bhid_values)

trng = T.shared_randomstreams.RandomStreams(1234)

def OneStep(vsample) :
    hmean = T.nnet.sigmoid(theano.dot(vsample, W) + bhid)
    hsample = trng.binomial(size=hmean.shape, n=1, p=hmean)
    vmean = T.nnet.sigmoid(theano.dot(hsample, W.T) + bvis)
    return trng.binomial(size=vsample.shape, n=1, p=vmean,
                         dtype=theano.config.floatX)

sample = theano.tensor.vector()

values, updates = theano.scan(OneStep, outputs_info=sample, n_steps=10)

gibbs10 = theano.function([sample], values[-1], updates=updates)

start = numpy.zeros(n_visible)
for _ in range(3):
    print(gibbs10(start))

# The same chain with the shared variables passed explicitly.
W = theano.shared(W_values) # we assume that ``W_values`` contains the
                            # initial values of your weight matrix

bvis = theano.shared(bvis_values)
bhid = theano.shared(bhid_values)

trng = T.shared_randomstreams.RandomStreams(1234)

# OneStep, with explicit use of the shared variables (W, bvis, bhid)
def OneStep(vsample, W, bvis, bhid):
    hmean = T.nnet.sigmoid(theano.dot(vsample, W) + bhid)
    hsample = trng.binomial(size=hmean.shape, n=1, p=hmean)
    vmean = T.nnet.sigmoid(theano.dot(hsample, W.T) + bvis)
    return trng.binomial(size=vsample.shape, n=1, p=vmean,
                     dtype=theano.config.floatX)

sample = theano.tensor.vector()

# The new scan, with the shared variables passed as non_sequences
values, updates = theano.scan(fn=OneStep,
                              outputs_info=sample,
                              non_sequences=[W, bvis, bhid],
                              n_steps=10)

gibbs10 = theano.function([sample], values[-1], updates=updates)

for _ in range(3):
    print(gibbs10(start))
