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

/* As in _sqdist.h: compiled for AVX-512, AVX2 and the baseline (GCC, x86-64 Linux). Every
 * vector operation is element-wise and contraction is off, so all variants give the same
 * bits. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CK_LWCS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CK_LWCS_CLONES
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

/* acc[k] += w_i x_ik, and (EXTREMES) low[k], high[k]: the extremes of feature k */
#define CK_DEFINE_PIECE_SUMS(NAME, T, EXTREMES)                                             \
CK_LWCS_CLONES                                                                              \
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
            if (EXTREMES) {                                                                 \
                low[k] = v < low[k] ? v : low[k];                                           \
                high[k] = v > high[k] ? v : high[k];                                        \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

/* acc[k] += w_i (x_ik - mean_k)^2 */
#define CK_DEFINE_PIECE_SQUARES(NAME, T)                                                    \
CK_LWCS_CLONES                                                                              \
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

/* ||x - mean||^2 in eight lanes (lane l sums features l, l + 8, ...), folded in a fixed
 * order: the same bits for every instruction set and for any block the row is in. */
#define CK_DEFINE_ROW_DIST2(NAME, T)                                                        \
CK_LWCS_CLONES                                                                              \
static double NAME(const T* restrict x, const double* restrict mean, ptrdiff_t n_features) \
{                                                                                           \
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;                                       \
    ptrdiff_t k = 0;                                                                        \
    for (; k + 8 <= n_features; k += 8)                                                     \
        for (int l = 0; l < 8; l++) {                                                       \
            const double t = x[k + l] - mean[k + l];                                        \
            s[l] += t * t;                                                                  \
        }                                                                                   \
    for (; k < n_features; k++) {                                                           \
        const double t = x[k] - mean[k];                                                    \
        tail += t * t;                                                                      \
    }                                                                                       \
    return (((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))) + tail;      \
}

CK_DEFINE_ROW_DIST2(ck_row_dist2_double, double)
CK_DEFINE_ROW_DIST2(ck_row_dist2_float, float)
CK_DEFINE_PIECE_SUMS(ck_piece_sums_double, double, 0)
CK_DEFINE_PIECE_SUMS(ck_piece_sums_float, float, 0)
CK_DEFINE_PIECE_SUMS(ck_piece_sums_extremes_double, double, 1)
CK_DEFINE_PIECE_SUMS(ck_piece_sums_extremes_float, float, 1)
CK_DEFINE_PIECE_SQUARES(ck_piece_squares_double, double)
CK_DEFINE_PIECE_SQUARES(ck_piece_squares_float, float)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
