//===- ScanSpecialFunctions.cpp - log-gamma, digamma, polygamma -----------===//
//
// The special functions of the graph builder's `gammaln`, `psi`, `tri_gamma`
// and `polygamma` (builder/ops/elemwise.py), called once per element from the
// compiled programs: libm has a thread-safe log-gamma (`lgamma_r`; `lgamma`
// writes the global `signgam`, and the programs' parallel loops call it from
// several threads) but no digamma or polygamma. Values follow SciPy's
// `scipy.special` (what PyTensor's own ops compute), poles and infinities
// included. float32 versions compute in double and round.
//
//===----------------------------------------------------------------------===//

#include "ScanRuntime.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// B_2k / (2k)!, k = 1..12: the coefficients of the asymptotic series of
/// the polygamma functions (Abramowitz and Stegun 6.4.11).
constexpr double kBernoulliOverFactorial[] = {
    1.0 / 12.0,
    -1.0 / 720.0,
    1.0 / 30240.0,
    -1.0 / 1209600.0,
    1.0 / 47900160.0,
    -691.0 / 1307674368000.0,
    1.0 / 74724249600.0,
    -3617.0 / 10670622842880000.0,
    43867.0 / 5109094217170944000.0,
    -174611.0 / 802857662698291200000.0,
    77683.0 / 14101100039391805440000.0,
    -236364091.0 / 1693824136731743669452800000.0,
};

/// B_2k / (2k) = B_2k/(2k)! * (2k-1)!, k = 1..12: the digamma function's
/// series, derived once from the table above (it is called per element).
const std::array<double, 12> &bernoulliOver2k() {
  static const std::array<double, 12> table = [] {
    std::array<double, 12> t{};
    for (int k = 1; k <= 12; ++k)
      t[k - 1] = kBernoulliOverFactorial[k - 1] * std::tgamma(2.0 * k);
    return t;
  }();
  return table;
}

bool isNonPositiveInteger(double x) { return x <= 0 && x == std::floor(x); }

/// psi^(n)(x) for x >= the shift threshold: the asymptotic series,
/// (-1)^(n+1) [(n-1)!/x^n + n!/(2 x^(n+1)) + sum_k B_2k (2k+n-1)!/(2k)! / x^(2k+n)]
/// for n >= 1, and log x - 1/(2x) - sum_k B_2k/(2k) / x^2k for n = 0.
double asymptotic(int64_t n, double x) {
  double inv = 1.0 / x, inv2 = inv * inv;
  if (n == 0) {
    const std::array<double, 12> &coefficients = bernoulliOver2k();
    double sum = 0, power = inv2;
    for (int k = 1; k <= 12; ++k, power *= inv2)
      sum += coefficients[k - 1] * power;
    return std::log(x) - 0.5 * inv - sum;
  }
  double nFactorial = std::tgamma(n + 1.0);
  double sum = std::tgamma(static_cast<double>(n)) * std::pow(inv, n) +
               0.5 * nFactorial * std::pow(inv, n + 1);
  // (2k+n-1)! / x^(2k+n), updated from k to k+1 by (2k+n)(2k+n+1) / x^2.
  double term = std::tgamma(n + 2.0) * std::pow(inv, n + 2);
  for (int k = 1; k <= 12; ++k) {
    sum += kBernoulliOverFactorial[k - 1] * term;
    term *= (2.0 * k + n) * (2.0 * k + n + 1) * inv2;
  }
  return (n % 2 == 1) ? sum : -sum;
}

/// psi^(n)(x) for x > 0: shifted by the recurrence
/// psi^(n)(x) = psi^(n)(x+1) + (-1)^(n+1) n! / x^(n+1) to where the series
/// converges quickly (its terms shrink by about ((2k+n)/(2 pi x))^2).
double polygammaPositive(int64_t n, double x) {
  double threshold = 15.0 + static_cast<double>(n);
  double shifted = 0;
  double nFactorial = std::tgamma(n + 1.0);
  for (; x < threshold; x += 1.0)
    shifted += nFactorial * std::pow(x, -static_cast<double>(n + 1));
  double sign = (n % 2 == 1) ? 1.0 : -1.0; // (-1)^(n+1)
  return asymptotic(n, x) + sign * shifted;
}

/// d^n/dy^n cot(y) as a polynomial in c = cot(y): P_0 = c,
/// P_{k+1}(c) = -(1 + c^2) P_k'(c). Evaluated at c.
double cotDerivative(int64_t n, double c) {
  std::vector<double> p{0.0, 1.0}; // coefficients of c^0, c^1
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> q(p.size() + 1, 0.0);
    for (size_t i = 1; i < p.size(); ++i) {
      double d = static_cast<double>(i) * p[i]; // c^(i-1) in P'
      q[i - 1] -= d;
      q[i + 1] -= d;
    }
    p = std::move(q);
  }
  double value = 0;
  for (size_t i = p.size(); i-- > 0;)
    value = value * c + p[i];
  return value;
}

/// Above this order n! is not a double, and the series' terms (n! over
/// powers of x) overflow or vanish: the result was NaN already, after a
/// shift loop of n steps (and a cot derivative of n^2 work for x < 0), so
/// that polygamma(10**15, x) ran for days.
constexpr int64_t kMaxOrder = 170;

/// psi^(n)(x), n >= 0 (n = 0: digamma), as scipy.special.polygamma (but
/// NaN above kMaxOrder at finite non-pole x, where SciPy's is mostly
/// infinite).
double polygamma(int64_t n, double x) {
  if (n < 0 || std::isnan(x))
    return kNaN;
  double sign = (n % 2 == 1) ? 1.0 : -1.0; // (-1)^(n+1)
  if (x == kInf)
    return n == 0 ? kInf : sign * 0.0;
  if (x == -kInf || isNonPositiveInteger(x)) {
    if (n == 0) // digamma: -inf at +0, +inf at -0 (its limits), NaN at -1, -2, ...
      return x == 0 ? (std::signbit(x) ? kInf : -kInf) : kNaN;
    return sign * kInf;
  }
  if (n > kMaxOrder)
    return kNaN;
  if (x > 0)
    return polygammaPositive(n, x);
  // Reflection: psi^(n)(x) = (-1)^n psi^(n)(1-x) - pi^(n+1) P_n(cot(pi x)),
  // with cot(pi x) = cot(pi r) for the exact remainder r = x - nearest integer:
  // pi * x itself is rounded by about |x| ulps, which near the poles (and at
  // the half-integers, where cot is 0) is most of the result.
  double r = x - std::nearbyint(x);
  double c = std::cos(kPi * r) / std::sin(kPi * r);
  double reflected = polygammaPositive(n, 1.0 - x);
  return ((n % 2 == 0) ? reflected : -reflected) -
         std::pow(kPi, static_cast<double>(n + 1)) * cotDerivative(n, c);
}

} // namespace

/// log |Gamma(x)| (libm's lgamma_r, which leaves `signgam` alone).
MLIR_SCAN_RUNTIME_EXPORT double __mlir_scan_lgamma(double x) {
  int sign;
  return lgamma_r(x, &sign);
}

MLIR_SCAN_RUNTIME_EXPORT float __mlir_scan_lgammaf(float x) {
  int sign;
  return lgammaf_r(x, &sign);
}

MLIR_SCAN_RUNTIME_EXPORT double __mlir_scan_digamma(double x) { return polygamma(0, x); }

MLIR_SCAN_RUNTIME_EXPORT float __mlir_scan_digammaf(float x) {
  return static_cast<float>(polygamma(0, x));
}

MLIR_SCAN_RUNTIME_EXPORT double __mlir_scan_polygamma(int64_t n, double x) { return polygamma(n, x); }

MLIR_SCAN_RUNTIME_EXPORT float __mlir_scan_polygammaf(int64_t n, float x) {
  return static_cast<float>(polygamma(n, x));
}
