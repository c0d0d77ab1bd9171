/* Squared Euclidean distance of two rows, summed in two 64-byte vectors of partial sums.
 *
 * A single running sum waits for each addition to finish before the next; independent sums
 * keep the pipeline full and vectorise, which matters with many features. The sums are GCC
 * vector types of 64 bytes (16 floats or 8 doubles): the compiler maps them onto one AVX-512
 * register, two AVX2 or four SSE ones, and since every operation is element-wise (and
 * contraction into fused multiply-adds is off), every instruction set gives the same bits.
 * Lane l of the first vector sums features l, l + 2L, l + 4L, ..., lane l of the second
 * l + L, l + 3L, ... (L lanes per vector); a last full vector goes to the first; the features
 * after that go to a scalar sum; the vectors are added and folded in halves. Below L features
 * only the scalar sum is used, so the result equals the single-sum loop of _dist.pxd
 * (_sqdist) bit for bit. The same sums of one row's own squares (SUB = 0) give its squared
 * norm (ck_sqnorm_wide_*, called with b = a).
 *
 * Leaving the vectorisation to the compiler (a plain array of eight sums) gave AVX-512 code
 * about four times slower than this one for 784 float32 features.
 *
 * With GCC on x86-64 Linux the function is compiled for AVX-512, AVX2 and the baseline, and
 * the variant for the running CPU is picked at load time; elsewhere it is compiled once.
 */
#ifndef CLUSTERKIT_SQDIST_H
#define CLUSTERKIT_SQDIST_H

#include <stddef.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define CK_SQDIST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CK_SQDIST_CLONES
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

/* Ask for the cache lines of a row that will be read soon (random rows defeat the hardware
 * prefetcher). */
static inline void ck_prefetch_row(const void* row, ptrdiff_t n_bytes)
{
#if defined(__GNUC__)
    for (ptrdiff_t off = 0; off < n_bytes; off += 64)
        __builtin_prefetch((const char*)row + off, 0, 3);
#else
    (void)row;
    (void)n_bytes;
#endif
}

/* The features after the last full vector, into the scalar sum (both variants below). */
#define CK_SQDIST_TAIL(T, SUB)                                                              \
    for (; k < n; k++) {                                                                    \
        T d = SUB ? a[k] - b[k] : a[k];                                                     \
        tail += d * d;                                                                      \
    }

/* Add the L partial sums of V (a vector or an array) in halves, into V[0]. */
#define CK_SQDIST_FOLD(V)                                                                   \
    for (int w = L / 2; w >= 1; w /= 2)                                                     \
        for (int l = 0; l < w; l++)                                                         \
            V[l] += V[l + w];

/* The early stop of the _below variants, after 1, 2, 4, 8, ... pairs of vectors: the two
 * sums added into f (CK_SQDIST_SUM_F of each branch) and folded, returned at `limit`. */
#define CK_SQDIST_STOP_EARLY                                                                \
    pairs++;                                                                                \
    if ((pairs & (pairs - 1)) == 0) {                                                       \
        CK_SQDIST_SUM_F                                                                     \
        CK_SQDIST_FOLD(f)                                                                   \
        if (f[0] >= limit)                                                                  \
            return f[0];                                                                    \
    }

#if defined(__GNUC__)
typedef float ck_vec_float __attribute__((vector_size(64)));
typedef double ck_vec_double __attribute__((vector_size(64)));

/* The two sums into f, for CK_SQDIST_STOP_EARLY. */
#define CK_SQDIST_SUM_F f = s0 + s1;

/* One step of the main loop, the features k .. k + 2L - 1: the first L into s0, the next L
 * into s1 (unaligned vector loads). */
#define CK_SQDIST_VEC_PAIR(SUB)                                                             \
    memcpy(&va, a + k, sizeof va);                                                          \
    memcpy(&vb, b + k, sizeof vb);                                                          \
    t = SUB ? va - vb : va;                                                                 \
    s0 += t * t;                                                                            \
    memcpy(&va, a + k + L, sizeof va);                                                      \
    memcpy(&vb, b + k + L, sizeof vb);                                                      \
    t = SUB ? va - vb : va;                                                                 \
    s1 += t * t;

/* After the main loop: a last full vector into s0, the rest into the scalar sum, then the
 * two vectors added and folded. */
#define CK_SQDIST_VEC_FINISH(T, SUB)                                                        \
    if (k + L <= n) {                                                                       \
        memcpy(&va, a + k, sizeof va);                                                      \
        memcpy(&vb, b + k, sizeof vb);                                                      \
        t = SUB ? va - vb : va;                                                             \
        s0 += t * t;                                                                        \
        k += L;                                                                             \
    }                                                                                       \
    CK_SQDIST_TAIL(T, SUB)                                                                  \
    s0 += s1;                                                                               \
    CK_SQDIST_FOLD(s0)                                                                      \
    return s0[0] + tail;

#define CK_DEFINE_SQDIST_WIDE(NAME, T, V, SUB)                                              \
CK_SQDIST_CLONES                                                                            \
static T NAME(const T* a, const T* b, ptrdiff_t n)                                          \
{                                                                                           \
    enum { L = sizeof(V) / sizeof(T) };                                                     \
    V s0 = {0}, s1 = {0}, va, vb, t;                                                        \
    T tail = 0;                                                                             \
    ptrdiff_t k = 0;                                                                        \
    for (; k + 2 * L <= n; k += 2 * L) {                                                    \
        CK_SQDIST_VEC_PAIR(SUB)                                                             \
    }                                                                                       \
    CK_SQDIST_VEC_FINISH(T, SUB)                                                            \
}

CK_DEFINE_SQDIST_WIDE(ck_sqdist_wide_double, double, ck_vec_double, 1)
CK_DEFINE_SQDIST_WIDE(ck_sqdist_wide_float, float, ck_vec_float, 1)
CK_DEFINE_SQDIST_WIDE(ck_sqnorm_wide_double, double, ck_vec_double, 0)
CK_DEFINE_SQDIST_WIDE(ck_sqnorm_wide_float, float, ck_vec_float, 0)

/* The same sums, stopped early where they reach `limit`: after 1, 2, 4, 8, ... pairs of
 * vectors (rows rotated to their principal axes gather most of a distance in the first
 * ones) the two vectors are added and folded as at the end. Every term is >= 0 and every
 * addition rounds monotonically, so that fold is at most the full result: once it reaches
 * `limit` it is returned (a value in [limit, the distance]); otherwise the result is
 * ck_sqdist_wide's, bit for bit. A caller that only asks whether the distance is below
 * `limit` gets the same answer for less work (greedy k-means++ scoring far rows). */
#define CK_DEFINE_SQDIST_WIDE_BELOW(NAME, T, V)                                             \
CK_SQDIST_CLONES                                                                            \
static T NAME(const T* a, const T* b, ptrdiff_t n, T limit)                                 \
{                                                                                           \
    enum { L = sizeof(V) / sizeof(T) };                                                     \
    V s0 = {0}, s1 = {0}, va, vb, t, f;                                                     \
    T tail = 0;                                                                             \
    ptrdiff_t k = 0;                                                                        \
    int pairs = 0;                                                                          \
    for (; k + 2 * L <= n; k += 2 * L) {                                                    \
        CK_SQDIST_VEC_PAIR(1)                                                               \
        CK_SQDIST_STOP_EARLY                                                                \
    }                                                                                       \
    CK_SQDIST_VEC_FINISH(T, 1)                                                              \
}

CK_DEFINE_SQDIST_WIDE_BELOW(ck_sqdist_wide_below_double, double, ck_vec_double)
CK_DEFINE_SQDIST_WIDE_BELOW(ck_sqdist_wide_below_float, float, ck_vec_float)

#else
/* Without GCC vector types: the same sums in the same order, one scalar at a time. */
/* The two sums into f, for CK_SQDIST_STOP_EARLY. */
#define CK_SQDIST_SUM_F                                                                     \
    for (l = 0; l < L; l++)                                                                 \
        f[l] = s0[l] + s1[l];

/* One step of the main loop, as CK_SQDIST_VEC_PAIR. */
#define CK_SQDIST_SCALAR_PAIR(T, SUB)                                                       \
    for (l = 0; l < L; l++) {                                                               \
        T d0 = SUB ? a[k + l] - b[k + l] : a[k + l];                                        \
        T d1 = SUB ? a[k + L + l] - b[k + L + l] : a[k + L + l];                            \
        s0[l] += d0 * d0;                                                                   \
        s1[l] += d1 * d1;                                                                   \
    }

/* After the main loop, as CK_SQDIST_VEC_FINISH. */
#define CK_SQDIST_SCALAR_FINISH(T, SUB)                                                     \
    if (k + L <= n) {                                                                       \
        for (l = 0; l < L; l++) {                                                           \
            T d = SUB ? a[k + l] - b[k + l] : a[k + l];                                     \
            s0[l] += d * d;                                                                 \
        }                                                                                   \
        k += L;                                                                             \
    }                                                                                       \
    CK_SQDIST_TAIL(T, SUB)                                                                  \
    for (l = 0; l < L; l++)                                                                 \
        s0[l] += s1[l];                                                                     \
    CK_SQDIST_FOLD(s0)                                                                      \
    return s0[0] + tail;

#define CK_DEFINE_SQDIST_WIDE(NAME, T, SUB)                                                 \
static T NAME(const T* a, const T* b, ptrdiff_t n)                                          \
{                                                                                           \
    enum { L = 64 / sizeof(T) };                                                            \
    T s0[L] = {0}, s1[L] = {0}, tail = 0;                                                   \
    ptrdiff_t k = 0;                                                                        \
    int l;                                                                                  \
    for (; k + 2 * L <= n; k += 2 * L)                                                      \
        CK_SQDIST_SCALAR_PAIR(T, SUB)                                                       \
    CK_SQDIST_SCALAR_FINISH(T, SUB)                                                         \
}

CK_DEFINE_SQDIST_WIDE(ck_sqdist_wide_double, double, 1)
CK_DEFINE_SQDIST_WIDE(ck_sqdist_wide_float, float, 1)
CK_DEFINE_SQDIST_WIDE(ck_sqnorm_wide_double, double, 0)
CK_DEFINE_SQDIST_WIDE(ck_sqnorm_wide_float, float, 0)

/* Stopped early where the sums reach `limit`, as above. */
#define CK_DEFINE_SQDIST_WIDE_BELOW(NAME, T)                                                \
static T NAME(const T* a, const T* b, ptrdiff_t n, T limit)                                 \
{                                                                                           \
    enum { L = 64 / sizeof(T) };                                                            \
    T s0[L] = {0}, s1[L] = {0}, f[L], tail = 0;                                             \
    ptrdiff_t k = 0;                                                                        \
    int l, pairs = 0;                                                                       \
    for (; k + 2 * L <= n; k += 2 * L) {                                                    \
        CK_SQDIST_SCALAR_PAIR(T, 1)                                                         \
        CK_SQDIST_STOP_EARLY                                                                \
    }                                                                                       \
    CK_SQDIST_SCALAR_FINISH(T, 1)                                                           \
}

CK_DEFINE_SQDIST_WIDE_BELOW(ck_sqdist_wide_below_double, double)
CK_DEFINE_SQDIST_WIDE_BELOW(ck_sqdist_wide_below_float, float)
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
