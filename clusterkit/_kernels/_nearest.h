/* Vectorised argmin, and the nearest centre of one sample by a direct loop for few features
 * (where gemm wastes work).
 *
 * The centres are stored transposed (n_features x n_clusters), so the loop over clusters is
 * contiguous and vectorises. Pass 1 writes every squared distance to a scratch row and takes
 * their minimum with a SIMD reduction; pass 2 finds the first index holding that minimum,
 * testing blocks of 16 with a SIMD "any equal" before looking inside one. The comparison is
 * against the stored values, so it is exact, and ties go to the lowest index.
 *
 * With GCC on x86-64 Linux each function is compiled for AVX-512, AVX2 and the baseline, and
 * the variant for the running CPU is picked at load time; elsewhere it is compiled once.
 */
#ifndef CLUSTERKIT_NEAREST_H
#define CLUSTERKIT_NEAREST_H

#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CK_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CK_TARGET_CLONES
#endif

/* No fused multiply-add in these loops: the distances must round exactly as in the scalar
 * kernels (_dist.pxd), so that every E-step finds the same nearest centre and distance. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

#define CK_FIND_BLOCK 16

/* Index of the first occurrence of the value m, which is known to be in row[0:n]. */
#define CK_FIND_FIRST(row, n, m, j0)                                                        \
    do {                                                                                    \
        for (; j0 + CK_FIND_BLOCK <= n; j0 += CK_FIND_BLOCK) {                              \
            int hit = 0;                                                                    \
            _Pragma("omp simd reduction(|:hit)")                                            \
            for (ptrdiff_t l = 0; l < CK_FIND_BLOCK; l++) hit |= row[j0 + l] == m;          \
            if (hit) break;                                                                 \
        }                                                                                   \
        while (row[j0] != m) j0++;                                                          \
    } while (0)

/* Index of the smallest entry of row[0:n] (n >= 1), ties to the lowest index. */
#define CK_DEFINE_ARGMIN(NAME, T)                                                           \
CK_TARGET_CLONES                                                                            \
static ptrdiff_t NAME(const T* row, ptrdiff_t n)                                            \
{                                                                                           \
    T m = row[0];                                                                           \
    _Pragma("omp simd reduction(min:m)")                                                    \
    for (ptrdiff_t j = 1; j < n; j++) m = row[j] < m ? row[j] : m;                          \
    ptrdiff_t j0 = 0;                                                                       \
    CK_FIND_FIRST(row, n, m, j0);                                                           \
    return j0;                                                                              \
}

CK_DEFINE_ARGMIN(ck_argmin_double, double)
CK_DEFINE_ARGMIN(ck_argmin_float, float)

/* FIXED_D > 0 makes the feature count a compile-time constant (the feature loop unrolls);
 * FIXED_D = 0 reads it from the argument. */
#define CK_DEFINE_NEAREST(NAME, T, FIXED_D)                                                 \
CK_TARGET_CLONES                                                                            \
static ptrdiff_t NAME(const T* x, const T* centers_T, ptrdiff_t n_clusters,                 \
                      ptrdiff_t n_features_arg, T* scratch, T* min_dist2)                   \
{                                                                                           \
    const ptrdiff_t n_features = FIXED_D > 0 ? FIXED_D : n_features_arg;                    \
    T m;                                                                                    \
    if (FIXED_D > 0) {                                                                      \
        /* one pass: the unrolled feature loop inside the vectorised cluster loop */        \
        _Pragma("omp simd")                                                                 \
        for (ptrdiff_t j = 0; j < n_clusters; j++) {                                        \
            T d = 0;                                                                        \
            for (ptrdiff_t k = 0; k < n_features; k++) {                                    \
                const T t = x[k] - centers_T[k * n_clusters + j];                           \
                d += t * t;                                                                 \
            }                                                                               \
            scratch[j] = d;                                                                 \
        }                                                                                   \
    } else {                                                                                \
        for (ptrdiff_t j = 0; j < n_clusters; j++) scratch[j] = 0;                          \
        for (ptrdiff_t k = 0; k < n_features; k++) {                                        \
            const T xk = x[k];                                                              \
            const T* c = centers_T + k * n_clusters;                                        \
            _Pragma("omp simd")                                                             \
            for (ptrdiff_t j = 0; j < n_clusters; j++) {                                    \
                const T t = xk - c[j];                                                      \
                scratch[j] += t * t;                                                        \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    m = scratch[0];                                                                         \
    _Pragma("omp simd reduction(min:m)")                                                    \
    for (ptrdiff_t j = 1; j < n_clusters; j++) m = scratch[j] < m ? scratch[j] : m;         \
    ptrdiff_t j0 = 0;                                                                       \
    CK_FIND_FIRST(scratch, n_clusters, m, j0);                                              \
    *min_dist2 = m;                                                                         \
    return j0;                                                                              \
}

CK_DEFINE_NEAREST(ck_nearest_double_any, double, 0)
CK_DEFINE_NEAREST(ck_nearest_double_1, double, 1)
CK_DEFINE_NEAREST(ck_nearest_double_2, double, 2)
CK_DEFINE_NEAREST(ck_nearest_double_3, double, 3)
CK_DEFINE_NEAREST(ck_nearest_double_4, double, 4)
CK_DEFINE_NEAREST(ck_nearest_float_any, float, 0)
CK_DEFINE_NEAREST(ck_nearest_float_1, float, 1)
CK_DEFINE_NEAREST(ck_nearest_float_2, float, 2)
CK_DEFINE_NEAREST(ck_nearest_float_3, float, 3)
CK_DEFINE_NEAREST(ck_nearest_float_4, float, 4)

typedef ptrdiff_t (*ck_nearest_double_fn)(const double*, const double*, ptrdiff_t, ptrdiff_t,
                                          double*, double*);
typedef ptrdiff_t (*ck_nearest_float_fn)(const float*, const float*, ptrdiff_t, ptrdiff_t,
                                         float*, float*);

/* The variant for a feature count: specialised up to 4 features, generic above. */
static ck_nearest_double_fn ck_nearest_double_for(ptrdiff_t n_features) {
    switch (n_features) {
        case 1: return ck_nearest_double_1;
        case 2: return ck_nearest_double_2;
        case 3: return ck_nearest_double_3;
        case 4: return ck_nearest_double_4;
        default: return ck_nearest_double_any;
    }
}

static ck_nearest_float_fn ck_nearest_float_for(ptrdiff_t n_features) {
    switch (n_features) {
        case 1: return ck_nearest_float_1;
        case 2: return ck_nearest_float_2;
        case 3: return ck_nearest_float_3;
        case 4: return ck_nearest_float_4;
        default: return ck_nearest_float_any;
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
