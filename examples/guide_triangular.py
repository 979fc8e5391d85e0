"""Scan guide: "Simple accumulation into a scalar, ditching lambda".

Prints the triangular numbers below 15 twice, then shows the error the
guide warns about (an int8 initial state would be an implicit downcast).
"""
import numpy as np
import mlir_scan as theano
import mlir_scan.tensor as T

up_to = T.iscalar("up_to")

# define a named function, rather than using lambda
def accumulate_by_adding(arange_val, sum_to_date):
    return sum_to_date + arange_val
seq = T.arange(up_to)

# An unauthorized implicit downcast from the dtype of 'seq', to that of
# 'T.as_tensor_variable(0)' which is of dtype 'int8' by default would occur
# if this instruction were to be used instead of the next one:
# outputs_info = T.as_tensor_variable(0)

outputs_info = T.as_tensor_variable(np.asarray(0, seq.dtype))
scan_result, scan_updates = theano.scan(fn=accumulate_by_adding,
                                        outputs_info=outputs_info,
                                        sequences=seq)
triangular_sequence = theano.function(inputs=[up_to], outputs=scan_result)

# test
some_num = 15
print(triangular_sequence(some_num))
print([n * (n + 1) // 2 for n in range(some_num)])

# The pitfall the guide describes:
try:
    theano.scan(fn=accumulate_by_adding, outputs_info=T.as_tensor_variable(0), sequences=seq)
except TypeError as error:
    print("TypeError:", error)
