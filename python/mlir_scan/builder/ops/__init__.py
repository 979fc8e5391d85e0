"""The graph's operations (:class:`~mlir_scan.builder.graph.Op` subclasses), one module per kind.

Each op types its node (:meth:`make_node`), may give its output shapes
(:meth:`infer_shape`) and writes its MLIR (:meth:`emit`, on a
:class:`~mlir_scan.builder.emitter.Block`). These modules import
:mod:`~mlir_scan.builder.graph` and :mod:`~mlir_scan.builder.emitter`, never
the tensor DSL; among themselves, ``shape`` builds on ``elemwise`` and the
others on those two.

* :mod:`.elemwise`: ``Elemwise`` (scalar ops with NumPy broadcasting), ``cast``;
* :mod:`.shape`: ``Shape``, ``Shape_i``, ``MakeVector``, ``shape_of``;
* :mod:`.basic`: ``Alloc``, ``Arange``, ``Dot``, ``Reduce``, ``DimShuffle``, ``Join``, ``Reshape``, ``Copy``;
* :mod:`.subtensor`: ``Subtensor``, ``IncSubtensor`` (basic indexing);
* :mod:`.random`: ``RandomDraw`` (the counter-based generator);
* :mod:`.scan`: ``ScanOp`` (``scan.scan`` and its inner graph).
"""
