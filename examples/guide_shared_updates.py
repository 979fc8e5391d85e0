"""Scan guide: the ``a = theano.shared(1)`` updates example.

b does not use the updated a: 2 then 12; c uses updates[a]: 12 then 22;
a is 11 after the first call and 21 after the second. Without the updates,
a stays 1, b 2 and c 12.
"""
import mlir_scan as theano

a = theano.shared(1)
values, updates = theano.scan(lambda: {a: a+1}, n_steps=10)

b = a + 1
c = updates[a] + 1
f = theano.function([], [b, c], updates=updates)

print(b)
print(c)
print(a.get_value())

# Calling the function (the guide describes the numbers):
b_value, c_value = f()
print("first call:  b =", b_value, " c =", c_value, " a =", a.get_value())
b_value, c_value = f()
print("second call: b =", b_value, " c =", c_value, " a =", a.get_value())

# Without passing the updates, a is never changed:
a.set_value(1)
g = theano.function([], [b, c])
for _ in range(2):
    b_value, c_value = g()
    print("no updates:  b =", b_value, " c =", c_value, " a =", a.get_value())
