/* Vectorised argmin, and the nearest centre of one sample by a direct loop for few features
 * (where gemm wastes work).
 *
 * The centres are stored transposed (n_features x n_clusters), so the loop over clusters is
 * contiguous and vectorises. Pass 1 writes every squared distance to a scratch row and takes
 * their minimum with a SIMD reduction; pass 2 finds the first index holding that minimum,
 * testing blocks of 16 with a SIMD "any equal" before looking inside one. The comparison is
 * against the stored values, so it is exact, and ties go to the lowest index. With GCC, up
 * to 8 features take one pass that keeps the minimum in registers instead (below); on the
 * 2-D BIRCH grid it assigns 1.3-1.5 times as many samples per second.
 *
 * With GCC on x86-64 Linux each function is compiled for AVX-512, AVX2 and the baseline, and
 * the variant for the running CPU is picked at load time; elsewhere it is compiled once.
 */
#ifndef CLUSTERKIT_NEAREST_H
#define CLUSTERKIT_NEAREST_H

#include <math.h>
#include <stddef.h>
#include <string.h>

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
/* Every kernel module includes this header (through _dist.pxd) and uses only some of it. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

#define CK_FIND_BLOCK 16

/* Index of the first occurrence of the value m in row[0:n]. m is the row's minimum, but a NaN
 * (from NaN centres or overflowing distances) equals nothing: the search then stops at the
 * last index, so the result is always inside [0, n) and the caller refuses the NaN later. */
#define CK_FIND_FIRST(row, n, m, j0)                                                        \
    do {                                                                                    \
        for (; j0 + CK_FIND_BLOCK <= n; j0 += CK_FIND_BLOCK) {                              \
            int hit = 0;                                                                    \
            _Pragma("omp simd reduction(|:hit)")                                            \
            for (ptrdiff_t l = 0; l < CK_FIND_BLOCK; l++) hit |= row[j0 + l] == m;          \
            if (hit) break;                                                                 \
        }                                                                                   \
        /* bounded: with NaN entries m may be found nowhere; the last index is returned */  \
        while (j0 < n - 1 && row[j0] != m) j0++;                                            \
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

/* Number of entries of row[0:n] at most limit (the near-ties of a gemm row's minimum). */
#define CK_DEFINE_COUNT_AT_MOST(NAME, T)                                                    \
CK_TARGET_CLONES                                                                            \
static ptrdiff_t NAME(const T* row, ptrdiff_t n, T limit)                                   \
{                                                                                           \
    ptrdiff_t count = 0;                                                                    \
    _Pragma("omp simd reduction(+:count)")                                                  \
    for (ptrdiff_t j = 0; j < n; j++) count += row[j] <= limit;                             \
    return count;                                                                           \
}

CK_DEFINE_COUNT_AT_MOST(ck_count_at_most_double, double)
CK_DEFINE_COUNT_AT_MOST(ck_count_at_most_float, float)

/* The smallest and second smallest of row[j] + add[j], j < n (n >= 1; two equal smallest
 * values give second == best), and the first index of the smallest: one vectorised pass in
 * which each lane keeps its two smallest values, then a search for the index (the sums are
 * formed again, rounded the same way). A block of centres of a gemm tile: the argmin and
 * the gap to the runner-up (the near-tie test) without a stored row or a second pass. */
#define CK_DEFINE_BEST_TWO(NAME, T)                                                         \
CK_TARGET_CLONES                                                                            \
static ptrdiff_t NAME(const T* row, const T* add, ptrdiff_t n, T* best, T* second)          \
{                                                                                           \
    T m1[CK_FIND_BLOCK], m2[CK_FIND_BLOCK];                                                 \
    ptrdiff_t j = 0, l;                                                                     \
    for (l = 0; l < CK_FIND_BLOCK; l++) m1[l] = m2[l] = (T) INFINITY;                       \
    for (; j + CK_FIND_BLOCK <= n; j += CK_FIND_BLOCK) {                                    \
        _Pragma("omp simd")                                                                 \
        for (l = 0; l < CK_FIND_BLOCK; l++) {                                               \
            const T v = row[j + l] + add[j + l];                                            \
            const T hi = m1[l] > v ? m1[l] : v;                                             \
            m2[l] = m2[l] < hi ? m2[l] : hi;                                                \
            m1[l] = m1[l] < v ? m1[l] : v;                                                  \
        }                                                                                   \
    }                                                                                       \
    for (l = 0; j < n; j++, l++) {                                                          \
        const T v = row[j] + add[j];                                                        \
        const T hi = m1[l] > v ? m1[l] : v;                                                 \
        m2[l] = m2[l] < hi ? m2[l] : hi;                                                    \
        m1[l] = m1[l] < v ? m1[l] : v;                                                      \
    }                                                                                       \
    T b = m1[0], s = m2[0];                                                                 \
    for (l = 1; l < CK_FIND_BLOCK; l++) {                                                   \
        const T hi = b > m1[l] ? b : m1[l];                                                 \
        s = s < hi ? s : hi;                                                                \
        s = s < m2[l] ? s : m2[l];                                                          \
        b = b < m1[l] ? b : m1[l];                                                          \
    }                                                                                       \
    *best = b;                                                                              \
    *second = s;                                                                            \
    /* bounded: with NaN entries b may be found nowhere; the last index is returned */      \
    for (j = 0; j < n - 1 && row[j] + add[j] != b; j++) {}                                  \
    return j;                                                                               \
}

CK_DEFINE_BEST_TWO(ck_best_two_double, double)
CK_DEFINE_BEST_TWO(ck_best_two_float, float)

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
CK_DEFINE_NEAREST(ck_nearest_float_any, float, 0)

#if defined(__GNUC__)
/* With GCC vector types, a few features get a single pass instead: each lane keeps the
 * smallest distance it has seen and its index (strictly smaller replaces, so a lane keeps
 * its first minimum), and nothing is stored. The lanes are then reduced to the smallest
 * value and, among lanes holding it, the smallest index; the clusters after the last full
 * vector are compared one by one. Each distance is summed exactly as in the loop above, so
 * labels and distances are the same bits, ties still go to the lowest index, and the
 * separate minimum and search passes over a stored row are gone. */
typedef double ck_vec_d __attribute__((vector_size(64)));
typedef long long ck_vec_dj __attribute__((vector_size(64)));
typedef float ck_vec_f __attribute__((vector_size(64)));
typedef int ck_vec_fj __attribute__((vector_size(64)));

/* The smallest of the lanes' minima (ties to the smaller index), then the clusters after
 * the last full vector one by one: m and m_j end as the nearest cluster's distance and
 * index. Shared by the one- and four-sample variants below. */
#define CK_LANES_THEN_TAIL(T, L, D, best, best_j, x, centers_T, j0, n_clusters, m, m_j)     \
    do {                                                                                    \
        m = (best)[0];                                                                      \
        m_j = (best_j)[0];                                                                  \
        for (ptrdiff_t l_ = 1; l_ < L; l_++)                                                \
            if ((best)[l_] < m || ((best)[l_] == m && (best_j)[l_] < m_j)) {                \
                m = (best)[l_];                                                             \
                m_j = (best_j)[l_];                                                         \
            }                                                                               \
        for (ptrdiff_t j_ = j0; j_ < n_clusters; j_++) {                                    \
            T d_ = 0;                                                                       \
            for (ptrdiff_t k_ = 0; k_ < D; k_++) {                                          \
                const T t_ = (x)[k_] - centers_T[k_ * n_clusters + j_];                     \
                d_ += t_ * t_;                                                              \
            }                                                                               \
            if (d_ < m) {                                                                   \
                m = d_;                                                                     \
                m_j = j_;                                                                   \
            }                                                                               \
        }                                                                                   \
    } while (0)

#define CK_DEFINE_NEAREST_FUSED(NAME, T, V, VJ, D)                                          \
CK_TARGET_CLONES                                                                            \
static ptrdiff_t NAME(const T* x, const T* centers_T, ptrdiff_t n_clusters,                 \
                      ptrdiff_t n_features_arg, T* scratch, T* min_dist2)                   \
{                                                                                           \
    enum { L = sizeof(V) / sizeof(T) };                                                     \
    V best, c, t, d;                                                                        \
    VJ best_j = {0}, j_vec, below;                                                          \
    ptrdiff_t j = 0, l;                                                                     \
    (void)n_features_arg;                                                                   \
    (void)scratch;                                                                          \
    for (l = 0; l < L; l++) {                                                               \
        best[l] = (T)INFINITY;                                                              \
        j_vec[l] = l;                                                                       \
    }                                                                                       \
    for (; j + L <= n_clusters; j += L) {                                                   \
        d = (V){0};                                                                         \
        for (ptrdiff_t k = 0; k < D; k++) {                                                 \
            memcpy(&c, centers_T + k * n_clusters + j, sizeof c);                           \
            t = x[k] - c;                                                                   \
            d += t * t;                                                                     \
        }                                                                                   \
        below = (VJ)(d < best);                                                             \
        best = (V)(((VJ)d & below) | ((VJ)best & ~below));                                  \
        best_j = (j_vec & below) | (best_j & ~below);                                       \
        j_vec += L;                                                                         \
    }                                                                                       \
    T m;                                                                                    \
    ptrdiff_t m_j;                                                                          \
    CK_LANES_THEN_TAIL(T, L, D, best, best_j, x, centers_T, j, n_clusters, m, m_j);          \
    *min_dist2 = m;                                                                         \
    return m_j;                                                                             \
}

CK_DEFINE_NEAREST_FUSED(ck_nearest_double_1, double, ck_vec_d, ck_vec_dj, 1)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_2, double, ck_vec_d, ck_vec_dj, 2)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_3, double, ck_vec_d, ck_vec_dj, 3)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_4, double, ck_vec_d, ck_vec_dj, 4)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_5, double, ck_vec_d, ck_vec_dj, 5)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_6, double, ck_vec_d, ck_vec_dj, 6)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_7, double, ck_vec_d, ck_vec_dj, 7)
CK_DEFINE_NEAREST_FUSED(ck_nearest_double_8, double, ck_vec_d, ck_vec_dj, 8)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_1, float, ck_vec_f, ck_vec_fj, 1)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_2, float, ck_vec_f, ck_vec_fj, 2)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_3, float, ck_vec_f, ck_vec_fj, 3)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_4, float, ck_vec_f, ck_vec_fj, 4)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_5, float, ck_vec_f, ck_vec_fj, 5)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_6, float, ck_vec_f, ck_vec_fj, 6)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_7, float, ck_vec_f, ck_vec_fj, 7)
CK_DEFINE_NEAREST_FUSED(ck_nearest_float_8, float, ck_vec_f, ck_vec_fj, 8)
#else
CK_DEFINE_NEAREST(ck_nearest_double_1, double, 1)
CK_DEFINE_NEAREST(ck_nearest_double_2, double, 2)
CK_DEFINE_NEAREST(ck_nearest_double_3, double, 3)
CK_DEFINE_NEAREST(ck_nearest_double_4, double, 4)
CK_DEFINE_NEAREST(ck_nearest_double_5, double, 5)
CK_DEFINE_NEAREST(ck_nearest_double_6, double, 6)
CK_DEFINE_NEAREST(ck_nearest_double_7, double, 7)
CK_DEFINE_NEAREST(ck_nearest_double_8, double, 8)
CK_DEFINE_NEAREST(ck_nearest_float_1, float, 1)
CK_DEFINE_NEAREST(ck_nearest_float_2, float, 2)
CK_DEFINE_NEAREST(ck_nearest_float_3, float, 3)
CK_DEFINE_NEAREST(ck_nearest_float_4, float, 4)
CK_DEFINE_NEAREST(ck_nearest_float_5, float, 5)
CK_DEFINE_NEAREST(ck_nearest_float_6, float, 6)
CK_DEFINE_NEAREST(ck_nearest_float_7, float, 7)
CK_DEFINE_NEAREST(ck_nearest_float_8, float, 8)
#endif

#if defined(__GNUC__)
/* Four samples at once, for up to 8 features: each centre vector loaded is used for four
 * distances, and the four independent sums (and their running minima) keep the pipeline
 * full; one sample at a time waits on its chain of additions. Vectors of 32 bytes keep the
 * four rows' sums, minima and indices in the 16 registers of AVX2. Each distance is summed
 * exactly as in the single-sample loops, so labels and distances are the same bits. */
typedef double ck_vec4_d __attribute__((vector_size(32)));
typedef long long ck_vec4_dj __attribute__((vector_size(32)));
typedef float ck_vec4_f __attribute__((vector_size(32)));
typedef int ck_vec4_fj __attribute__((vector_size(32)));

#define CK_DEFINE_NEAREST4(NAME, T, V, VJ, D)                                               \
CK_TARGET_CLONES                                                                            \
static void NAME(const T* x, const T* centers_T, ptrdiff_t n_clusters, int* labels,         \
                 T* min_dist2)                                                              \
{                                                                                           \
    enum { L = sizeof(V) / sizeof(T) };                                                     \
    V best[4], d[4], c, t;                                                                  \
    VJ best_j[4], j_vec, below;                                                             \
    ptrdiff_t j = 0, l, r;                                                                  \
    for (l = 0; l < L; l++) j_vec[l] = l;                                                   \
    for (r = 0; r < 4; r++) {                                                               \
        for (l = 0; l < L; l++) best[r][l] = (T)INFINITY;                                   \
        best_j[r] = (VJ){0};                                                                \
    }                                                                                       \
    for (; j + L <= n_clusters; j += L) {                                                   \
        for (r = 0; r < 4; r++) d[r] = (V){0};                                              \
        for (ptrdiff_t k = 0; k < D; k++) {                                                 \
            memcpy(&c, centers_T + k * n_clusters + j, sizeof c);                           \
            for (r = 0; r < 4; r++) {                                                       \
                t = x[r * D + k] - c;                                                       \
                d[r] += t * t;                                                              \
            }                                                                               \
        }                                                                                   \
        for (r = 0; r < 4; r++) {                                                           \
            below = (VJ)(d[r] < best[r]);                                                   \
            best[r] = (V)(((VJ)d[r] & below) | ((VJ)best[r] & ~below));                     \
            best_j[r] = (j_vec & below) | (best_j[r] & ~below);                             \
        }                                                                                   \
        j_vec += L;                                                                         \
    }                                                                                       \
    for (r = 0; r < 4; r++) {                                                               \
        T m;                                                                                \
        ptrdiff_t m_j;                                                                      \
        CK_LANES_THEN_TAIL(T, L, D, best[r], best_j[r], x + r * D, centers_T, j, n_clusters, \
                           m, m_j);                                                         \
        labels[r] = (int)m_j;                                                               \
        min_dist2[r] = m;                                                                   \
    }                                                                                       \
}

#define CK_DEFINE_NEAREST4_ALL(T, V, VJ)                                                    \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_1, T, V, VJ, 1)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_2, T, V, VJ, 2)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_3, T, V, VJ, 3)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_4, T, V, VJ, 4)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_5, T, V, VJ, 5)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_6, T, V, VJ, 6)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_7, T, V, VJ, 7)                                        \
CK_DEFINE_NEAREST4(ck_nearest4_##T##_8, T, V, VJ, 8)

CK_DEFINE_NEAREST4_ALL(double, ck_vec4_d, ck_vec4_dj)
CK_DEFINE_NEAREST4_ALL(float, ck_vec4_f, ck_vec4_fj)
#endif

typedef void (*ck_nearest4_double_fn)(const double*, const double*, ptrdiff_t, int*, double*);
typedef void (*ck_nearest4_float_fn)(const float*, const float*, ptrdiff_t, int*, float*);

/* The four-sample variant for a feature count, or NULL (more than 8 features, or no GCC
 * vector types): the caller then takes one sample at a time. */
#if defined(__GNUC__)
#define CK_NEAREST4_FOR(T)                                                                  \
static ck_nearest4_##T##_fn ck_nearest4_##T##_for(ptrdiff_t n_features) {                 \
    switch (n_features) {                                                                   \
        case 1: return ck_nearest4_##T##_1;                                                 \
        case 2: return ck_nearest4_##T##_2;                                                 \
        case 3: return ck_nearest4_##T##_3;                                                 \
        case 4: return ck_nearest4_##T##_4;                                                 \
        case 5: return ck_nearest4_##T##_5;                                                 \
        case 6: return ck_nearest4_##T##_6;                                                 \
        case 7: return ck_nearest4_##T##_7;                                                 \
        case 8: return ck_nearest4_##T##_8;                                                 \
        default: return NULL;                                                               \
    }                                                                                       \
}
#else
#define CK_NEAREST4_FOR(T)                                                                  \
static ck_nearest4_##T##_fn ck_nearest4_##T##_for(ptrdiff_t n_features) {                 \
    (void)n_features;                                                                       \
    return NULL;                                                                            \
}
#endif
CK_NEAREST4_FOR(double)
CK_NEAREST4_FOR(float)

typedef ptrdiff_t (*ck_nearest_double_fn)(const double*, const double*, ptrdiff_t, ptrdiff_t,
                                          double*, double*);
typedef ptrdiff_t (*ck_nearest_float_fn)(const float*, const float*, ptrdiff_t, ptrdiff_t,
                                         float*, float*);

/* The variant for a feature count: specialised up to 8 features (the direct loop's range,
 * GEMM_MIN_FEATURES in _dist.pxd), generic above. */
static ck_nearest_double_fn ck_nearest_double_for(ptrdiff_t n_features) {
    switch (n_features) {
        case 1: return ck_nearest_double_1;
        case 2: return ck_nearest_double_2;
        case 3: return ck_nearest_double_3;
        case 4: return ck_nearest_double_4;
        case 5: return ck_nearest_double_5;
        case 6: return ck_nearest_double_6;
        case 7: return ck_nearest_double_7;
        case 8: return ck_nearest_double_8;
        default: return ck_nearest_double_any;
    }
}

static ck_nearest_float_fn ck_nearest_float_for(ptrdiff_t n_features) {
    switch (n_features) {
        case 1: return ck_nearest_float_1;
        case 2: return ck_nearest_float_2;
        case 3: return ck_nearest_float_3;
        case 4: return ck_nearest_float_4;
        case 5: return ck_nearest_float_5;
        case 6: return ck_nearest_float_6;
        case 7: return ck_nearest_float_7;
        case 8: return ck_nearest_float_8;
        default: return ck_nearest_float_any;
    }
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
