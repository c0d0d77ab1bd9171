/* The lower bounds of dimension pruning (_pruned.pyx), formed in place of a row of gemm
 * products over p projected features:
 *
 *     row[j] <- max(a + row[j] + proj_sqnorm[j], 0)
 *               + max(|x_rest - rest_norm[j]| - tol (x_rest + rest_norm[j]) - rest_tol, 0)^2
 *
 * with a = ||x~||^2 minus the products' rounding window, so that each entry stays below
 * ||x - c_j||^2 (see _pruned.pyx). One branch-free pass, vectorised; the index of the least
 * entry is found afterwards by ck_argmin_* (_nearest.h).
 *
 * With GCC on x86-64 Linux it is compiled for AVX-512, AVX2 and the baseline, and the
 * variant for the running CPU is picked at load time; elsewhere it is compiled once.
 */
#ifndef CLUSTERKIT_PRUNED_H
#define CLUSTERKIT_PRUNED_H

#include <math.h>
#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CK_PRUNED_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CK_PRUNED_CLONES
#endif

#define CK_DEFINE_PRUNE_BOUNDS(NAME, T)                                                     \
CK_PRUNED_CLONES                                                                            \
static void NAME(T* row, ptrdiff_t n, T a, const T* proj_sqnorm, T x_rest,                 \
                 const T* rest_norm, T tol, T rest_tol)                                     \
{                                                                                           \
    _Pragma("omp simd")                                                                     \
    for (ptrdiff_t j = 0; j < n; j++) {                                                     \
        T lb = a + row[j] + proj_sqnorm[j];                                                 \
        T gap = x_rest - rest_norm[j];                                                      \
        gap = (gap < 0 ? -gap : gap) - tol * (x_rest + rest_norm[j]) - rest_tol;            \
        gap = gap > 0 ? gap : 0;                                                            \
        row[j] = (lb > 0 ? lb : 0) + gap * gap;                                             \
    }                                                                                       \
}

CK_DEFINE_PRUNE_BOUNDS(ck_prune_bounds_double, double)
CK_DEFINE_PRUNE_BOUNDS(ck_prune_bounds_float, float)

#endif
