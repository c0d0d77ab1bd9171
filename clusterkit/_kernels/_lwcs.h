/* Per-feature sums over the rows of a piece, for _lwcs.pyx's moments.
 *
 * Every feature has its own running sum, in row order, so the loop over features vectorises
 * without changing a single bit; `restrict` tells the compiler the outputs never alias the
 * data (without it, it does not vectorise). Min and max are written unconditionally for the
 * same reason. The data are converted to double one value at a time.
 */
#ifndef CLUSTERKIT_LWCS_H
#define CLUSTERKIT_LWCS_H

#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

/* acc[k] += w_i x_ik; low[k], high[k]: the extremes of feature k */
#define CK_DEFINE_PIECE_SUMS(NAME, T)                                                       \
static void NAME(const T* restrict X, const double* restrict w, ptrdiff_t n_rows,          \
                 ptrdiff_t n_features, double* restrict acc, double* restrict low,          \
                 double* restrict high)                                                     \
{                                                                                           \
    for (ptrdiff_t i = 0; i < n_rows; i++) {                                                \
        const T* restrict x = X + i * n_features;                                           \
        const double wi = w[i];                                                             \
        for (ptrdiff_t k = 0; k < n_features; k++) {                                        \
            const double v = x[k];                                                          \
            acc[k] += wi * v;                                                               \
            low[k] = v < low[k] ? v : low[k];                                               \
            high[k] = v > high[k] ? v : high[k];                                            \
        }                                                                                   \
    }                                                                                       \
}

/* acc[k] += w_i (x_ik - mean_k)^2 */
#define CK_DEFINE_PIECE_SQUARES(NAME, T)                                                    \
static void NAME(const T* restrict X, const double* restrict w, ptrdiff_t n_rows,          \
                 ptrdiff_t n_features, const double* restrict mean, double* restrict acc)  \
{                                                                                           \
    for (ptrdiff_t i = 0; i < n_rows; i++) {                                                \
        const T* restrict x = X + i * n_features;                                           \
        const double wi = w[i];                                                             \
        for (ptrdiff_t k = 0; k < n_features; k++) {                                        \
            const double t = x[k] - mean[k];                                                \
            acc[k] += wi * (t * t);                                                         \
        }                                                                                   \
    }                                                                                       \
}

CK_DEFINE_PIECE_SUMS(ck_piece_sums_double, double)
CK_DEFINE_PIECE_SUMS(ck_piece_sums_float, float)
CK_DEFINE_PIECE_SQUARES(ck_piece_squares_double, double)
CK_DEFINE_PIECE_SQUARES(ck_piece_squares_float, float)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
