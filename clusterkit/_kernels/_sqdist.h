/* Squared Euclidean distance of two rows with eight interleaved sums over the features.
 *
 * A single running sum waits for each addition to finish before the next; eight independent
 * sums keep the pipeline full and vectorise (two AVX2 or one AVX-512 register), which matters
 * with many features. Lane k sums features k, k + 8, ..., and the lanes are added in a fixed
 * tree, so the result does not depend on the instruction set the CPU supports. From 8
 * features on it rounds differently from the single-sum loop of _dist.pxd (_sqdist); below
 * that every feature goes to the first sum and the two agree exactly.
 *
 * With GCC on x86-64 Linux the function is compiled for AVX-512, AVX2 and the baseline, and
 * the variant for the running CPU is picked at load time; elsewhere it is compiled once.
 */
#ifndef CLUSTERKIT_SQDIST_H
#define CLUSTERKIT_SQDIST_H

#include <stddef.h>

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

#define CK_DEFINE_SQDIST_WIDE(NAME, T)                                                      \
CK_SQDIST_CLONES                                                                            \
static T NAME(const T* a, const T* b, ptrdiff_t n)                                          \
{                                                                                           \
    T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                      \
    ptrdiff_t k = 0;                                                                        \
    for (; k + 8 <= n; k += 8)                                                              \
        for (int l = 0; l < 8; l++) {                                                       \
            T t = a[k + l] - b[k + l];                                                      \
            s[l] += t * t;                                                                  \
        }                                                                                   \
    for (; k < n; k++) {                                                                    \
        T t = a[k] - b[k];                                                                  \
        s[0] += t * t;                                                                      \
    }                                                                                       \
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));               \
}

CK_DEFINE_SQDIST_WIDE(ck_sqdist_wide_double, double)
CK_DEFINE_SQDIST_WIDE(ck_sqdist_wide_float, float)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
