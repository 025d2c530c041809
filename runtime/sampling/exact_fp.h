// Include LAST, and only from .cpp files of runtime/sampling/ whose arithmetic decides which token
// is drawn. A seed must select the same token on every platform, so these files forbid fusing
// a*b+c into one FMA instruction (which AArch64 and FMA-enabled x86 builds would otherwise do,
// rounding differently). Every other operation used is an IEEE-754 basic operation, exact or
// correctly rounded everywhere.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
