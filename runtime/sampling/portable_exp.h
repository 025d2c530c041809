// portable_exp: e^x computed only with IEEE-754 basic operations, so it returns the same bits on
// every platform (libm's exp differs between implementations in the last bit, which could flip a
// seeded draw). Relative error about 2e-16; enough for probabilities, not a libm replacement.
#pragma once

namespace lmrt {

// e^x; 0 below about -745, +inf above about 709.78, NaN for NaN.
double portable_exp(double x);

}  // namespace lmrt
