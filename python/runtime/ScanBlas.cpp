//===- ScanBlas.cpp - large matrix products through BLAS ------------------===//
//
// `scan-call-blas` guards each large f32/f64 matrix product of a program's
// loops behind a call of `mlir_scan_blas_gemm_<t>`, whose memref operands
// arrive as expanded descriptors (allocated, aligned, offset, sizes,
// strides), then an i32 `accumulate`. The entry point returns 1 after
// computing `C += A B` (`C = A B` when `accumulate` is 0) with BLAS, or 0
// without touching anything, and the program then runs its own loops: when
// no BLAS was given to the library (`mlirScanSetBlas`, called by
// mlir_scan/runtime.py with the functions of the scipy-openblas32 package),
// when a layout is not one BLAS takes, or when the product is thin (fewer
// than kMinSide rows, columns or terms).
//
// A product outside the program's loops has no loops of its own (they were
// most of the compile time of a program of products): it calls
// `mlir_scan_gemm_<t>(A, B, C, accumulate)`, which computes it through BLAS
// whatever its size and layout (on copies of the operands BLAS cannot read
// in place), and in LoopGemm's loops only without BLAS.
//
// BLAS runs on one thread per call; large products are split into row (or
// column) panels on the pool of ScanParallel.cpp, which the program's own
// parallel loops use too, so the two never compete for the cores with
// threads of their own.
//
//===----------------------------------------------------------------------===//

#include "ScanRuntime.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>

extern "C" void *mlirScanAlloc(size_t size);
extern "C" void mlirScanFree(void *pointer);
extern "C" void __mlir_scan_parallel_for(int64_t lo, int64_t hi, int64_t work,
                                         void (*fn)(void *, int64_t, int64_t),
                                         void *context);

namespace {

// CBLAS's enumerations.
constexpr int kRowMajor = 101, kColMajor = 102;
constexpr int kNoTrans = 111, kTrans = 112;

template <typename T>
using GemmFn = void (*)(int order, int transA, int transB, int m, int n, int k,
                        T alpha, const T *a, int lda, const T *b, int ldb,
                        T beta, T *c, int ldc);

struct Blas {
  GemmFn<double> dgemm = nullptr;
  GemmFn<float> sgemm = nullptr;
};

/// Set once, before any program runs (mlir_scan/runtime.py at import).
Blas blas;

/// How many products BLAS computed (mlir_scan._blas.calls(): the tests
/// tell the BLAS path from the loops by it).
std::atomic<int64_t> blasCalls{0};

template <typename T> GemmFn<T> gemmFn();
template <> GemmFn<double> gemmFn<double>() { return blas.dgemm; }
template <> GemmFn<float> gemmFn<float>() { return blas.sgemm; }

bool fitsBlasInt(int64_t value) { return value >= 0 && value <= INT_MAX; }

/// A product with fewer rows, columns or terms than this stays in the
/// program's loops, which are tuned for the thin products of a scan step: a
/// batched RNN step `h W` (B x H times H x H) ran 7% slower through BLAS for
/// B = 4 (and gained 25-35% for B = 16).
constexpr int64_t kMinSide = 16;

/// A strided matrix (rows x cols) at `data`.
template <typename T> struct Matrix {
  T *data;
  int64_t rows, cols, rowStride, colStride;
};

/// How BLAS can read a matrix: row-major (element (i, j) at i * ld + j) or
/// column-major (at i + j * ld), with a leading dimension BLAS accepts.
struct Layout {
  bool ok = false;
  bool rowMajor = true;
  int64_t ld = 1;
};

/// The layout of `m`; a stride of a dimension of size 1 is never read.
template <typename T> Layout layoutOf(const Matrix<T> &m) {
  Layout l;
  bool unitCols = m.cols <= 1 || m.colStride == 1;
  bool unitRows = m.rows <= 1 || m.rowStride == 1;
  if (unitCols && (m.rows <= 1 || m.rowStride >= std::max<int64_t>(1, m.cols))) {
    l.ok = true;
    l.rowMajor = true;
    l.ld = m.rows <= 1 ? std::max<int64_t>(1, m.cols) : m.rowStride;
  } else if (unitRows &&
             (m.cols <= 1 || m.colStride >= std::max<int64_t>(1, m.rows))) {
    l.ok = true;
    l.rowMajor = false;
    l.ld = m.cols <= 1 ? std::max<int64_t>(1, m.rows) : m.colStride;
  }
  l.ok = l.ok && fitsBlasInt(l.ld) && fitsBlasInt(m.rows) && fitsBlasInt(m.cols);
  return l;
}

/// The bytes [first, last) a non-empty matrix spans (strides of any sign).
struct Span {
  const char *first, *last;
};
template <typename T> Span spanOf(const Matrix<T> &m) {
  int64_t low = 0, high = 0;
  for (int64_t step : {(m.rows - 1) * m.rowStride, (m.cols - 1) * m.colStride})
    (step < 0 ? low : high) += step;
  const char *data = reinterpret_cast<const char *>(m.data);
  return {data + low * int64_t(sizeof(T)), data + (high + 1) * int64_t(sizeof(T))};
}
template <typename T> bool overlap(const Matrix<T> &a, const Matrix<T> &b) {
  Span x = spanOf(a), y = spanOf(b);
  return x.first < y.last && y.first < x.last;
}

template <typename T>
Matrix<T> matrix(T *aligned, int64_t offset, int64_t rows, int64_t cols,
                 int64_t rowStride, int64_t colStride) {
  return {aligned + offset, rows, cols, rowStride, colStride};
}

template <typename T> struct Gemm {
  Matrix<T> a, b, c;
  Layout la, lb, lc;
  bool splitRows;  // parts are panels of rows of C (else of columns)
  T beta;          // 1: C += A B; 0: C = A B

  /// Rows (or columns) [lo, hi) of C.
  void run(int64_t lo, int64_t hi) const {
    int64_t m = c.rows, n = c.cols;
    const T *pa = a.data, *pb = b.data;
    T *pc = c.data;
    if (splitRows) {
      m = hi - lo;
      pa += lo * (la.rowMajor ? la.ld : 1);
      pc += lo * (lc.rowMajor ? lc.ld : 1);
    } else {
      n = hi - lo;
      pb += lo * (lb.rowMajor ? 1 : lb.ld);
      pc += lo * (lc.rowMajor ? 1 : lc.ld);
    }
    // In C's own order an operand stored in the other order is transposed.
    int order = lc.rowMajor ? kRowMajor : kColMajor;
    int ta = la.rowMajor == lc.rowMajor ? kNoTrans : kTrans;
    int tb = lb.rowMajor == lc.rowMajor ? kNoTrans : kTrans;
    gemmFn<T>()(order, ta, tb, int(m), int(n), int(a.cols), T(1), pa,
                int(la.ld), pb, int(lb.ld), beta, pc, int(lc.ld));
  }

  static void part(void *self, int64_t lo, int64_t hi) {
    static_cast<const Gemm *>(self)->run(lo, hi);
  }
};

/// `C += A B` (`accumulate`) or `C = A B` through BLAS, whatever the sizes;
/// false where BLAS cannot take the operands (nothing is written then).
template <typename T>
bool blasGemm(Matrix<T> a, Matrix<T> b, Matrix<T> c, int32_t accumulate) {
  Gemm<T> g{a, b, c, layoutOf(a), layoutOf(b), layoutOf(c), true,
            T(accumulate ? 1 : 0)};
  if (!g.la.ok || !g.lb.ok || !g.lc.ok || !fitsBlasInt(a.cols) ||
      overlap(a, c) || overlap(b, c))
    return false;
  g.splitRows = c.rows >= c.cols;
  int64_t parts = g.splitRows ? c.rows : c.cols;
  __mlir_scan_parallel_for(0, parts, c.rows * c.cols * a.cols, &Gemm<T>::part,
                           &g);
  blasCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

/// gemm for a product in the program's loops: through BLAS unless it is
/// thin; 0 where BLAS does not take it (nothing is written then).
template <typename T>
int32_t gemm(Matrix<T> a, Matrix<T> b, Matrix<T> c, int32_t accumulate) {
  if (!gemmFn<T>())
    return 0;
  if (c.rows == 0 || c.cols == 0)
    return 1;
  if (std::min({c.rows, c.cols, a.cols}) < kMinSide)
    return 0;
  return blasGemm(a, b, c, accumulate) ? 1 : 0;
}

/// Rows [lo, hi) of `C (+)= A B` in plain loops, for any strides: each row
/// of C is a sum of rows of B, so the innermost loop runs along a row of B
/// and of C (contiguous in the common case, where it vectorizes).
template <typename T> struct LoopGemm {
  Matrix<T> a, b, c;
  bool accumulate;

  void run(int64_t lo, int64_t hi) const {
    const bool unit = b.colStride == 1 && c.colStride == 1;
    for (int64_t i = lo; i < hi; ++i) {
      T *row = c.data + i * c.rowStride;
      if (!accumulate)
        for (int64_t j = 0; j < c.cols; ++j)
          row[j * c.colStride] = T(0);
      for (int64_t p = 0; p < a.cols; ++p) {
        T x = a.data[i * a.rowStride + p * a.colStride];
        const T *in = b.data + p * b.rowStride;
        if (unit) {
          for (int64_t j = 0; j < c.cols; ++j)
            row[j] += x * in[j];
        } else {
          for (int64_t j = 0; j < c.cols; ++j)
            row[j * c.colStride] += x * in[j * b.colStride];
        }
      }
    }
  }

  static void part(void *self, int64_t lo, int64_t hi) {
    static_cast<const LoopGemm *>(self)->run(lo, hi);
  }
};

/// The copies a product made, freed when it returns.
template <typename T> struct SmallCopies {
  T *blocks[3] = {nullptr, nullptr, nullptr};
  int count = 0;
  Matrix<T> add(Matrix<T> m) {
    blocks[count++] = m.data;
    return m;
  }
  ~SmallCopies() {
    for (int i = 0; i < count; ++i)
      mlirScanFree(blocks[i]);
  }
};

/// `to`'s elements from `from` (of the same sizes).
template <typename T> void copyInto(const Matrix<T> &to, const Matrix<T> &from) {
  for (int64_t i = 0; i < to.rows; ++i)
    for (int64_t j = 0; j < to.cols; ++j)
      to.data[i * to.rowStride + j * to.colStride] =
          from.data[i * from.rowStride + j * from.colStride];
}

/// A row-major copy of `m` in a block of the run-time allocator (a failure
/// fails the call, as a program's own allocation does); with `values`, m's
/// elements are copied.
template <typename T> Matrix<T> rowMajorCopy(const Matrix<T> &m, bool values) {
  auto *data = static_cast<T *>(mlirScanAlloc(sizeof(T) * m.rows * m.cols));
  Matrix<T> copy{data, m.rows, m.cols, m.cols, 1};
  if (values)
    copyInto(copy, m);
  return copy;
}

/// `C += A B` (`accumulate`) or `C = A B`, always, for a product outside
/// the program's loops, which has no loops of its own. Through BLAS
/// whatever its size (once per call, a call's cost is nothing), on
/// row-major copies of the operands whose layout BLAS cannot take (and of
/// C when it overlaps an operand); without BLAS, in LoopGemm's loops.
template <typename T>
void product(Matrix<T> a, Matrix<T> b, Matrix<T> c, int32_t accumulate) {
  if (c.rows == 0 || c.cols == 0)
    return;
  int64_t work = c.rows * c.cols * a.cols;
  SmallCopies<T> copies;
  if (gemmFn<T>() && a.cols > 0) {
    Matrix<T> pa = layoutOf(a).ok ? a : copies.add(rowMajorCopy(a, true));
    Matrix<T> pb = layoutOf(b).ok ? b : copies.add(rowMajorCopy(b, true));
    bool ownC = !layoutOf(c).ok || overlap(pa, c) || overlap(pb, c);
    Matrix<T> pc = ownC ? copies.add(rowMajorCopy(c, accumulate != 0)) : c;
    if (blasGemm(pa, pb, pc, accumulate)) {
      if (ownC)
        copyInto(c, pc);
      return;
    }
  }
  // No BLAS (or sizes beyond its 32-bit integers): the loops, into a copy
  // of C when C overlaps an operand (they would read what they wrote).
  bool aliased = a.cols > 0 && (overlap(a, c) || overlap(b, c));
  Matrix<T> out = aliased ? copies.add(rowMajorCopy(c, accumulate != 0)) : c;
  LoopGemm<T> loops{a, b, out, accumulate != 0};
  __mlir_scan_parallel_for(0, c.rows, std::max<int64_t>(work, c.rows * c.cols),
                           &LoopGemm<T>::part, &loops);
  if (aliased)
    copyInto(c, out);
}

} // namespace

// A 2-D memref's descriptor fields.
#define MATRIX_ARGS(T, p)                                                      \
  T *p##Allocated, T *p##Aligned, int64_t p##Offset, int64_t p##Rows,          \
      int64_t p##Cols, int64_t p##RowStride, int64_t p##ColStride
#define MATRIX(p)                                                              \
  matrix(p##Aligned, p##Offset, p##Rows, p##Cols, p##RowStride, p##ColStride)

extern "C" {

/// The BLAS functions products run through (CBLAS signatures with 32-bit
/// integers); null pointers turn BLAS off.
MLIR_SCAN_RUNTIME_EXPORT void mlirScanSetBlas(void *dgemm, void *sgemm) {
  blas.dgemm = reinterpret_cast<GemmFn<double>>(dgemm);
  blas.sgemm = reinterpret_cast<GemmFn<float>>(sgemm);
}

/// The number of products BLAS has computed in this process.
MLIR_SCAN_RUNTIME_EXPORT int64_t mlirScanBlasCalls() {
  return blasCalls.load(std::memory_order_relaxed);
}

/// `mlir_scan_blas_gemm_<t>`, the guard of a product in the program's loops
/// (gemm: 0 when BLAS declines, and the loops run), and `mlir_scan_gemm_<t>`,
/// a product outside them that keeps no loops (product: computed here
/// whatever the layout).
#define GEMM_ENTRY_POINTS(T, suffix)                                           \
  MLIR_SCAN_RUNTIME_EXPORT int32_t mlirScanBlasGemm##suffix(                   \
      MATRIX_ARGS(T, a), MATRIX_ARGS(T, b), MATRIX_ARGS(T, c),                 \
      int32_t accumulate) {                                                    \
    return gemm(MATRIX(a), MATRIX(b), MATRIX(c), accumulate);                  \
  }                                                                            \
  MLIR_SCAN_RUNTIME_EXPORT void mlirScanGemm##suffix(                          \
      MATRIX_ARGS(T, a), MATRIX_ARGS(T, b), MATRIX_ARGS(T, c),                 \
      int32_t accumulate) {                                                    \
    product(MATRIX(a), MATRIX(b), MATRIX(c), accumulate);                      \
  }

GEMM_ENTRY_POINTS(double, F64)
GEMM_ENTRY_POINTS(float, F32)

} // extern "C"
