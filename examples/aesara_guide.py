"""The Aesara scan guide's variants: ``aesara.scan.utils.until`` and the ``at`` alias.

The Aesara text lost its minus signs in extraction (``result[1]``,
``taps=[4,0]``); with them restored (``result[-1]``) it prints A**2, A**4
and the powers of two below 45 plus one, like the Theano guide.
"""
import mlir_scan as aesara
import mlir_scan.tensor as at

k = at.iscalar("k")
A = at.vector("A")

# Symbolic description of the result
result, updates = aesara.scan(fn=lambda prior_result, A: prior_result * A,
                              outputs_info=at.ones_like(A),
                              non_sequences=A,
                              n_steps=k)
final_result = result[-1]
power = aesara.function(inputs=[A,k], outputs=final_result, updates=updates)

print(power(range(10),2))
print(power(range(10),4))


def power_of_2(previous_power, max_value):
    return previous_power*2, aesara.scan.utils.until(previous_power*2 > max_value)

max_value = at.scalar()
values, _ = aesara.scan(power_of_2,
                        outputs_info = at.constant(1.),
                        non_sequences = max_value,
                        n_steps = 1024)

f = aesara.function([max_value], values)

print(f(45))
